#!/usr/bin/env python3
"""Compares two runs of scripts/fstests.sh (their WORK/results.txt), e.g. uf2fs and
fuse2fs on the same list, and prints Markdown for docs/fstests.md: the counts, the
tests whose verdicts differ, the not-run reasons of each with their counts, and one
row per test with both verdicts and the reasons.

usage: scripts/fstests-compare.py NAME=RESULTS NAME=RESULTS [--table]
"""
import collections
import sys


def load(path):
    """Test -> (verdict, fsck, reason) from a results.txt."""
    runs = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 3:
                continue
            test, verdict, fsck = fields[:3]
            reason = fields[3] if len(fields) > 3 else ""
            runs[test] = (verdict, fsck, reason)
    return runs


def cell(entry):
    """A table cell for one test's verdict."""
    if entry is None:
        return "-"
    verdict, fsck, reason = entry
    text = verdict
    if reason:
        text += ": " + reason.replace("|", "\\|")
    if fsck != "clean":
        text += " (fsck " + fsck + ")"
    return text


def main(argv):
    table = "--table" in argv
    named = [a for a in argv if a != "--table"]
    if len(named) != 2 or not all("=" in a for a in named):
        sys.exit(__doc__)
    (a_name, a_path), (b_name, b_path) = (a.split("=", 1) for a in named)
    a, b = load(a_path), load(b_path)
    tests = sorted(set(a) | set(b))
    for name, runs in ((a_name, a), (b_name, b)):
        counts = collections.Counter(v for v, _, _ in runs.values())
        dirty = sum(1 for _, f, _ in runs.values() if not f.startswith("clean"))
        print(f"- {name}: **{counts['pass']} passed, {counts['fail']} failed, "
              f"{counts['notrun']} not run, of {len(runs)}**; fsck not clean after {dirty}")
    print()
    for x_name, x, y_name, y in ((a_name, a, b_name, b), (b_name, b, a_name, a)):
        diff = [t for t in tests if x.get(t, ("-",))[0] == "pass" and y.get(t, ("-",))[0] == "fail"]
        print(f"{x_name} passes, {y_name} fails ({len(diff)}): "
              + (", ".join(t.split("/")[-1] for t in diff) or "none"))
        print()
    for x_name, x, y_name, y in ((a_name, a, b_name, b), (b_name, b, a_name, a)):
        diff = [t for t in tests if x.get(t, ("-",))[0] != "notrun" and y.get(t, ("-",))[0] == "notrun"]
        print(f"{x_name} runs, {y_name} does not ({len(diff)}): "
              + (", ".join(t.split("/")[-1] for t in diff) or "none"))
        print()
    for name, runs in ((a_name, a), (b_name, b)):
        reasons = collections.Counter(r for v, _, r in runs.values() if v == "notrun")
        print(f"Not run on {name}, by reason:")
        print()
        print("| tests | reason |")
        print("|---:|---|")
        for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"| {n} | {reason.replace('|', chr(92) + '|')} |")
        print()
    if table:
        print(f"| test | {a_name} | {b_name} |")
        print("|---|---|---|")
        for t in tests:
            print(f"| {t.split('/')[-1]} | {cell(a.get(t))} | {cell(b.get(t))} |")


if __name__ == "__main__":
    main(sys.argv[1:])
