# Workload for an image whose casefolded /cf got names through a uf2fs mount (busybox
# sh, run by kernel-check.sh --rw from the mount point with set -e): Linux must find
# each by another case and refuse a folded duplicate. Names in printf octal escapes.
# The uf2fs side: docs/casefold.md ("Tests").
while read -r probe; do
    p=$(printf "$probe")
    [ -e "$p" ] || { echo "Linux does not find $probe"; exit 1; }
    echo "found $probe"
done <<'PROBES'
cf/NEU-STRASSE
cf/neu-stra\303\237e
cf/\307\206-dir/innen.txt
cf/\307\204-DIR/INNEN.TXT
cf/HART-LINK
cf/sym-link
cf/uf-file-0
cf/UF-FILE-199
cf/umbenannt-i\314\207
PROBES
for gone in cf/UF-File-5 cf/UF-File-6; do
    if [ -e "$gone" ]; then echo "$gone is still there"; exit 1; fi
done
if mkdir cf/neu-strasse 2>/dev/null; then echo "mkdir cf/neu-strasse succeeded"; exit 1; fi
[ "$(cat cf/NEU-STRASSE)" = new ]
# Linux's own additions next to uf2fs's, found by uf2fs afterwards.
echo linux >"cf/Von-Linux"
