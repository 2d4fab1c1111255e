# Workload of the casefold fixture (crates/cli/tests/fixtures/kernel/casefold.*), busybox
# sh, run by kernel-check.sh from the mount point with set -e, on a volume made with
# `mkfs.f2fs -O casefold -C utf8`. Needs /job/put/casefold-flag (scripts/kernel/tools,
# put in by make-fixtures.sh): busybox's chattr has no +F.
#
# Makes /cf casefolded and fills it with names whose folding matters (ß, ǅ, İ, the
# Kelvin and Angstrom signs, final sigma, NFD and NFC forms, marks in either order, a
# default-ignorable ZWSP and CGJ, Hangul, a name that is not UTF-8) and 300 more so
# that the directory has hash levels; /cf/Sub inherits the flag; /plain is not casefolded. Then it probes lookups by other
# spellings and prints "probe found|missing NAME" lines (NAME in octal escapes, as
# printf takes them): what Linux finds is what uf2fs must find.
cf=/job/put/casefold-flag
rm -f casefold-flag
mkdir cf plain
"$cf" cf
# name content (octal escapes)
while read -r name; do
    n=$(printf "$name")
    printf '%s\n' "$name" >"cf/$n"
done <<'NAMES'
Stra\303\237e
\307\205
\304\260stanbul
ReadMe.TXT
cafe\314\201
\342\204\252-kelvin
\342\204\253ngstr\303\266m
zero\342\200\213width
\316\243\316\212\316\243\316\245\316\246\316\237\316\243
\355\225\234\352\265\255\354\226\264
bad-\377-name
Mark-a\314\210\314\243
cgj-a\314\210\315\217\314\243
NAMES
mkdir cf/Sub
echo inner >cf/Sub/Inner.File
i=0
while [ $i -lt 300 ]; do
    : >"cf/File-$i"
    i=$((i + 1))
done
rm cf/File-13
mv cf/File-14 cf/Moved-14
echo lower >plain/Stra$(printf '\303\237')e
echo upper >plain/STRASSE
"$cf" -p cf cf/Sub plain
# Duplicates by folded name are refused.
if mkdir cf/STRASSE 2>/dev/null; then echo "mkdir cf/STRASSE succeeded"; exit 1; fi
if ln cf/ReadMe.TXT cf/readme.txt 2>/dev/null; then echo "ln to readme.txt succeeded"; exit 1; fi
while read -r probe; do
    if [ -e "$(printf "$probe")" ]; then echo "probe found $probe"; else echo "probe missing $probe"; fi
done <<'PROBES'
cf/STRASSE
cf/strasse
cf/Stra\303\237e
cf/\307\204
cf/\307\206
cf/i\314\207stanbul
cf/I\314\207STANBUL
cf/istanbul
cf/readme.txt
cf/README.TXT
cf/caf\303\251
cf/CAF\303\211
cf/k-kelvin
cf/K-KELVIN
cf/\303\245ngstr\303\266m
cf/A\314\212NGSTR\303\226M
cf/zerowidth
cf/ZEROWIDTH
cf/zero\342\200\214width
cf/\317\203\316\257\317\203\317\205\317\206\316\277\317\202
cf/\341\204\222\341\205\241\341\206\253\352\265\255\354\226\264
cf/bad-\377-name
cf/BAD-\377-NAME
cf/mark-A\314\243\314\210
cf/MARK-A\314\210\314\243
cf/CGJ-A\314\210\314\243
cf/CGJ-A\314\210\342\200\213\314\243
cf/sub/inner.file
cf/SUB/INNER.FILE
cf/file-7
cf/FILE-299
cf/file-13
cf/moved-14
cf/file-14
plain/strasse
plain/STRASSE
plain/Stra\303\237e
PROBES
