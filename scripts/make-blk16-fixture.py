#!/usr/bin/env python3
"""Makes crates/cli/tests/fixtures/blk16/blk16.img.zst and blk16.manifest: an F2FS image
with 16 KiB blocks, made by an f2fs-tools build that knows `mkfs.f2fs -b 16384` (1.16's
development tree; Debian's 1.15 does not), for tests/kernel_images.rs to read back in CI
without those tools.

    scripts/make-blk16-fixture.py [--tools DIR] [--out DIR] [--packed-ssa]

With --packed-ssa it makes crates/cli/tests/fixtures/blk16-packed-ssa/blk16-packed-ssa.img.zst
and .manifest instead: the same tree on a volume with Linux 6.19's `packed_ssa` summary
layout (`mkfs.f2fs -O packed_ssa`: 4 KiB summaries, four to a 16 KiB SSA block).

DIR defaults to $UF2FS_F2FS_TOOLS, else /work/ext/f2fs-tools-inst/sbin. The source tree
is generated (deterministic); the manifest lists what sload.f2fs stores of it, in the
kernel fixtures' format (see tests/fixtures/kernel/README.md): files, links, symlinks
and labels from the tree, directories (size, links, times) from dump.f2fs. The image is
checked with fsck.f2fs before it is kept.
"""

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import f2fs  # noqa: E402  (scripts/lib/f2fs.py)

BLOCK = 16384
# Inodes here carry 36 bytes of extra attributes and 50 words of inline xattrs.
EXTRA_ISIZE = 36
INLINE_XATTR_ADDRS = 50
# Data addresses of an inode on this image (3995 - 9 - 50 = 3936); a direct node holds
# 4090. A compressed file's (clusters of 4 blocks) take whole clusters: 3936 and 4088.
IN_INODE = f2fs.addrs_per_inode(BLOCK, EXTRA_ISIZE, INLINE_XATTR_ADDRS)
PER_NODE = f2fs.addrs_per_block(BLOCK)
CLUSTER = 4
IN_INODE_COMPRESSED = f2fs.addrs_per_inode(BLOCK, EXTRA_ISIZE, INLINE_XATTR_ADDRS, CLUSTER)
PER_NODE_COMPRESSED = f2fs.addrs_per_block(BLOCK, CLUSTER)
# Inline data: the inode's addresses but one (DEF_INLINE_RESERVED_SIZE), as bytes.
MAX_INLINE_DATA = f2fs.ADDR_BYTES * (IN_INODE - 1)
# A fixed time stamp for every entry (sload.f2fs keeps whole seconds).
MTIME = 1_767_225_600  # 2026-01-01


# The label of everything file_contexts does not name.
DEFAULT_LABEL = "u:object_r:unlabelled:s0"


def stamped(blocks, tag):
    """`blocks` blocks, each naming its index and `tag` at two places, zeros between:
    any block read from the wrong place shows, and gzip squeezes it."""
    out = bytearray(blocks * BLOCK)
    for i in range(blocks):
        s = b"%s block %08d\n" % (tag, i)
        out[i * BLOCK:i * BLOCK + len(s)] = s
        out[i * BLOCK + 9000:i * BLOCK + 9000 + len(s)] = s
    return bytes(out)


def text(n, seed):
    """`n` bytes of text that differ per seed."""
    line = b"line %d of the file seeded %d, in a 16 KiB-block F2FS image\n"
    out = bytearray()
    i = 0
    while len(out) < n:
        out += line % (i, seed)
        i += 1
    return bytes(out[:n])


def build_tree(root):
    """The source tree; returns {relative path: selinux label} for file_contexts."""
    w = lambda p, data: open(os.path.join(root, p), "wb").write(data)
    for d in ["small", "links", "big", "bigdir", "hard", "xattrs", "compress", "deep/a/b/c/d"]:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    w("small/hello.txt", b"hello\n")
    # Inline data holds up to 4 * (3995 - 9 - 50 - 1) = 15740 bytes here.
    inline = [MAX_INLINE_DATA - 1, MAX_INLINE_DATA, MAX_INLINE_DATA + 1]
    for n in [0, 1, 100, 4095, 4096, 4097] + inline + [16383, 16384, 16385, 3 * BLOCK + 5, 40 * BLOCK]:
        w("small/size-%d" % n, text(n, n))
    # Through the inode's own addresses and both direct nodes into the first indirect
    # node (sload.f2fs writes every block, holes too, so no sparse shortcut).
    w("big/indirect.bin", stamped(IN_INODE + 2 * PER_NODE + 100, b"plain"))
    os.symlink("../small/hello.txt", os.path.join(root, "links/rel"))
    os.symlink("/small/hello.txt", os.path.join(root, "links/abs"))
    os.symlink("nowhere/at/all", os.path.join(root, "links/dangling"))
    os.symlink("/" + "/".join(["d%03d" % i for i in range(800)]), os.path.join(root, "links/long"))
    # Enough names for several hash levels: 856 dentry slots per block, 2 blocks per
    # bucket at level 0; 120-byte names take 15 slots each.
    for i in range(330):
        w("bigdir/file-%04d" % i, text(i % 7 * 50, i) if i % 3 else b"")
    for i in range(120):
        w("bigdir/%s-%03d" % ("n" * 110, i), text(30, i))
    w("bigdir/target", b"linked from many places\n")
    for i in range(5):
        os.link(os.path.join(root, "bigdir/target"), os.path.join(root, "hard/link-%d" % i))
    w("hard/a", b"a and b are one file\n")
    os.link(os.path.join(root, "hard/a"), os.path.join(root, "deep/a/b/c/d/b"))
    w("deep/a/b/c/d/leaf", text(20000, 99))
    w("xattrs/short", b"short label\n")
    w("xattrs/long", b"a label too long for the inline xattr area\n")
    os.mkdir(os.path.join(root, "xattrs/dir"))
    # Compressed (sload -c -i z): text compresses, the stamped file reaches the
    # indirect node: 3936 + 2 * 4088 = 12112 blocks before it, in clusters of 4.
    w("compress/text.z", text(300_000, 5))
    w("compress/indirect.z", stamped(IN_INODE_COMPRESSED + 2 * PER_NODE_COMPRESSED + 300, b"indirect"))
    w("compress/random.z", hashlib.sha256(b"seed").digest() * 2000)
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames + ["."]:
            os.utime(os.path.join(dirpath, n), (MTIME, MTIME), follow_symlinks=False)
    long = "u:object_r:" + "_".join(["long_type_name_%02d" % i for i in range(14)]) + ":s0"
    assert len(long) > 200
    return {
        "xattrs/short": "u:object_r:short_file:s0",
        "xattrs/long": long,
        "xattrs/dir": "u:object_r:labelled_dir:s0",
    }


def run(*cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        sys.exit("%s failed:\n%s" % (" ".join(cmd), p.stdout.decode(errors="replace")))
    return p.stdout.decode(errors="replace")


def dump_dirs(dump, img, max_ino):
    """{ino: (name, parent ino, mode, links, size, mtime)} of every directory inode."""
    dirs = {}
    for ino in range(3, max_ino):
        p = subprocess.run([dump, "-i", str(ino), img], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = p.stdout.decode(errors="replace")
        f = dict(re.findall(r"^(i_\w+)\s+\[0x\s*[0-9a-f]+ : (\d+)\]", out, re.M))
        if "i_mode" not in f or int(f["i_mode"]) & 0o170000 != 0o040000:
            continue
        name = re.search(r"^i_name\s+\[(.*)\]", out, re.M)
        dirs[ino] = (name.group(1) if name else "", int(f["i_pino"]), int(f["i_mode"]) & 0o7777,
                     int(f["i_links"]), int(f["i_size"]), int(f["i_mtime"]))
    return dirs


def manifest(src, labels, dirs, root_ino):
    lines = []
    by_name = {}
    for ino, d in dirs.items():
        by_name[(d[1], d[0])] = ino

    def dir_ino(rel):
        ino = root_ino
        for part in [p for p in rel.split("/") if p]:
            ino = by_name[(ino, part)]
        return ino

    def xattrs(rel):
        label = labels.get(rel, DEFAULT_LABEL)
        return "security.selinux=0x" + label.encode().hex()

    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        rel = "" if rel == "." else rel
        d = dirs[dir_ino(rel)]
        lines.append(["/" + rel, "d", "%04o" % d[2], str(d[3]), "0", "0", str(d[4]), str(d[5]),
                      "-", "-", xattrs(rel), "-"])
        for n in sorted(filenames + [x for x in dirnames if os.path.islink(os.path.join(dirpath, x))]):
            p = os.path.join(dirpath, n)
            r = os.path.join(rel, n) if rel else n
            st = os.lstat(p)
            if os.path.islink(p):
                target = os.readlink(p)
                lines.append(["/" + r, "l", "0777", "1", "0", "0", str(len(target)), str(MTIME),
                              "-", target, xattrs(r), "-"])
                continue
            data = open(p, "rb").read()
            chunks = "-"
            if len(data) > 10 * 1024 * 1024:
                # Every 4 MiB, the last blocks, and both sides of where the direct
                # nodes and the indirect node start (plain, then in clusters of 4).
                edges = [IN_INODE + k * PER_NODE for k in range(3)]
                edges += [IN_INODE_COMPRESSED + k * PER_NODE_COMPRESSED for k in range(3)]
                offs = sorted(set(list(range(0, len(data), 4 << 20)) + [len(data) - 4 * BLOCK] +
                                  [(e - 2) * BLOCK for e in edges if (e + 2) * BLOCK <= len(data)]))
                chunks = ",".join("%d:%d:%s" % (o, min(4 * BLOCK, len(data) - o),
                                                hashlib.sha256(data[o:o + 4 * BLOCK]).hexdigest())
                                  for o in offs)
            lines.append(["/" + r, "f", "%04o" % (st.st_mode & 0o7777), str(st.st_nlink), "0", "0",
                          str(len(data)), str(MTIME), hashlib.sha256(data).hexdigest(), "-", xattrs(r),
                          chunks])
    lines.sort(key=lambda l: l[0].encode())
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", default=os.environ.get("UF2FS_F2FS_TOOLS", "/work/ext/f2fs-tools-inst/sbin"))
    ap.add_argument("--out")
    ap.add_argument("--packed-ssa", action="store_true")
    a = ap.parse_args()
    name = "blk16-packed-ssa" if a.packed_ssa else "blk16"
    features = "extra_attr,compression,casefold" + (",packed_ssa" if a.packed_ssa else "")
    a.out = a.out or os.path.join(os.path.dirname(__file__), "../crates/cli/tests/fixtures", name)
    tool = lambda n: os.path.join(a.tools, n)
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="blk16-fixture-") as tmp:
        src = os.path.join(tmp, "src")
        os.mkdir(src)
        labels = build_tree(src)
        fc = os.path.join(tmp, "file_contexts")
        with open(fc, "w") as f:
            # Every path needs a label (sload.f2fs stops at the first it cannot find);
            # the exact paths below win over this pattern.
            f.write("/.* %s\n" % DEFAULT_LABEL)
            for rel, label in labels.items():
                f.write("/%s %s\n" % (re.escape(rel), label))
        img = os.path.join(tmp, name + ".img")
        with open(img, "wb") as f:
            f.truncate(512 << 20)
        mkfs_out = run(tool("mkfs.f2fs"), "-f", "-b", "16384", "-o", "20",
                       "-O", features,
                       "-C", "utf8", "-T", str(MTIME), img)
        run(tool("sload.f2fs"), "-f", src, "-P", "-s", fc, "-c", "-a", "lz4", "-i", "z", "-r", "-T", str(MTIME), img)
        # No inode_checksum: sload.f2fs leaves the checksum of a hard-linked inode
        # stale (it raises i_links after sealing the inode), and fsck.f2fs's repair of
        # it did not stick. The image must check clean as made.
        fsck = run(tool("fsck.f2fs"), "-f", img)
        if "[Fail]" in fsck or "ASSERT" in fsck:
            sys.exit("fsck.f2fs finds the image damaged:\n" + fsck)
        dirs = dump_dirs(tool("dump.f2fs"), img, 3 + 700)
        entries = manifest(src, labels, dirs, 3)
        version = run(tool("mkfs.f2fs"), "-V").strip()
        with open(os.path.join(a.out, name + ".manifest"), "w") as f:
            f.write("# F2FS image with 16 KiB blocks, %s.img.zst: made by scripts/make-blk16-fixture.py%s\n"
                    % (name, " --packed-ssa" if a.packed_ssa else ""))
            f.write("# (%s -b 16384 -o 20 -O %s;\n" % (version, features))
            f.write("# sload.f2fs -P -s file_contexts -c -a lz4 -i z -r). What sload.f2fs stored; columns\n")
            f.write("# (TAB-separated, - = n/a): path type mode nlink uid gid size mtime sha256 target xattrs chunks\n")
            for l in entries:
                f.write("\t".join(l) + "\n")
        # zstd, not gzip: a 16 KiB-block volume needs 512 MiB for this much data (its
        # reserved and overprovisioned segments are 8 MiB each), and gzip cannot
        # squeeze zeros past ~1000:1.
        run("zstd", "-19", "-q", "-f", img, "-o", os.path.join(a.out, name + ".img.zst"))
        print("made %s (%d entries); mkfs said:\n%s" % (a.out, len(entries), mkfs_out[-400:]))


if __name__ == "__main__":
    main()
