#!/usr/bin/env python3
"""Linux's foreground GC passes and the lab's, side by side (docs/waf-lab.md, "Near
full: Linux 6.12's passes at 96.6% of df").

usage: gc-passes.py [--top N] FILE...

Each FILE is either the result block of a `scripts/kernel/waf-compare.sh --trace
--result-out X.res` run (plain, or `X.res.xz`) (the `trace` lines of the kernel's `f2fs_gc_begin`,
`f2fs_get_victim`, `f2fs_write_checkpoint` and `f2fs_gc_end` events) or the `--json`
of `uf2fs bench waf` (its `gc_passes`, `gc_pass_free`, `gc_pass_dirty` and
`gc_pass_warm_short`/`gc_pass_cold_short`, one block per run). For each it prints:

- the passes (calls of `f2fs_gc` but the GC thread's; the lab's foreground passes) by
  victims taken and checkpoints written, the N most frequent (the lab's and this
  script's highest bin, 8, stands for 8 or more);
- the passes by free sections beyond the reserved ones when they began;
- for the lab the user pages GC's moves wrote (not writeback) per data victim, and
  for the kernel, with the kprobe below, the drop of the dirty data count from a
  pass that took one victim to the next pass's start: what a victim cleaned;
- for the kernel also who ran them (the job's writer, the flusher `kworker`, the GC
  thread), the valid blocks of its victims, and the dirty data pages F2FS counted
  at each `--sample` or `--dirty-sample` (debugfs `datas`);
- with the kprobe of `waf-compare.sh --kprobe` at `f2fs_gc` (fields `dirty_data`,
  `warm_seg`, `warm_off`, `cold_seg`, `cold_off`; docs/waf-lab.md has the
  definition for Debian's 6.12): the dirty data pages at the passes' starts and how
  many began with the warm or the cold data log's current section (blocks past its
  write position) short of them; the lab's JSON has the same, its dirty pages in
  bins of 64 and its logs' room as the free-section rule counts it (blocks neither
  valid at the last checkpoint nor written since).
"""

import argparse
import json
import lzma
import re
import statistics
import sys
from collections import Counter

# The highest bin of victims or checkpoints per pass (uf2fs_core::PASS_WORK_BINS - 1)
# and of free sections (PASS_FREE_BINS - 1).
WORK_MAX = 8
FREE_MAX = 16

BEGIN = re.compile(r"f2fs_gc_begin: .*free_sec:(\d+), free_seg:\d+, rsv_seg:(\d+), prefree_seg:(\d+)")
VICTIM = re.compile(r"f2fs_get_victim: .*cost = (\d+)")
SEGS_PER_SEC = re.compile(r"Segments per section = (\d+)")
# A kprobe event at f2fs_gc's entry (the probe sits past the entry's endbr64: +0x4).
KPROBE_AT_GC = re.compile(r"\(f2fs_gc\+0x[0-9a-f]+/0x[0-9a-f]+ \[f2fs\]\)")
KPROBE_FIELD = re.compile(r"(\w+)=(-?\d+)")
BLOCKS_PER_SEG = 512


def who(task):
    """The writer, the flusher or the GC thread, from the trace's task name."""
    if task.startswith("kworker"):
        return "flusher"
    if task.startswith("f2fs_gc-"):
        return "gc thread"
    return "writer"


def kernel(path):
    """Passes of a traced kernel run: Counter((victims, checkpoints)), Counter(free
    beyond reserved), Counter(context), victim costs, dirty samples."""
    segs_per_sec = 1
    work, free, ctx = Counter(), Counter(), Counter()
    costs, dirty = [], []
    starts = []
    open_passes = {}
    with open_text(path) as f:
        for line in f:
            m = SEGS_PER_SEC.search(line)
            if m:
                segs_per_sec = int(m.group(1))
            if line.startswith("dirty "):
                m = re.search(r"- datas: (\d+)", line)
                if m:
                    dirty.append(int(m.group(1)))
                continue
            if line.startswith("datas "):
                parts = line.split()
                if len(parts) == 3 and parts[2].isdigit():
                    dirty.append(int(parts[2]))
                continue
            if not line.startswith("trace "):
                continue
            fields = line.split()
            task = fields[1]
            m = KPROBE_AT_GC.search(line)
            if m:
                f = dict((k, int(v)) for k, v in KPROBE_FIELD.findall(line[m.end():]))
                if "dirty_data" in f:
                    # Victims are counted to the latest start (the guest has one CPU).
                    starts.append([task, f, segs_per_sec, 0])
                continue
            if "f2fs_gc_begin:" in line:
                m = BEGIN.search(line)
                if m:
                    reserved = int(m.group(2)) // segs_per_sec
                    open_passes[task] = [0, 0, max(0, int(m.group(1)) - reserved)]
            elif "f2fs_get_victim:" in line and task in open_passes:
                open_passes[task][0] += 1
                if starts:
                    starts[-1][3] += 1
                m = VICTIM.search(line)
                if m:
                    costs.append(int(m.group(1)))
            elif "state = finish checkpoint" in line and task in open_passes:
                open_passes[task][1] += 1
            elif "f2fs_gc_end:" in line and task in open_passes:
                victims, cps, start_free = open_passes.pop(task)
                ctx[who(task)] += 1
                if who(task) == "gc thread":
                    continue
                work[(min(victims, WORK_MAX), min(cps, WORK_MAX))] += 1
                free[min(start_free, FREE_MAX)] += 1
    return work, free, ctx, costs, dirty, starts


def open_text(path):
    """A result block, plain or compressed with xz (`X.res.xz`)."""
    if path.endswith(".xz"):
        return lzma.open(path, "rt", errors="replace")
    return open(path, errors="replace")


def room(f, log, segs_per_sec):
    """Blocks past the write position of a log's current section, from the kprobe's
    segment and offset fields (None without them)."""
    seg, off = f.get(f"{log}_seg"), f.get(f"{log}_off")
    if seg is None or off is None:
        return None
    return segs_per_sec * BLOCKS_PER_SEG - ((seg % segs_per_sec) * BLOCKS_PER_SEG + off)


def show_starts(starts):
    """The kprobe's view of the passes' starts (all but the GC thread's)."""
    rows = [(f, sps) for task, f, sps, _ in starts if who(task) != "gc thread"]
    if not rows:
        return
    d = sorted(f["dirty_data"] for f, _ in rows)
    print(f"  dirty data pages at the passes' starts ({len(d)}): p10 {pct(d, 0.1)}, median "
          f"{pct(d, 0.5)}, p90 {pct(d, 0.9)}")
    # What a victim cleaned: the dirty count's drop from a pass that took one victim
    # to the next pass's start (pages the writer dirtied meanwhile count against it).
    one = [(s[1]["dirty_data"], s[1]["dirty_data"] - n[1]["dirty_data"])
           for s, n in zip(starts, starts[1:]) if s[3] == 1 and who(s[0]) != "gc thread"]
    if one:
        at = sorted(a for a, _ in one)
        print(f"  passes that took one victim ({len(one)}): dirty data pages at their start mean "
              f"{sum(at) / len(at):.0f} (median {pct(at, 0.5)}), down by {sum(c for _, c in one) / len(one):.1f} "
              f"at the next pass's start")
    for log in ("warm", "cold"):
        short = [f for f, sps in rows if (room(f, log, sps) is not None and room(f, log, sps) < f["dirty_data"])]
        if any(room(f, log, sps) is not None for f, sps in rows):
            print(f"  begun with the {log} data log's section short of them: {len(short)} "
                  f"({100 * len(short) / len(rows):.0f}%)")


def lab(path):
    """[(label, Counter((victims, checkpoints)), Counter(free), valid per victim)]"""
    with open(path) as f:
        runs = json.load(f)
    out = []
    for r in runs:
        if "gc_passes" not in r:
            sys.exit(f"gc-passes: {path}: no gc_passes (a uf2fs older than the pass counts?)")
        work = Counter({(b["victims"], b["checkpoints"]): b["passes"] for b in r["gc_passes"]})
        free = Counter({b["free"]: b["passes"] for b in r.get("gc_pass_free", [])})
        victims = r["data_victims"] + r["node_victims"]
        moved = r["data_blocks_moved"] + r["node_blocks_moved"]
        label = f"lab {r['policy']} {r['workload']} (seed {r.get('setup', {}).get('seed', '?')})"
        dirty = Counter({b["pages"]: b["passes"] for b in r.get("gc_pass_dirty", [])})
        short = (r.get("gc_pass_warm_short"), r.get("gc_pass_cold_short"))
        # User pages that reached the device by GC's moves, not by writeback.
        by_gc = r["user_blocks"] - r.get("device", {}).get("user_data", r["user_blocks"])
        cleaned = by_gc / r["data_victims"] if r["data_victims"] else 0.0
        out.append((label, work, free, moved / victims if victims else 0.0, dirty, short, cleaned))
    return out


def show_lab_starts(dirty, short, passes):
    """The lab's passes by dirty data pages at their start (bins of 64) and by the
    data log short of them."""
    n = sum(dirty.values())
    if n:
        bins = sorted(dirty.items())

        def at(q):
            seen = 0
            for start, k in bins:
                seen += k
                if seen > q * n:
                    return f"{start}-{start + 63}"
            return f"{bins[-1][0]}-"

        mean = sum((start + 31.5) * k for start, k in bins) / n
        print(f"  dirty data pages at the passes' starts ({n}, bins of 64): p10 {at(0.1)}, median "
              f"{at(0.5)}, p90 {at(0.9)}, mean {mean:.0f} (of the bins' middles)")
    for log, k in zip(("warm", "cold"), short):
        if k is not None and passes:
            print(f"  begun with the {log} data log's section short of them: {k} ({100 * k / passes:.0f}%)")


def show_work(work, top):
    total = sum(work.values())
    victims = sum(v * n for (v, _), n in work.items())
    cps = sum(c * n for (_, c), n in work.items())
    print(f"  passes {total}, victims {victims}, checkpoints {cps}")
    print("  by (victims, checkpoints): " + ", ".join(
        f"{n} ({v}{'+' if v == WORK_MAX else ''}, {c}{'+' if c == WORK_MAX else ''})"
        for (v, c), n in work.most_common(top)))


def show_free(free):
    total = sum(free.values()) or 1
    print("  by free sections beyond the reserved ones at the start: " + ", ".join(
        f"{k}{'+' if k == FREE_MAX else ''}: {n} ({100 * n / total:.0f}%)" for k, n in sorted(free.items())))


def pct(v, q):
    return v[min(len(v) - 1, int(len(v) * q))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--top", type=int, default=10, help="bins of (victims, checkpoints) shown [10]")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    for path in a.files:
        if path.endswith(".json"):
            for label, work, free, valid, dirty, short, cleaned in lab(path):
                print(f"{path}: {label}")
                show_work(work, a.top)
                show_free(free)
                print(f"  valid blocks per victim: mean {valid:.0f}")
                print(f"  user pages GC's moves wrote per data victim: {cleaned:.1f}")
                show_lab_starts(dirty, short, sum(work.values()))
            continue
        work, free, ctx, costs, dirty, starts = kernel(path)
        if not ctx:
            sys.exit(f"gc-passes: {path}: no f2fs_gc trace events (run waf-compare.sh with --trace)")
        print(f"{path}: Linux")
        show_work(work, a.top)
        show_free(free)
        print("  calls by who ran them: " + ", ".join(f"{k} {n}" for k, n in ctx.most_common()))
        if costs:
            print(f"  valid blocks per victim: mean {statistics.mean(costs):.0f}, median "
                  f"{statistics.median(costs):.0f}")
        if dirty:
            d = sorted(dirty)
            print(f"  dirty data pages ({len(d)} samples): p10 {pct(d, 0.1)}, median {pct(d, 0.5)}, "
                  f"p90 {pct(d, 0.9)}")
        show_starts(starts)


if __name__ == "__main__":
    main()
