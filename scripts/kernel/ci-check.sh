#!/usr/bin/env bash
# The kernel check CI runs, in one boot of Linux: scripts/kernel/written-by-uf2fs.sh
# (both feature sets), packed-by-uf2fs.sh --files 150 --only ro-zstd-256 and
# compressed-by-mount.sh run at once, each preparing its images on the host; their
# `kernel-check.sh mount` runs queue in one directory (UF2FS_KC_BATCH) and
# `kernel-check.sh batch` boots once when all four images wait, the guest checking them
# one after the other; then each script makes its own host-side checks of what Linux
# read and wrote (fsck.f2fs, readback). Each script alone does the same with a boot of
# its own per image. A script that fails before queueing its image does not hold the
# others up (the batch boots for those waiting once it has exited).
#
# usage: scripts/kernel/ci-check.sh   (as root, after `scripts/kernel-check.sh setup` and
#        `cargo build --release -p uf2fs -p uf2fs-testkit`; env as the three scripts')
# Prints each script's log in turn; exits 1 when any failed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
q=$(mktemp -d /var/tmp/uf2fs-kcbatch.XXXXXX)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$q"
}
trap cleanup EXIT
export UF2FS_KC_BATCH=$q/queue
mkdir "$UF2FS_KC_BATCH"

names=(written packed compressed)
"$here/written-by-uf2fs.sh" >"$q/written.log" 2>&1 &
pids+=($!)
"$here/packed-by-uf2fs.sh" --files 150 --only ro-zstd-256 >"$q/packed.log" 2>&1 &
pids+=($!)
"$here/compressed-by-mount.sh" >"$q/compressed.log" 2>&1 &
pids+=($!)
# Four images: written-by's two feature sets, packed-by's one, compressed-by's one.
"$here/../kernel-check.sh" batch --jobs 4 --watch "${pids[0]}" --watch "${pids[1]}" --watch "${pids[2]}" \
    "$UF2FS_KC_BATCH" >"$q/batch.log" 2>&1 &
server=$!

failed=()
for i in "${!pids[@]}"; do
    rc=0
    wait "${pids[$i]}" || rc=$?
    echo "=== ${names[$i]} (exit $rc)"
    cat "$q/${names[$i]}.log"
    [ "$rc" = 0 ] || failed+=("${names[$i]}")
done
pids=()
wait "$server" || failed+=("kernel-check.sh batch")
echo "=== kernel-check.sh batch"
cat "$q/batch.log"
if [ ${#failed[@]} -gt 0 ]; then
    echo "ci-check: FAIL: ${failed[*]}" >&2
    exit 1
fi
echo "ci-check: PASS"
