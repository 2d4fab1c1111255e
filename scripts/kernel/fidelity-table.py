#!/usr/bin/env python3
"""The lab's fidelity table against Linux (docs/waf-lab.md, "Near full: the kernel's
writer model").

usage: fidelity-table.py [--uf2fs BIN] [--seeds N] [--policy P] DIR...

Reads every `*.out` (but those of `--trace` runs) that `scripts/kernel/waf-compare.sh ... --no-lab --result-out
X.res > X.out` left in DIR (the setup line and the kernel's result line; the result
block beside it, `X.res` or `X.res.xz`, tells whether the run was traced and whether
the fill put part of the file in the hot data log, which Linux 6.1 does in some runs;
docs/linux-runs holds such runs), groups the runs by setup and kernel, runs
`uf2fs bench waf` with the same setup for seeds 1..N, and prints one Markdown row per
setup: for each kernel its runs (a split fill marked *) and the median of the runs
without a split, then the lab run with that kernel's GC loop (`--kernel 6.1` or
`--kernel 6.12`; other releases get no lab column): its median and range over the
seeds and its distance to the kernel's median.
"""

import argparse
import json
import lzma
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict

SETUP = re.compile(
    r"setup: (\d+) MiB conventional \+ (\d+) zones of (\d+) MiB, -o ([\d.]+) -Z (\d+); "
    r"file (\d+) MiB; (\d+) MiB of 4 KiB random writes"
)
RESULT = re.compile(r"^Linux (\S+)\s+([\d.]+)\s+1\.00\s")
# Runs with --trace (their result block holds the GC events' `trace` lines, one at
# each of the writer's f2fs_gc calls): the trace slows the guest, so their WAF is not
# the kernel's own. A --kprobe alone at do_garbage_collect records a line a victim and
# leaves the run in.
TRACED = "trace "
TRACED_EVENT = "f2fs_gc_begin:"
HOT = re.compile(r"^status_before\s+- HOT\s+data:.*\s(\d+)$")
# A fill that left more of the file than this in the hot data log split it.
SPLIT_BLOCKS = 1000


def kernel_runs(dirs):
    """{setup: {kernel series: [(waf, split)]}} from the runs' outputs."""
    runs = defaultdict(lambda: defaultdict(list))
    for d in dirs:
        if not os.path.isdir(d):
            sys.exit(f"fidelity-table: {d} is not a directory")
        for name in sorted(os.listdir(d)):
            if not name.endswith(".out"):
                continue
            setup = waf = kernel = None
            with open(os.path.join(d, name), errors="replace") as f:
                for line in f:
                    m = SETUP.search(line)
                    if m:
                        setup = tuple(m.groups())
                    m = RESULT.match(line)
                    if m and waf is None:
                        kernel, waf = m.group(1), float(m.group(2))
            if setup is None or waf is None:
                continue
            split = traced = False
            res = os.path.join(d, name[: -len(".out")] + ".res")
            if not os.path.exists(res) and os.path.exists(res + ".xz"):
                res += ".xz"
            if os.path.exists(res):
                opener = lzma.open if res.endswith(".xz") else open
                with opener(res, "rt", errors="replace") as f:
                    for line in f:
                        traced = traced or (line.startswith(TRACED) and TRACED_EVENT in line)
                        m = HOT.match(line.rstrip())
                        if m and int(m.group(1)) > SPLIT_BLOCKS:
                            split = True
            if traced:
                continue
            series = ".".join(kernel.split(".")[:2])
            runs[setup][series].append((waf, split))
    return runs


# Kernel series the lab has a GC loop for (`uf2fs bench waf --kernel`).
LOOPS = ("6.1", "6.12")


def lab(binary, setup, seed, policy, loop):
    conv, zones, zone, ovp, rsvd, file_mib, io_mib = setup
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        cmd = [binary, "bench", "waf", "--conv-size", f"{conv}M", "--zone-size", f"{zone}M",
               "--zones", zones, "--overprovision", ovp, "--reserved-sections", rsvd,
               "--file-size", f"{file_mib}M", "--io-size", f"{io_mib}M", "--policy", policy,
               "--jobs", "1", "--seed", str(seed), "--kernel", loop, "--json", out]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(out):
            sys.exit(f"fidelity-table: {' '.join(cmd)} failed: {r.stderr.strip()}")
        with open(out) as f:
            return json.load(f)[0]["waf"]


def pct(a, b):
    return f"{100 * (a / b - 1):+.1f}%" if b else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", metavar="DIR")
    ap.add_argument("--uf2fs", default="target/release/uf2fs")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--policy", default="greedy")
    a = ap.parse_args()
    runs = kernel_runs(a.dirs)
    if not runs:
        sys.exit("fidelity-table: no waf-compare.sh outputs (*.out) in " + ", ".join(a.dirs))
    series = sorted({s for v in runs.values() for s in v}, key=lambda s: tuple(map(int, s.split("."))))
    head = ["zones", "file", "IO"]
    for s in series:
        head += [f"Linux {s} runs (* split fill)", f"{s} median (unsplit)"]
        if s in LOOPS:
            head += [f"lab, {s} loop, median of {a.seeds} seeds (range)", f"vs {s}"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for setup in sorted(runs, key=lambda s: (int(s[1]), int(s[5]))):
        row = [setup[1], f"{setup[5]}M", f"{setup[6]}M"]
        for s in series:
            rs = runs[setup].get(s, [])
            unsplit = [w for w, split in rs if not split]
            med = statistics.median(unsplit) if unsplit else None
            row += [", ".join(f"{w:.2f}{'*' if split else ''}" for w, split in rs) or "-",
                    f"{med:.2f}" if med else "-"]
            if s in LOOPS:
                wafs = [lab(a.uf2fs, setup, seed, a.policy, s) for seed in range(1, a.seeds + 1)]
                lm = statistics.median(wafs)
                row += [f"{lm:.2f} ({min(wafs):.2f}-{max(wafs):.2f})", pct(lm, med) if med else "-"]
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
