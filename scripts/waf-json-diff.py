#!/usr/bin/env python3
"""waf-json-diff.py [--only KEY,...] A.json B.json

Compares two `uf2fs bench waf|latency|writeback --json` files (a local run and the
`uf2fs bench merge` of a sweep's shards, or two runs), ignoring every key containing
"elapsed" (the timings); prints IDENTICAL, or the differing paths and exits 1.

--only KEY,...: compare only these keys of every object (and the lengths of lists),
for `bench writeback`, whose other figures are wall-clock and thread measurements
that differ between any two runs, e.g. --only workload,writers,contexts,policy,bytes,files
"""
import json, sys

args = sys.argv[1:]
only = None
if len(args) == 4 and args[0] == "--only":
    only = set(args[1].split(","))
    args = args[2:]
if len(args) != 2:
    sys.exit(__doc__.strip().splitlines()[0])

def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items()
                if "elapsed" not in k and (only is None or k in only)}
    if isinstance(o, list):
        return [strip(x) for x in o]
    return o

a = strip(json.load(open(args[0])))
b = strip(json.load(open(args[1])))
if a == b:
    print("IDENTICAL", args[0], args[1])
    sys.exit(0)

def d(x, y, p):
    if type(x) != type(y):
        print(p, x, y)
        return
    if isinstance(x, dict):
        for k in sorted(set(x) | set(y)):
            d(x.get(k), y.get(k), p + "." + k)
    elif isinstance(x, list):
        if len(x) != len(y):
            print(p, "len", len(x), len(y))
        for i, (u, v) in enumerate(zip(x, y)):
            d(u, v, p + f"[{i}]")
    elif x != y:
        print(p, x, y)

d(a, b, "")
sys.exit(1)
