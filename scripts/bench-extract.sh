#!/usr/bin/env bash
# Extraction benchmark: uf2fs extract against the other F2FS extractors, on one
# Android-like image, same machine, same run. A benchmark, not a test: nothing in the
# test suite calls it. Results go to docs/extract-speed.md by hand.
#
# usage: scripts/bench-extract.sh [WORKDIR]     (default /var/tmp/uf2fs-xbench; ~20 GB)
#
# Environment:
#   RUNS=5          timed runs per tool and image (median reported)
#   EXT=/work/ext   where the third-party tools' sources are and get built: OUTSIDE the
#                   repository (nothing of theirs is ever committed). Each source is a
#                   git clone at EXT/NAME (see SOURCES below); a missing one is cloned
#                   from its public URL when the network allows it.
#   DEST=WORKDIR/out  extraction destination (removed and synced before every run)
#   TOOLS="uf2fs f2fs_unpacker imgkit f2fs-extractor dump-dev"   tools to time
#   IMAGES="lz4 plain"  images to time (lz4: compressed; plain: the same tree without)
#   CAT=1           also time `uf2fs cat` of a 256 MiB text file, compressed and not
#   SKIP_BUILD=1    use the tools already built in EXT
#
# Needs (Debian): build-essential cmake autoconf automake libtool pkg-config uuid-dev
#   libselinux1-dev liblz4-dev liblzo2-dev libzstd-dev, cargo, go, python3, git;
#   for the zstd figure of CAT, scripts/kernel-check.sh set up (Linux writes that file:
#   sload.f2fs compresses with lzo and lz4 only).
#
# What it does:
#  1. builds uf2fs (release) and the other tools: f2fs-tools' development tree (its
#     sload.f2fs/dump.f2fs/fsck.f2fs, with lz4 and lzo), f2fs_unpacker (C++, CMake, the
#     Debian codec libraries), ImgKit-Scuti (Rust, cargo), f2fs-extractor (Go);
#  2. writes the seeded tree (scripts/android-tree.py gen: 22,000 files, 2.25 GiB, half
#     text-like) and its manifest;
#  3. makes the images the way AOSP does, each judged by fsck.f2fs -f:
#       lz4.img   mkfs.f2fs -O ro,extra_attr,compression + sload.f2fs -c -a lz4 -L 2 -r
#       lzo.img   the same with -a lzo (correctness only)
#       plain.img mkfs.f2fs -O ro + sload.f2fs (no compression)
#  4. correctness: one extraction per tool and image, its manifest (regular files' sha1
#     and size, symlink targets) against the source tree's;
#  5. timing: page cache warmed (the image read twice), then RUNS rounds; in each round
#     every tool in turn: rm -rf DEST; sync (not timed); the tool (timed); sync (timed
#     apart). Round-robin, so drift in the machine's load hits every tool alike.
#  Prints a Markdown report and keeps it as WORKDIR/results.md.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
export PATH="$PATH:/usr/sbin:/sbin:/usr/local/go/bin"
work=${1:-/var/tmp/uf2fs-xbench}
runs=${RUNS:-5}
ext=${EXT:-/work/ext}
dest=${DEST:-$work/out}
tools=${TOOLS:-uf2fs f2fs_unpacker imgkit f2fs-extractor dump-dev}
images=${IMAGES:-lz4 plain}
mkdir -p "$work" "$ext"
case $ext/ in "$repo"/*) echo "bench-extract: EXT must be outside the repository" >&2; exit 2 ;; esac

log() { printf '== %s\n' "$*" >&2; }
die() { printf 'bench-extract: %s\n' "$*" >&2; exit 1; }

# name  public source  commit measured (development branch heads on 2026-11-25)
SOURCES=(
    "f2fs-tools https://github.com/jaegeuk/f2fs-tools 8b0c58b"
    "f2fs_unpacker https://github.com/blackeangel/f2fs_unpacker e1db6d1"
    "ImgKit-Scuti https://github.com/Kindness-Kismet/ImgKit-Scuti bb18312"
    "f2fs-extractor https://github.com/Sushrut1101/f2fs-extractor 0f3fcaf"
)

source_dir() { # NAME URL COMMIT: EXT/NAME checked out at COMMIT
    local d=$ext/$1
    if [ ! -d "$d/.git" ]; then
        git clone -q "$2" "$d" || die "no source for $1: clone $2 into $d"
    fi
    git -C "$d" checkout -q "$3" || die "$d: no commit $3"
    printf '%s\n' "$d"
}

target=${CARGO_TARGET_DIR:-$repo/target}
uf2fs=$target/release/uf2fs
fsbin=$ext/f2fs-tools-inst/sbin
unpacker=$ext/build-unpacker/f2fs_extract
imgkit=$ext/target-imgkit/release/imgkit_scuti
goext=$ext/bin-f2fs-extractor

build_all() {
    local name url commit d
    (cd "$repo" && cargo build --release --quiet -p uf2fs)
    [ "${SKIP_BUILD:-0}" = 1 ] && return 0
    for s in "${SOURCES[@]}"; do
        read -r name url commit <<<"$s"
        d=$(source_dir "$name" "$url" "$commit")
        log "building $name at $commit"
        case $name in
            f2fs-tools)
                (cd "$d" && ./autogen.sh && ./configure --prefix="$ext/f2fs-tools-inst" &&
                    make -j2 && make install) >"$ext/build-$name.log" 2>&1 ||
                    die "f2fs-tools did not build: see $ext/build-$name.log" ;;
            f2fs_unpacker)
                (cmake -S "$d" -B "$ext/build-unpacker" -DCMAKE_BUILD_TYPE=Release -DF2FS_USE_SYSTEM_LIBS=ON &&
                    cmake --build "$ext/build-unpacker" -j2) >"$ext/build-$name.log" 2>&1 ||
                    die "f2fs_unpacker did not build: see $ext/build-$name.log" ;;
            ImgKit-Scuti)
                (cd "$d" && CARGO_TARGET_DIR=$ext/target-imgkit cargo build --release) >"$ext/build-$name.log" 2>&1 ||
                    die "ImgKit-Scuti did not build: see $ext/build-$name.log" ;;
            f2fs-extractor)
                (cd "$d" && go build -o "$goext" .) >"$ext/build-$name.log" 2>&1 ||
                    die "f2fs-extractor did not build: see $ext/build-$name.log" ;;
        esac
    done
}

# run_tool TOOL IMAGE OUT: extract all of IMAGE into OUT (which does not exist).
run_tool() {
    case $1 in
        uf2fs) "$uf2fs" extract "$2" "$3" ;;
        f2fs_unpacker) "$unpacker" -q "$2" "$3" >/dev/null ;;
        imgkit) "$imgkit" unpack -i "$2" -o "$3" >/dev/null 2>&1 ;;
        f2fs-extractor) "$goext" extract "$2" "$3" >/dev/null ;;
        dump-dev) mkdir "$3" && "$fsbin/dump.f2fs" -r -f -L -o "$3" "$2" >/dev/null ;;
        *) die "unknown tool $1" ;;
    esac
}

# Where TOOL put the tree (ImgKit writes OUT/<image name>/ and OUT/config/).
tree_of() {
    case $1 in
        imgkit) local b; b=$(basename "$2"); printf '%s/%s\n' "$3" "${b%.img}" ;;
        *) printf '%s\n' "$3" ;;
    esac
}

now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mibps() { awk -v n="$1" -v t="$2" 'BEGIN { printf "%.0f", n / 1048576 / t }'; }

make_image() { # NAME MKFS_FEATURES SLOAD_OPTS...
    local name=$1 feat=$2 img=$work/$1.img
    shift 2
    [ -s "$img" ] && [ "$img" -nt "$work/src.manifest" ] && return 0
    log "making $name.img: mkfs.f2fs -O $feat; sload.f2fs $*"
    rm -f "$img"
    truncate -s 3G "$img"
    "$fsbin/mkfs.f2fs" -q -f -O "$feat" "$img" >/dev/null
    "$fsbin/sload.f2fs" -f "$work/src" -t / "$@" "$img" >"$work/sload-$name.log" 2>&1 ||
        die "sload.f2fs failed on $name.img: see $work/sload-$name.log"
    "$fsbin/fsck.f2fs" -f "$img" >"$work/fsck-$name.log" 2>&1 ||
        die "fsck.f2fs -f rejects $name.img: see $work/fsck-$name.log"
}

# check TOOL IMAGE: one extraction, compared with the source manifest; prints
# "ok" or "N of M regular files wrong, ..." and keeps the diff in WORKDIR.
check() {
    local tool=$1 img=$2 name d m
    name=$(basename "$img" .img)
    rm -rf "$dest"
    if ! run_tool "$tool" "$img" "$dest" 2>"$work/check-$tool-$name.err"; then
        echo "failed (exit status; see check-$tool-$name.err)"
        return 0
    fi
    python3 "$here/android-tree.py" manifest "$(tree_of "$tool" "$img" "$dest")" >"$work/check-$tool-$name.manifest"
    d=$work/check-$tool-$name.diff
    diff "$work/src.manifest" "$work/check-$tool-$name.manifest" >"$d" || true
    if [ ! -s "$d" ]; then echo ok; return 0; fi
    m=$(grep -c '^f ' "$work/src.manifest")
    awk -v m="$m" '
        /^< f / { split($0, a, " "); want[a[3]] = 1 }
        /^> f / { split($0, a, " "); got[a[3]] = 1 }
        /^< l / { l++ } /^< d / { dd++ }
        END { w = 0; miss = 0
              for (p in want) { if (p in got) w++; else miss++ }
              printf "%d of %d regular files wrong, %d missing, %d symlinks and %d dirs differ\n", w, m, miss, l + 0, dd + 0 }' "$d"
}

bytes_of_files() { awk '$1 == "f" { n += $4 } END { print n }' "$work/src.manifest"; }

time_image() { # IMAGE: prints "tool median_tool median_tool+sync" lines
    local img=$1 tool i t0 t1 t2
    declare -A tt ts
    cat "$img" >/dev/null
    cat "$img" >/dev/null
    for ((i = 0; i < runs; i++)); do
        for tool in $tools; do
            rm -rf "$dest"
            sync
            t0=$(now)
            run_tool "$tool" "$img" "$dest" || true
            t1=$(now)
            sync
            t2=$(now)
            tt[$tool]+="$(secs "$t0" "$t1") "
            ts[$tool]+="$(secs "$t0" "$t2") "
            log "$(basename "$img") run $((i + 1))/$runs $tool: $(secs "$t0" "$t1") s (+sync $(secs "$t1" "$t2") s)"
        done
    done
    rm -rf "$dest"
    for tool in $tools; do
        printf '%s %s %s %s\n' "$tool" "$(tr ' ' '\n' <<<"${tt[$tool]}" | grep . | median)" \
            "$(tr ' ' '\n' <<<"${ts[$tool]}" | grep . | median)" "${tt[$tool]}"
    done
}

cat_figures() { # big-file read speed through uf2fs cat, compressed and not
    local big=$work/bigput/big.txt sum kind img t i times
    if [ ! -s "$big" ]; then
        mkdir -p "$work/bigput"
        python3 "$here/android-tree.py" text "$big" $((256 << 20))
    fi
    sum=$(sha1sum <"$big" | cut -d' ' -f1)
    for kind in plain lz4 lzo zstd; do
        img=$work/big-$kind.img
        if [ ! -s "$img" ]; then
            rm -f "$img"
            truncate -s 768M "$img"
            case $kind in
                plain) "$fsbin/mkfs.f2fs" -q -f -O ro "$img" >/dev/null
                    "$fsbin/sload.f2fs" -f "$work/bigput" -t / "$img" >/dev/null ;;
                lz4 | lzo) "$fsbin/mkfs.f2fs" -q -f -O ro,extra_attr,compression "$img" >/dev/null
                    "$fsbin/sload.f2fs" -f "$work/bigput" -t / -c -a "$kind" -L 2 -r "$img" >/dev/null ;;
                zstd) # Linux 6.1 writes it: sload.f2fs has no zstd
                    mkfs.f2fs -q -f -O extra_attr,compression "$img" >/dev/null
                    if ! "$here/kernel-check.sh" mount --rw --no-workload --put "$work/bigput" \
                        --opts compress_algorithm=zstd,compress_extension=txt --hash-max 4096 \
                        --timeout 1800 --quiet "$img" >"$work/kernel-zstd.log" 2>&1; then
                        log "zstd image not made (kernel-check.sh: see $work/kernel-zstd.log)"
                        rm -f "$img"
                        continue
                    fi ;;
            esac
            "$fsbin/fsck.f2fs" -f "$img" >"$work/fsck-big-$kind.log" 2>&1 ||
                die "fsck.f2fs -f rejects big-$kind.img"
        fi
        [ "$("$uf2fs" cat "$img" /big.txt | sha1sum | cut -d' ' -f1)" = "$sum" ] ||
            die "uf2fs cat big-$kind.img /big.txt differs from the source"
        cat "$img" >/dev/null
        times=""
        for ((i = 0; i < runs; i++)); do
            t=$(now)
            "$uf2fs" cat "$img" /big.txt >/dev/null
            times+="$(secs "$t" "$(now)")"$'\n'
        done
        t=$(printf '%s' "$times" | median)
        # shellcheck disable=SC2016 # the backquotes are Markdown
        printf '| `uf2fs cat big-%s.img /big.txt` | %s | %s s | %s MiB/s |\n' "$kind" \
            "$(du -k "$img" | cut -f1) KiB" "$t" "$(mibps $((256 << 20)) "$t")"
    done
}

build_all
[ -x "$uf2fs" ] || die "no uf2fs at $uf2fs (set CARGO_TARGET_DIR?)"

if [ ! -s "$work/src.manifest" ]; then
    rm -rf "$work/src"
    python3 "$here/android-tree.py" gen "$work/src"
    python3 "$here/android-tree.py" manifest "$work/src" >"$work/src.manifest"
fi
make_image lz4 ro,extra_attr,compression -c -a lz4 -L 2 -r
make_image lzo ro,extra_attr,compression -c -a lzo -L 2 -r
make_image plain ro

report=$work/results.md
{
    echo "# bench-extract.sh results"
    echo
    echo "uf2fs $(git -C "$repo" rev-parse --short HEAD); $(date -u +%F); $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "tree: $(grep -c '^f ' "$work/src.manifest") regular files, $(bytes_of_files) bytes; $(grep -c '^l ' "$work/src.manifest") symlinks"
    for n in lz4 lzo plain; do
        echo "$n.img: $(du -k "$work/$n.img" | cut -f1) KiB allocated; $("$uf2fs" info "$work/$n.img" | grep -E '^(features|valid blocks):' | tr -s ' ' | paste -sd';')"
    done
    echo
    echo "## Correctness (one extraction each, against the source manifest)"
    echo
    echo "| tool | lz4.img | lzo.img | plain.img |"
    echo "| --- | --- | --- | --- |"
    for tool in $tools; do
        echo "| $tool | $(check "$tool" "$work/lz4.img") | $(check "$tool" "$work/lzo.img") | $(check "$tool" "$work/plain.img") |"
    done
    rm -rf "$dest"
    data=$(bytes_of_files)
    for n in $images; do
        echo
        echo "## Extraction time, $n.img (median of $runs; DEST=$dest)"
        echo
        echo "| tool | median (tool) | MiB/s | median (tool + sync) | MiB/s | runs (tool) |"
        echo "| --- | ---: | ---: | ---: | ---: | --- |"
        time_image "$work/$n.img" | while read -r tool med meds all; do
            echo "| $tool | $med s | $(mibps "$data" "$med") | $meds s | $(mibps "$data" "$meds") | $all |"
        done
    done
    if [ "${CAT:-1}" = 1 ]; then
        echo
        echo "## uf2fs cat of a 256 MiB text file (median of $runs, page cache warm)"
        echo
        echo "| command | image allocated | median | throughput |"
        echo "| --- | ---: | ---: | ---: |"
        cat_figures
    fi
    echo
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$report"
