# Guest workload of scripts/kernel/xattr-check.sh (busybox sh, run from the mount point
# with set -e): Linux F2FS changes the extended attributes uf2fs wrote — replaces a
# value, removes the one that needed the xattr node, grows a directory's list into a
# node, removes an ACL and a symlink's attribute — and must refuse to add anything to
# the list uf2fs filled to the last byte.
long=$(awk 'BEGIN { s = ""; while (length(s) < 2000) s = s "kernel-0123456789"; print s }')

setfattr -n user.small -v kernel-replaced f
setfattr -x user.big f

if setfattr -n user.more -v x full 2>/dev/null; then
    echo "the kernel added an attribute to a list uf2fs filled exactly" >&2
    exit 1
fi
setfattr -x user.c full
setfattr -n user.after -v kernel full

setfattr -n user.grown -v "$long" d
setfattr -x system.posix_acl_default d

setfattr -h -x trusted.l l

echo new >newf
setfattr -n user.k -v kernel newf
setfattr -n trusted.k -v "$long" newf
