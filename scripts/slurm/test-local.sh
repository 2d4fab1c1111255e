#!/bin/bash
# The Slurm path of docs/sweeps.md, for real, on this machine: starts a one-node Slurm
# from Debian's packages (munged, slurmctld, slurmd; installed with apt-get when
# missing), submits small `uf2fs bench waf` and `bench latency` sweeps with
# scripts/slurm/submit.sh (a job array of 3 shards, the merge a job depending on it),
# waits for them, and compares each merged JSON with the same run on one machine
# (scripts/waf-json-diff.py: equal but for the timings). Exits non-zero on any
# difference, failed job or time-out; stops the daemons it started in every case.
#
#   scripts/slurm/test-local.sh        (as root; UF2FS=path/to/uf2fs, else target/release/uf2fs)
#
# Everything lives in a fresh directory under /tmp (the key, the sockets, the
# configuration, the state, the logs): no file under /etc is written and no system
# service is started. The daemons listen on 127.0.0.1 ports SLURM_TEST_PORT and the
# next (default 16817). About 30 s, most of it Slurm's scheduling cycles.
set -euo pipefail

cd "$(dirname "$0")/../.."
repo=$PWD
port=${SLURM_TEST_PORT:-16817}
wait_s=${SLURM_TEST_TIMEOUT:-300}
start=$SECONDS

if [ "$(id -u)" != 0 ]; then
    echo "test-local.sh runs the Slurm daemons as root: run it as root" >&2
    exit 2
fi
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null ||
    ! command -v munged >/dev/null; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge
fi
uf2fs=${UF2FS:-$repo/target/release/uf2fs}
if [ ! -x "$uf2fs" ]; then
    cargo build --release -p uf2fs
fi
export UF2FS=$uf2fs

dir=$(mktemp -d /tmp/uf2fs-slurm.XXXXXX)
chmod 755 "$dir"
mkdir -p "$dir/munge" "$dir/run" "$dir/state" "$dir/spool" "$dir/log" "$dir/sweeps"
chmod 700 "$dir/munge"
export SLURM_CONF=$dir/slurm.conf
ok=0

stop() {
    # The daemons this script started, by the pids they wrote.
    scontrol shutdown >/dev/null 2>&1 || true
    for f in "$dir/slurmctld.pid" "$dir/slurmd.pid" "$dir/munge/munged.pid"; do
        [ -s "$f" ] || continue
        pid=$(cat "$f")
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            # slurmctld and slurmd end on their own after `scontrol shutdown`.
            [ "$f" = "$dir/munge/munged.pid" ] && kill "$pid" 2>/dev/null
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
    done
    if [ "$ok" != 1 ]; then
        echo "--- logs ($dir) ---" >&2
        tail -n 30 "$dir"/log/*.log "$dir"/sweeps/*/*.out >&2 2>/dev/null || true
    fi
    rm -rf "$dir"
}
trap stop EXIT

# munge: a key of its own, its socket where slurm.conf says.
mungekey --create --keyfile="$dir/munge/munge.key"
munged --socket="$dir/run/munge.sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed"

# One node, localhost, 2 CPUs: no cgroups (proctrack/linuxproc, task/none), no
# accounting database. config_overrides: the node counts as configured even where the
# machine has fewer CPUs.
cat >"$SLURM_CONF" <<EOC
ClusterName=uf2fs-test
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/run/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
PlugStackConfig=$dir/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SlurmdParameters=config_overrides
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOC
: >"$dir/plugstack.conf"

slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF" -N localhost
for _ in $(seq 60); do
    state=$(sinfo -h -n localhost -o %t 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.5
done
if [ "$state" != idle ]; then
    echo "the Slurm node did not come up (state '$state')" >&2
    exit 1
fi
echo "slurm up after $((SECONDS - start)) s"

# The sweeps: 6 waf runs and 6 latency runs, each in 3 shards (tiny volumes: seconds).
waf=(waf --zones 64 --zone-size 2M --conv-size 16M --file-size 80M --io-size 40M --overprovision 10
    --policy greedy,prefer-data-v2,default --workload uniform,zipf)
latency=(latency --file-size 512M --io-size 16M --rate 50)
declare -A merge_job
for name in waf latency; do
    declare -n args=$name
    ids=$("$repo/scripts/slurm/submit.sh" 3 "$dir/sweeps/$name" "${args[@]}")
    echo "$name: $ids"
    merge_job[$name]=${ids##* }
    "$uf2fs" bench "${args[@]}" --json "$dir/sweeps/$name-local.json" >/dev/null
done

# Wait until no job is left, failing early when one fails.
deadline=$((SECONDS + wait_s))
while [ -n "$(squeue -h -o %i)" ]; do
    if squeue -h -o %r | grep -q DependencyNeverSatisfied; then
        echo "a shard failed: its merge can never run" >&2
        exit 1
    fi
    if [ $SECONDS -gt $deadline ]; then
        echo "the sweeps did not end within $wait_s s" >&2
        squeue >&2
        exit 1
    fi
    sleep 1
done

status=0
for name in waf latency; do
    job=${merge_job[$name]}
    state=$(scontrol show job "$job" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    if [ "$state" != COMPLETED ]; then
        echo "$name: merge job $job ended $state" >&2
        status=1
        continue
    fi
    python3 "$repo/scripts/waf-json-diff.py" "$dir/sweeps/$name-local.json" "$dir/sweeps/$name/merged.json" || status=1
done
if [ "$status" = 0 ]; then
    ok=1
    echo "slurm sweeps: merged == local for waf and latency in $((SECONDS - start)) s"
fi
exit "$status"
