#!/bin/bash
# Submits a `uf2fs bench` sweep to Slurm: an array of N shards and the merge as a job
# that runs when all of them succeeded. Prints the two job ids.
#
#   scripts/slurm/submit.sh N OUTDIR BENCH [OPTIONS...]
#   e.g. scripts/slurm/submit.sh 24 /shared/sweep waf --preset seed --workload uniform,zipf
#
# Slurm's own variables choose the rest, e.g. SBATCH_PARTITION, SBATCH_ACCOUNT,
# SBATCH_TIMELIMIT; CPUS_PER_TASK (default 1) is each shard's --cpus-per-task. The
# jobs' output: OUTDIR/uf2fs-sweep-JOBID_TASK.out and OUTDIR/uf2fs-merge-JOBID.out;
# the merged JSON: OUTDIR/merged.json. OUTDIR must be on a file system every node
# sees. See docs/sweeps.md.
set -euo pipefail

if [ $# -lt 3 ]; then
    sed -n '2,12p' "$0" >&2
    exit 2
fi
n=$1
out=$2
shift 2
case $n in
'' | *[!0-9]* | 0) echo "N must be a number of shards (1 or more), not '$n'" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
export SWEEP_SHARDS=$n SWEEP_FIRST_TASK=0
array=$(sbatch --parsable --array="0-$((n - 1))" --cpus-per-task="${CPUS_PER_TASK:-1}" \
    --output="$out/%x-%A_%a.out" "$here/sweep.sbatch" "$out" "$@")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterok:$array" --output="$out/%x-%j.out" \
    "$here/merge.sbatch" "$out" "$n")
merge=${merge%%;*}
echo "array $array merge $merge"
