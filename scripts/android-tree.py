#!/usr/bin/env python3
"""Seeded Android-like source tree for the extraction benchmark, and tree manifests.

usage:
  scripts/android-tree.py gen DIR [--files N] [--bytes B] [--seed S]
      Writes a /system-like tree into DIR (which must not exist): app/, priv-app/,
      framework/, lib64/, etc/, fonts/, media/, bin/ ... N regular files (default
      22,000) holding B bytes (default 2.25 GiB), half of the bytes text-like
      (compressible: XML/config/property text built from a seeded word list) and half
      seeded random bytes (incompressible, as APKs, fonts, media and most of a .so
      are), sizes log-uniform from 32 B to 1 MiB plus a few files of 8..48 MiB, and
      symlinks (bin/ applets to toybox). Same seed, same tree, byte for byte.
  scripts/android-tree.py manifest DIR
      Prints one line per entry under DIR, sorted: type, path, then the sha1 of a
      regular file's bytes and its size, or a symlink's target. Two trees have the
      same files and bytes when their manifests are equal.
  scripts/android-tree.py text FILE BYTES [--seed S]
      Writes one text-like file of BYTES bytes (the same text as the tree's
      compressible files), for the compressed-vs-uncompressed read figures.
"""

import argparse
import hashlib
import math
import os
import random
import sys

WORDS = (
    "android system service permission package activity intent provider receiver "
    "version name value true false string integer boolean array item resource layout "
    "config feature library shared user uid gid group default enabled disabled vendor "
    "product odm framework privileged signature platform apex module install path file "
    "directory property persist ro sys debug build fingerprint display density locale "
    "network wifi bluetooth audio media camera sensor power battery thermal policy "
    "selinux context label domain type allow neverallow class capability process "
    "</item> <item> <string> </string> <bool> </bool> <integer> </integer> = : ; { } "
    "0 1 2 3 4 16 32 64 128 256 1024 4096 0x0 0x1f 0xff http://schemas.android.com/apk"
).split()

EXT_TEXT = [".xml", ".conf", ".rc", ".prop", ".txt", ".json", ".cfg", ".te"]
EXT_BIN = [".apk", ".so", ".ttf", ".ogg", ".png", ".jar", ".odex", ".vdex", ".bin"]
DIRS_TEXT = ["etc/permissions", "etc/init", "etc/sysconfig", "etc/selinux", "etc/vintf",
             "etc/security", "usr/share/zoneinfo", "usr/keylayout", "usr/idc", "etc"]
DIRS_BIN = ["lib64", "lib", "fonts", "media/audio/ui", "media/audio/ringtones",
            "framework", "framework/oat/arm64", "usr/icu", "bin", "tts/lang"]

MIB = 1 << 20


def text_pool(rng, size):
    """A block of XML/config-like text made of seeded words, about 2.5:1 under LZ4."""
    out = []
    n = 0
    while n < size:
        depth = rng.randrange(0, 6)
        line = " " * (4 * depth) + " ".join(rng.choice(WORDS) for _ in range(rng.randrange(3, 14)))
        line += " %d\n" % rng.randrange(0, 1 << rng.randrange(1, 32))
        out.append(line)
        n += len(line)
    return "".join(out).encode()[:size]


def plan(seed, files, total):
    """[(relpath, kind, size)] with kind 'text' or 'bin', half the bytes each."""
    rng = random.Random(seed)
    entries = []
    nbig = 12
    napp = files // 40
    for i in range(files):
        if i < nbig:
            kind = "text" if i % 2 == 0 else "bin"
            size = rng.randint(8 * MIB, 48 * MIB)
        else:
            kind = "text" if rng.random() < 0.55 else "bin"
            size = int(math.exp(rng.uniform(math.log(32), math.log(MIB))))
        if i < nbig:
            path = ("framework/big%02d.odex" if kind == "bin" else "etc/big%02d.xml") % i
        elif kind == "bin" and i < nbig + napp:
            top = "priv-app" if i % 3 == 0 else "app"
            name = "App%05d" % i
            path = "%s/%s/%s.apk" % (top, name, name)
        elif kind == "text":
            d = rng.choice(DIRS_TEXT)
            path = "%s/d%02d/f%05d%s" % (d, rng.randrange(40), i, rng.choice(EXT_TEXT))
        else:
            d = rng.choice(DIRS_BIN)
            path = "%s/d%02d/f%05d%s" % (d, rng.randrange(40), i, rng.choice(EXT_BIN))
        entries.append([path, kind, size])
    half = total // 2
    for kind in ("text", "bin"):
        mine = [e for e in entries if e[1] == kind]
        have = sum(e[2] for e in mine)
        for e in mine:
            e[2] = max(0, int(e[2] * half / have))
    return entries


def gen(args):
    if os.path.lexists(args.dir):
        sys.exit("android-tree.py: %s exists; remove it first" % args.dir)
    entries = plan(args.seed, args.files, args.bytes)
    rng = random.Random(args.seed ^ 0x5EED)
    pool = text_pool(random.Random(args.seed + 1), 8 * MIB)
    total = 0
    for path, kind, size in entries:
        full = os.path.join(args.dir, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            left = size
            while left:
                n = min(left, 256 * 1024)
                if kind == "bin":
                    f.write(rng.randbytes(n))
                else:
                    off = rng.randrange(0, len(pool) - n)
                    f.write(pool[off:off + n])
                left -= n
        total += size
    bindir = os.path.join(args.dir, "bin")
    os.makedirs(bindir, exist_ok=True)
    with open(os.path.join(bindir, "toybox"), "wb") as f:
        f.write(rng.randbytes(300 * 1024))
    for i in range(200):
        os.symlink("toybox", os.path.join(bindir, "applet%03d" % i))
    os.makedirs(os.path.join(args.dir, "empty-dir"), exist_ok=True)
    print("%d files (+ bin/toybox, 200 symlinks), %d bytes in %s" % (len(entries), total + 300 * 1024, args.dir))


def text(args):
    rng = random.Random(args.seed ^ 0x7E47)
    pool = text_pool(random.Random(args.seed + 1), 8 * MIB)
    with open(args.file, "wb") as f:
        left = args.bytes
        while left:
            n = min(left, 256 * 1024)
            off = rng.randrange(0, len(pool) - n)
            f.write(pool[off:off + n])
            left -= n


def manifest(args):
    root = args.dir
    lines = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if os.path.islink(full):
                lines.append("l %s -> %s" % (rel, os.readlink(full)))
            elif os.path.isdir(full):
                lines.append("d %s" % rel)
            elif os.path.isfile(full):
                h = hashlib.sha1()
                with open(full, "rb") as f:
                    while True:
                        b = f.read(MIB)
                        if not b:
                            break
                        h.update(b)
                lines.append("f %s %s %d" % (rel, h.hexdigest(), os.path.getsize(full)))
            else:
                lines.append("o %s" % rel)
    lines.sort()
    sys.stdout.write("".join(line + "\n" for line in lines))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("dir")
    g.add_argument("--files", type=int, default=22000)
    g.add_argument("--bytes", type=int, default=2304 * MIB)
    g.add_argument("--seed", type=int, default=1)
    m = sub.add_parser("manifest")
    m.add_argument("dir")
    t = sub.add_parser("text")
    t.add_argument("file")
    t.add_argument("bytes", type=int)
    t.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    {"gen": gen, "manifest": manifest, "text": text}[a.cmd](a)


if __name__ == "__main__":
    main()
