#!/usr/bin/env bash
# Checks the Debian package as a user meets it (run as root, on a machine where it may be
# installed): `dpkg -i`, then with the installed files only: `uf2fs mkfs` makes an image,
# `mount -t fuse.uf2fs` mounts it through the packaged mount.fuse.uf2fs, a file is written
# and read back, `umount`, fsck.f2fs finds the image clean, a second mount reads the file,
# `man uf2fs` and `man uf2fs-mount` render, and the completions are where bash, zsh and fish
# look. The package is removed again at the end (`dpkg -r`), pass or fail.
#
#   scripts/deb-check.sh target/debian/uf2fs_*.deb
#
# Needs: fuse3 (the package's dependency), f2fs-tools (fsck.f2fs), man-db.
set -euo pipefail

deb=${1:?usage: scripts/deb-check.sh PACKAGE.deb}
if [ "$(id -u)" != 0 ]; then
    echo "scripts/deb-check.sh: installs a package: run it as root" >&2
    exit 1
fi
if dpkg-query -W -f='${db:Status-Status}' uf2fs 2>/dev/null | grep -qx installed; then
    echo "scripts/deb-check.sh: a uf2fs package is installed already; remove it first (dpkg -r uf2fs)" >&2
    exit 1
fi

work=$(mktemp -d /tmp/uf2fs-deb-check.XXXXXX)
mnt="$work/mnt"
cleanup() {
    if mountpoint -q "$mnt" 2>/dev/null; then umount "$mnt" || true; fi
    dpkg -r uf2fs >/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

dpkg -i "$deb"
# Only what the package installed from here on: no build tree on PATH.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
test "$(readlink -f /usr/sbin/mount.fuse.uf2fs)" = "$(readlink -f /usr/bin/uf2fs)"

img="$work/disk.img"
mkdir "$mnt"
uf2fs mkfs -q --size 256M -l debcheck "$img"
mount -t fuse.uf2fs "$img" "$mnt" -o cp_interval=0
# (The mount table says fuse.f2fs, uf2fs's default subtype, whichever way it was mounted.)
grep -q " $mnt fuse.f2fs " /proc/mounts || { echo "not a uf2fs mount:" >&2; grep " $mnt " /proc/mounts >&2; exit 1; }
head -c 3000000 /dev/urandom > "$work/data"
cp "$work/data" "$mnt/data"
mkdir "$mnt/dir"
echo hello > "$mnt/dir/hello"
cmp "$work/data" "$mnt/data"
umount "$mnt"
# umount returns when the kernel lets go; the uf2fs process then writes the final
# checkpoint and drops its lock on the image (flock): wait for that before fsck.
flock -w 30 "$img" true
fsck.f2fs -f "$img" > "$work/fsck.log" 2>&1 || { cat "$work/fsck.log" >&2; exit 1; }
# Read back through a second mount, read-only this time, as an fstab line would say it.
mount -t fuse.uf2fs "$img" "$mnt" -o ro,noauto
cmp "$work/data" "$mnt/data"
test "$(cat "$mnt/dir/hello")" = hello
umount "$mnt"
flock -w 30 "$img" true

# Man pages, rendered without a pager (as a script sees them).
MANPAGER=cat MANWIDTH=80 man uf2fs > "$work/man.txt"
grep -q 'uf2fs-mount' "$work/man.txt"
MANPAGER=cat MANWIDTH=80 man uf2fs-mount | grep -q -- '-o <OPTIONS>'
head -n 5 "$work/man.txt"
for f in /usr/share/bash-completion/completions/uf2fs /usr/share/zsh/vendor-completions/_uf2fs \
    /usr/share/fish/vendor_completions.d/uf2fs.fish; do
    test -s "$f"
done
bash -c 'source /usr/share/bash-completion/completions/uf2fs && complete -p uf2fs' >/dev/null
echo "deb-check: installed, mounted with mount -t fuse.uf2fs, wrote and read back, fsck clean, man pages and completions in place"
