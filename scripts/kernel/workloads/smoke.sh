# Default workload of `kernel-check.sh mount --rw` (busybox sh, run from the mount
# point with set -e): a little of everything, small enough for a TCG guest.
mkdir -p kc-smoke/dir/sub
echo "hello from the kernel" >kc-smoke/hello.txt
printf 'x%.0s' $(seq 1 3000) >kc-smoke/inline-or-not.txt
dd if=/dev/urandom of=kc-smoke/random.bin bs=4096 count=256 2>/dev/null
seq 1 20000 >kc-smoke/dir/sub/numbers.txt
ln -s ../hello.txt kc-smoke/dir/link-to-hello
ln kc-smoke/hello.txt kc-smoke/dir/hardlink-to-hello
for i in $(seq 1 40); do echo "$i" >kc-smoke/dir/f$i; done
rm kc-smoke/dir/f7 kc-smoke/dir/f8
mv kc-smoke/dir/f9 kc-smoke/dir/sub/renamed
truncate -s 10M kc-smoke/sparse.bin
echo tail >>kc-smoke/sparse.bin
chmod 0750 kc-smoke/dir
sync
