#!/usr/bin/env python3
"""Compares two `uf2fs bench waf --json` files, ignoring every key containing "elapsed";
prints the differing paths and exits 1 if any count differs."""
import json,sys
def strip(o):
    if isinstance(o,dict): return {k:strip(v) for k,v in o.items() if 'elapsed' not in k}
    if isinstance(o,list): return [strip(x) for x in o]
    return o
a=strip(json.load(open(sys.argv[1]))); b=strip(json.load(open(sys.argv[2])))
if a==b: print("IDENTICAL", sys.argv[1], sys.argv[2]); sys.exit(0)
def d(x,y,p):
    if type(x)!=type(y): print(p,x,y); return
    if isinstance(x,dict):
        for k in set(x)|set(y): d(x.get(k),y.get(k),p+'.'+k)
    elif isinstance(x,list):
        if len(x)!=len(y): print(p,'len',len(x),len(y))
        for i,(u,v) in enumerate(zip(x,y)): d(u,v,p+f'[{i}]')
    elif x!=y: print(p,x,y)
d(a,b,''); sys.exit(1)
