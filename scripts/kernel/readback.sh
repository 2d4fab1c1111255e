#!/usr/bin/env bash
# Reads an image back with uf2fs and compares it with the manifest the kernel wrote of
# it (kernel-check.sh mount --manifest-out): `uf2fs ls -lRa` (type, mode, links, owner,
# size, symlink target), `uf2fs cat | sha256sum` (every file the manifest hashes) and
# `uf2fs extract` (type, mode, owner, size, mtime, contents, chunk digests, targets,
# xattrs of the extracted tree).
#
# usage: scripts/kernel/readback.sh [--uf2fs BIN] IMG MANIFEST
# Prints one line per difference and exits 1 when there is any; 0 when all agree.
set -euo pipefail

uf2fs=${UF2FS:-$(cd "$(dirname "$0")/../.." && pwd)/target/release/uf2fs}
if [ "${1:-}" = --uf2fs ]; then uf2fs=$2; shift 2; fi
[ $# = 2 ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
img=$1 manifest=$2
[ -x "$uf2fs" ] || { echo "readback: no uf2fs binary at $uf2fs (cargo build --release -p uf2fs)" >&2; exit 2; }

tmp=$(mktemp -d /var/tmp/uf2fs-readback.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# -a: names need not be UTF-8 (the casefold fixture has one that is not).
grep -av '^#' "$manifest" | grep -a . >"$tmp/want" || true

# Compares the fields named in $3 (numbers, space-separated) of manifest $1 (expected)
# and $2 (what uf2fs shows), prefixing differences with $4.
compare() {
    awk -F'\t' -v fields="$3" -v what="$4" '
        BEGIN { split("path type mode nlink uid gid size mtime sha256 target xattrs chunks", name, " ")
                nf = split(fields, fl, " ") }
        FNR == NR { want[$1] = $0; order[++n] = $1; next }
        { got[$1] = $0 }
        END {
            for (i = 1; i <= n; i++) {
                p = order[i]
                if (!(p in got)) { print what ": " p ": missing"; continue }
                split(want[p], w, "\t"); split(got[p], g, "\t")
                for (j = 1; j <= nf; j++) { f = fl[j]
                    if (w[f] != "-" && w[f] != g[f])
                        print what ": " p ": " name[f] " is " g[f] ", expected " w[f] }
            }
            for (p in got) if (!(p in want)) print what ": " p ": not in the manifest"
        }' "$1" "$2"
}

{
# 1. ls -lRa -> manifest fields 1-7 and 10.
"$uf2fs" ls -lRa "$img" >"$tmp/ls" 2>"$tmp/ls.err" || { echo "ls: uf2fs ls -lRa failed: $(cat "$tmp/ls.err")"; }
awk '
    function perm(s,   m, i, c, bits) {
        m = 0; bits = "rwxrwxrwx"
        for (i = 2; i <= 10; i++) { c = substr(s, i, 1)
            if (c != "-" && c != "S" && c != "T") m += 2 ^ (10 - i) }
        c = substr(s, 4, 1); if (c == "s" || c == "S") m += 2048
        c = substr(s, 7, 1); if (c == "s" || c == "S") m += 1024
        c = substr(s, 10, 1); if (c == "t" || c == "T") m += 512
        return sprintf("%04o", m)
    }
    /^\/.*:$/ { dir = substr($0, 1, length($0) - 1); next }
    NF < 8 { next }
    {
        t = substr($1, 1, 1); if (t == "-") t = "f"
        line = $0; for (i = 1; i <= 7; i++) sub(/^[^ ]+ +/, "", line)
        name = line; target = "-"
        if (t == "l") { k = index(line, " -> "); name = substr(line, 1, k - 1); target = substr(line, k + 4) }
        if (name == "..") next
        if (name == ".") path = dir; else path = (dir == "/" ? "" : dir) "/" name
        printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t-\t-\t%s\t-\t-\n", path, t, perm($1), $2, $3, $4, $5, target
    }' "$tmp/ls" | sort -u >"$tmp/from-ls"
compare "$tmp/want" "$tmp/from-ls" "2 3 4 5 6 7 10" ls

# 2. cat | sha256sum for every hashed file.
awk -F'\t' '$2 == "f" && $9 != "-" { print $1 "\t" $9 }' "$tmp/want" | while IFS=$'\t' read -r p sha; do
    got=$("$uf2fs" cat "$img" "$p" 2>"$tmp/cat.err" | sha256sum | cut -d' ' -f1) || true
    if [ -s "$tmp/cat.err" ]; then echo "cat: $p: $(cat "$tmp/cat.err")"; continue; fi
    [ "$got" = "$sha" ] || echo "cat: $p: sha256 is $got, expected $sha"
done

# 3. extract the whole tree and describe it as the guest does.
if "$uf2fs" extract "$img" "$tmp/x" 2>"$tmp/x.err"; then
    chunks_of() { # path -> "off:len:sha,..." for the ranges the manifest digests
        awk -F'\t' -v p="$1" '$1 == p { print $12 }' "$tmp/want" | tr ',' '\n' | while IFS=: read -r off len _; do
            case $off in *[!0-9]* | "") continue ;; esac
            printf '%s:%s:%s,' "$off" "$len" \
                "$(dd if="$tmp/x$1" bs=4096 skip=$((off / 4096)) count=$((len / 4096)) 2>/dev/null | sha256sum | cut -d' ' -f1)"
        done | sed 's/,$//'
    }
    (cd "$tmp/x" && find . -mindepth 1 | sed 's/^\.//' | LC_ALL=C sort) >"$tmp/paths"
    { echo /; cat "$tmp/paths"; } | while IFS= read -r p; do
        f="$tmp/x$p"
        read -r hex nlink uid gid size mtime < <(stat -c '%f %h %u %g %s %Y' "$f")
        mode=$((16#$hex))
        case $((mode & 8#170000)) in
            $((8#100000))) t=f ;; $((8#040000))) t=d ;; $((8#120000))) t=l ;;
            $((8#020000))) t=c ;; $((8#060000))) t=b ;; $((8#010000))) t=p ;; *) t=s ;;
        esac
        sha=- target=- chunks=-
        if [ $t = f ]; then
            sha=$(sha256sum <"$f" | cut -d' ' -f1)
            chunks=$(chunks_of "$p"); [ -n "$chunks" ] || chunks=-
        fi
        [ $t = l ] && target=$(readlink "$f")
        xattrs=$(getfattr -h -d -m - -e hex "$f" 2>/dev/null | grep -v '^#' | grep . | LC_ALL=C sort | tr '\n' ',' | sed 's/,$//' || true)
        [ -n "$xattrs" ] || xattrs=-
        [ $t = d ] && size=-
        printf '%s\t%s\t%04o\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
            "$p" $t $((mode & 8#7777)) "$nlink" "$uid" "$gid" "$size" "$mtime" "$sha" "$target" "$xattrs" "$chunks"
    done >"$tmp/from-extract"
    # Directory sizes are the host's; sha256 is compared only where the guest hashed.
    awk -F'\t' -v OFS='\t' '$2 == "d" { $7 = "-" } { print }' "$tmp/want" >"$tmp/want-x"
    compare "$tmp/want-x" "$tmp/from-extract" "2 3 5 6 7 8 9 10 11 12" extract
else
    echo "extract: uf2fs extract failed: $(cat "$tmp/x.err")"
fi
} >"$tmp/diffs"

if [ -s "$tmp/diffs" ]; then
    cat "$tmp/diffs"
    echo "readback: $(wc -l <"$tmp/diffs") difference(s) between uf2fs and the kernel's manifest"
    exit 1
fi
echo "readback: uf2fs ls -lRa, cat and extract agree with the kernel on $(wc -l <"$tmp/want") entries"
