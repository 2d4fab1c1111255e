//! Extended attribute writes judged from outside: scripted and random sequences of
//! set, replace and remove (and chmod under an access ACL) on files, directories,
//! symlinks, fifos and the root, against a model of what Linux F2FS does, on uf2fs mkfs
//! and mkfs.f2fs+sload images with and without extra attributes (flexible inline
//! xattrs). After each sequence: unmount, `fsck.f2fs -f` clean (f2fs-tools 1.15 must be
//! installed: these tests fail, not skip, without it), a read-only reopen equal to the
//! model, the xattr node present exactly when the list outgrows the inline area (and
//! counted in `i_blocks`), and `dump.f2fs -i` (f2fs-tools' own xattr reader) listing the
//! same entries in the same order.

#[path = "xattr_write/model.rs"]
mod model;
#[path = "xattr_write/world.rs"]
mod world;

use model::*;
use uf2fs_core::{Creator, Error, Fs, XATTR_ACL_KILL_SGID, XATTR_CREATE as CREATE, XATTR_REPLACE as REPLACE};
use world::{fsck_clean, image, kind, raw_inode, Variant, World, MIB, VARIANTS};

/// A value of `len` bytes from `seed`.
fn value(seed: u64, len: usize) -> Vec<u8> {
    uf2fs_testkit::data::noise(len, seed.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// An ACL in the Linux xattr format from (tag, perm, id) triples.
fn acl(entries: &[(u16, u16, u32)]) -> Vec<u8> {
    let mut out = 2u32.to_le_bytes().to_vec();
    for &(tag, perm, id) in entries {
        out.extend_from_slice(&tag.to_le_bytes());
        out.extend_from_slice(&perm.to_le_bytes());
        out.extend_from_slice(&id.to_le_bytes());
    }
    out
}

const NOID: u32 = u32::MAX;

fn spill_and_return(v: Variant, tmp: &std::path::Path) {
    let img = image(tmp, "spill.img", v, 64 * MIB);
    let mut w = World::open(&img);
    for path in ["/f", "/d", "/l", "/p", "/"] {
        let inline = w.inode(path).inline;
        // Small values stay inline (when there is an inline area).
        w.set(path, "user.a", &value(1, 20));
        w.set(path, "trusted.b", b"");
        assert_eq!(w.inode(path).node, inline == 0, "{v:?} {path}");
        // Past the inline area: the list continues in a new xattr node.
        w.set(path, "user.c", &value(2, inline + 100));
        assert!(w.inode(path).node);
        w.set(path, "security.d", &value(3, 1000));
    }
    // Data and dentries leaving the inode leave the inline xattrs where they are.
    for path in ["/f", "/d", "/"] {
        w.grow(path);
    }
    w.cycle(&format!("{v:?}: spilled"));
    for path in ["/f", "/d", "/l", "/p", "/"] {
        let inline = w.inode(path).inline;
        // Replacing moves an entry to the end of the list.
        w.set(path, "user.a", &value(4, 21));
        w.change(path, b"user.c", None, 0).unwrap();
        w.change(path, b"security.d", None, 0).unwrap();
        // Everything fits inline again: the node goes (it stays without an inline area).
        assert_eq!(w.inode(path).node, inline == 0, "{v:?} {path}");
    }
    w.cycle(&format!("{v:?}: back inline"));
    for path in ["/f", "/d", "/"] {
        w.change(path, b"user.a", None, 0).unwrap();
        w.change(path, b"trusted.b", None, 0).unwrap();
        assert!(w.inode(path).entries.is_empty());
    }
    w.cycle(&format!("{v:?}: emptied"));
}

#[test]
fn lists_spill_into_the_xattr_node_and_come_back() {
    let tmp = tempfile::tempdir().unwrap();
    for v in VARIANTS {
        spill_and_return(v, tmp.path());
    }
}

fn limits(v: Variant, tmp: &std::path::Path) {
    let img = image(tmp, "limits.img", v, 64 * MIB);
    let mut w = World::open(&img);
    for path in ["/f", "/d", "/l", "/"] {
        let m = w.inode(path).clone();
        // The largest value fills inline area and node to the last byte.
        let max = m.largest_value(1);
        assert_eq!(w.change(path, b"user.x", Some(&value(5, max + 1)), 0), Err(E2BIG));
        w.set(path, "user.x", &value(5, max));
        assert_eq!(w.inode(path).used(), m.capacity());
        assert_eq!(w.change(path, b"user.y", Some(b""), 0), Err(E2BIG));
        // Replacing it by one as large works: its own space counts as free.
        w.set(path, "user.x", &value(6, max));
        // A longer name leaves less room for the value.
        w.change(path, b"user.x", None, 0).unwrap();
        let long = format!("user.{}", "n".repeat(250));
        let max_long = m.largest_value(250);
        assert_eq!(
            w.change(path, long.as_bytes(), Some(&value(7, max_long + 1)), 0),
            Err(E2BIG)
        );
        w.set(path, &long, &value(7, max_long));
        w.change(path, long.as_bytes(), None, 0).unwrap();
        // Past the kernel's MAX_VALUE_LEN and past the VFS's 64 KiB: E2BIG either way.
        assert_eq!(w.change(path, b"user.z", Some(&value(8, m.capacity())), 0), Err(E2BIG));
        assert_eq!(w.change(path, b"user.z", Some(&vec![0; 65537]), 0), Err(E2BIG));
    }
    // A list that fills inline area and node exactly, left so across the unmount.
    let max = w.inode("/f").largest_value(1);
    w.set("/f", "user.x", &value(10, max));
    w.cycle(&format!("{v:?}: limits"));
}

#[test]
fn values_up_to_the_kernels_limit() {
    let tmp = tempfile::tempdir().unwrap();
    for v in VARIANTS {
        limits(v, tmp.path());
    }
}

#[test]
fn flags_names_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "errors.img", Variant::Uf2fs(""), 64 * MIB);
    let mut w = World::open(&img);
    assert_eq!(w.change("/f", b"user.a", Some(b"1"), REPLACE), Err(ENODATA));
    w.change("/f", b"user.a", Some(b"1"), CREATE).unwrap();
    assert_eq!(w.change("/f", b"user.a", Some(b"2"), CREATE), Err(EEXIST));
    assert_eq!(w.change("/f", b"user.a", Some(b"2"), CREATE | REPLACE), Err(EEXIST));
    assert_eq!(w.change("/f", b"user.b", Some(b"2"), CREATE | REPLACE), Err(ENODATA));
    w.change("/f", b"user.a", Some(b"2"), REPLACE).unwrap();
    w.change("/f", b"user.a", None, 0).unwrap();
    assert_eq!(w.change("/f", b"user.a", None, 0), Err(ENODATA));
    // Names: length, prefixes Linux F2FS has no handler for, nothing after a prefix.
    assert_eq!(w.change("/f", b"", Some(b"v"), 0), Err(ERANGE));
    let long = format!("user.{}", "n".repeat(251));
    assert_eq!(w.change("/f", long.as_bytes(), Some(b"v"), 0), Err(ERANGE));
    assert_eq!(w.change("/f", long.as_bytes(), None, 0), Err(ERANGE));
    for bad in [
        &b"system.advise"[..],
        b"os2.x",
        b"USER.x",
        b"xattr",
        b"system.posix_acl_accessx",
    ] {
        assert_eq!(w.change("/f", bad, Some(b"v"), 0), Err(EOPNOTSUPP), "{bad:?}");
        assert_eq!(w.change("/f", bad, None, 0), Err(EOPNOTSUPP), "{bad:?}");
    }
    for bad in [&b"user."[..], b"trusted.", b"security.", b"lustre."] {
        assert_eq!(w.change("/f", bad, Some(b"v"), 0), Err(EINVAL), "{bad:?}");
    }
    let ino = w.target("/f").ino;
    assert_eq!(w.fs.set_xattr(ino, b"user.a", b"v", 8).unwrap_err().errno(), EINVAL);
    // Names are bytes: any but NUL-free checks are the caller's.
    w.set("/f", "user.\u{e9}t\u{e9}", b"utf-8");
    w.set("/f", "lustre.lov", b"lustre");
    // An unlinked inode is gone.
    w.fs.unlink(w.fs.root(), b"p").unwrap();
    let p = w.target("/p").ino;
    assert!(matches!(w.fs.set_xattr(p, b"user.a", b"v", 0), Err(Error::NotFound(_))));
    w.targets.retain(|t| t.path != "/p");
    w.cycle("errors");
    // A read-only file system refuses, after the name checks.
    let ro = Fs::open(&img, &[]).unwrap();
    assert!(matches!(ro.set_xattr(ino, b"user.a", b"v", 0), Err(Error::ReadOnly(_))));
    assert!(matches!(ro.remove_xattr(ino, b"user.a"), Err(Error::ReadOnly(_))));
    assert_eq!(ro.set_xattr(ino, b"", b"v", 0).unwrap_err().errno(), ERANGE);
}

fn acls(v: Variant, tmp: &std::path::Path) {
    let img = image(tmp, "acl.img", v, 64 * MIB);
    let mut w = World::open(&img);
    let access = "system.posix_acl_access";
    let default = "system.posix_acl_default";
    // user::rw- user:1000:r-- group::r-- mask::r-x other::---
    let named = acl(&[
        (1, 6, NOID),
        (2, 4, 1000),
        (4, 4, NOID),
        (0x10, 5, NOID),
        (0x20, 0, NOID),
    ]);
    w.set("/f", access, &named);
    assert_eq!(w.inode("/f").mode & 0o777, 0o650);
    // Ids of entries that name nobody are ignored: read back as -1.
    let mut junk_ids = named.clone();
    junk_ids[8..12].copy_from_slice(&7u32.to_le_bytes());
    w.set("/f", access, &junk_ids);
    // chmod rewrites owner, mask and other; the ACL stays.
    w.chmod("/f", 0o751);
    assert!(w.inode("/f").entries.iter().any(|e| e.index == 2));
    // An ACL the mode bits say all of is not stored; the mode takes its bits.
    let plain = acl(&[(1, 7, NOID), (4, 5, NOID), (0x20, 4, NOID)]);
    w.set("/f", access, &plain);
    assert!(w.inode("/f").entries.is_empty());
    assert_eq!(w.inode("/f").mode & 0o777, 0o754);
    // Removing a missing ACL succeeds; an ACL of no entries removes one.
    w.change("/f", access.as_bytes(), None, 0).unwrap();
    w.set("/d", access, &named);
    w.set("/d", access, &acl(&[]));
    assert!(w.inode("/d").entries.is_empty());
    // Default ACLs: directories only.
    w.set("/d", default, &named);
    w.set("/", default, &plain);
    assert_eq!(w.change("/f", default.as_bytes(), Some(&named), 0), Err(EACCES));
    w.change("/f", default.as_bytes(), None, 0).unwrap();
    w.set("/p", access, &named);
    // Symlinks take none.
    assert_eq!(w.change("/l", access.as_bytes(), Some(&named), 0), Err(EOPNOTSUPP));
    assert_eq!(w.change("/l", access.as_bytes(), None, 0), Err(EOPNOTSUPP));
    // Bad ACLs: version, size, order, missing entries, bad permissions, a named entry
    // without a mask or an id.
    let mut v1 = named.clone();
    v1[0] = 1;
    assert_eq!(w.change("/f", access.as_bytes(), Some(&v1), 0), Err(EOPNOTSUPP));
    assert_eq!(
        w.change("/f", access.as_bytes(), Some(&named[..named.len() - 2]), 0),
        Err(EINVAL)
    );
    assert_eq!(w.change("/f", access.as_bytes(), Some(b""), 0), Err(EINVAL));
    for bad in [
        acl(&[(4, 4, NOID), (1, 6, NOID), (0x20, 0, NOID)]),
        acl(&[(1, 6, NOID), (0x20, 0, NOID)]),
        acl(&[(1, 8, NOID), (4, 4, NOID), (0x20, 0, NOID)]),
        acl(&[(1, 6, NOID), (2, 4, 5), (4, 4, NOID), (0x20, 0, NOID)]),
        acl(&[
            (1, 6, NOID),
            (2, 4, NOID),
            (4, 4, NOID),
            (0x10, 4, NOID),
            (0x20, 0, NOID),
        ]),
        acl(&[(1, 6, NOID), (4, 4, NOID), (0x40, 4, NOID), (0x20, 0, NOID)]),
    ] {
        assert_eq!(w.change("/d", access.as_bytes(), Some(&bad), 0), Err(EINVAL), "{bad:?}");
        assert_eq!(
            w.change("/d", default.as_bytes(), Some(&bad), 0),
            Err(EINVAL),
            "{bad:?}"
        );
    }
    // Flags do not apply to ACLs.
    w.change("/d", default.as_bytes(), Some(&named), CREATE).unwrap();
    w.change("/d", access.as_bytes(), Some(&named), REPLACE).unwrap();
    // A large ACL spills into the node like any value.
    let many: Vec<(u16, u16, u32)> = std::iter::once((1, 6, NOID))
        .chain((0..300).map(|i| (2, 4, 2000 + i)))
        .chain([(4, 4, NOID), (0x10, 7, NOID), (0x20, 0, NOID)])
        .collect();
    w.set("/d", default, &acl(&many));
    assert!(w.inode("/d").node);
    w.chmod("/d", 0o700);
    w.cycle(&format!("{v:?}: ACLs"));
}

#[test]
fn posix_acls_as_linux_stores_them() {
    let tmp = tempfile::tempdir().unwrap();
    for v in VARIANTS {
        acls(v, tmp.path());
    }
}

/// What is made in a directory with a default ACL, as Linux F2FS makes it
/// (`f2fs_acl_create`): the mode limited by the ACL instead of the umask, an access ACL
/// unless the mode says it all, the default ACL passed on to directories, nothing for
/// symlinks; and an access ACL set by a caller outside the group clearing
/// set-group-ID.
fn inheritance(v: Variant, tmp: &std::path::Path) {
    let img = image(tmp, "inherit.img", v, 64 * MIB);
    let fs = Fs::open_rw(&img, &[]).unwrap();
    let access = b"system.posix_acl_access".as_slice();
    let default = b"system.posix_acl_default".as_slice();
    let who = |umask| Creator { uid: 0, gid: 0, umask };
    let root = fs.root();
    let perm = |ino| fs.stat(ino).unwrap().mode & 0o7777;
    // The case: u::r-x,g::r--,o::--- and open(0666) under umask 022 gives
    // r--r----- with no access ACL (the mode says it all).
    let plain_default = acl(&[(1, 5, NOID), (4, 4, NOID), (0x20, 0, NOID)]);
    let d = fs.mkdir(root, b"d", 0o755, 0, 0).unwrap().ino;
    fs.set_xattr(d, default, &plain_default, 0).unwrap();
    let f = fs.create_as(d, b"f", 0o666, who(0o022)).unwrap().ino;
    assert_eq!(perm(f), 0o440, "{v:?}");
    assert_eq!(fs.get_xattr(f, access).unwrap(), None);
    assert_eq!(fs.get_xattr(f, default).unwrap(), None);
    // Without a default ACL the umask applies.
    let g = fs.create_as(root, b"g", 0o666, who(0o022)).unwrap().ino;
    assert_eq!(perm(g), 0o644);
    assert!(fs.list_xattrs(g).unwrap().is_empty());
    // A named entry and a mask: the mask limits the group class, umask 077 is ignored.
    let named_default = acl(&[
        (1, 7, NOID),
        (2, 4, 1000),
        (4, 4, NOID),
        (0x10, 5, NOID),
        (0x20, 0, NOID),
    ]);
    let n = fs.mkdir(root, b"n", 0o755, 0, 0).unwrap().ino;
    fs.set_xattr(n, default, &named_default, 0).unwrap();
    let sub = fs.mkdir_as(n, b"sub", 0o777, who(0o077)).unwrap().ino;
    assert_eq!(perm(sub), 0o750);
    let sub_access = acl(&[
        (1, 7, NOID),
        (2, 4, 1000),
        (4, 4, NOID),
        (0x10, 5, NOID),
        (0x20, 0, NOID),
    ]);
    assert_eq!(fs.get_xattr(sub, access).unwrap(), Some(sub_access.clone()));
    assert_eq!(fs.get_xattr(sub, default).unwrap(), Some(named_default.clone()));
    let fifo = fs.mknod_as(n, b"p", 0o010666, (0, 0), who(0o077)).unwrap().ino;
    assert_eq!(perm(fifo), 0o640);
    let fifo_access = acl(&[
        (1, 6, NOID),
        (2, 4, 1000),
        (4, 4, NOID),
        (0x10, 4, NOID),
        (0x20, 0, NOID),
    ]);
    assert_eq!(fs.get_xattr(fifo, access).unwrap(), Some(fifo_access.clone()));
    assert_eq!(fs.get_xattr(fifo, default).unwrap(), None);
    let link = fs.symlink(n, b"l", b"p", 0, 0).unwrap().ino;
    assert_eq!(perm(link), 0o777);
    assert!(fs.list_xattrs(link).unwrap().is_empty());
    // Grandchildren inherit through the copied default ACL.
    let deep = fs.create_as(sub, b"deep", 0o600, who(0)).unwrap().ino;
    assert_eq!(perm(deep), 0o600);
    assert!(fs.get_xattr(deep, access).unwrap().is_some());
    // A default ACL too big for the inline area: the new inode's ACLs take an xattr
    // node, counted in its blocks.
    let many: Vec<(u16, u16, u32)> = std::iter::once((1, 7, NOID))
        .chain((0..150).map(|i| (2, 4, 2000 + i)))
        .chain([(4, 5, NOID), (0x10, 7, NOID), (0x20, 5, NOID)])
        .collect();
    let big = fs.mkdir(root, b"big", 0o755, 0, 0).unwrap().ino;
    fs.set_xattr(big, default, &acl(&many), 0).unwrap();
    let big_dir = fs.mkdir_as(big, b"sub", 0o755, who(0)).unwrap().ino;
    let big_file = fs.create_as(big, b"file", 0o644, who(0)).unwrap().ino;
    fs.write_checkpoint().unwrap();
    for ino in [big_dir, big_file] {
        let raw = raw_inode(&fs, ino);
        assert_ne!(raw.xattr_nid, 0, "{v:?}: ACLs of inode {ino} in an xattr node");
        assert_eq!(raw.blocks, 2);
    }
    // set-group-ID: kept for a caller in the group, cleared otherwise.
    let s = fs.create(root, b"s", 0o2755, 0, 0).unwrap().ino;
    let rwx = acl(&[(1, 7, NOID), (4, 7, NOID), (0x20, 7, NOID)]);
    fs.set_xattr(s, access, &rwx, 0).unwrap();
    assert_eq!(perm(s), 0o2777);
    fs.set_xattr(
        s,
        access,
        &acl(&[(1, 7, NOID), (4, 5, NOID), (0x20, 5, NOID)]),
        XATTR_ACL_KILL_SGID,
    )
    .unwrap();
    assert_eq!(perm(s), 0o755);
    // Elsewhere the flag does nothing.
    fs.set_xattr(s, b"user.x", b"1", XATTR_ACL_KILL_SGID).unwrap();

    fs.unmount().unwrap();
    fsck_clean(&img, &format!("{v:?}: inherited ACLs"));
    let ro = Fs::open(&img, &[]).unwrap();
    let get = |path: &str, name: &[u8]| {
        let ino = ro.resolve(path.as_bytes(), false).unwrap();
        (ro.stat(ino).unwrap().mode & 0o7777, ro.get_xattr(ino, name).unwrap())
    };
    assert_eq!(get("/d/f", access), (0o440, None));
    assert_eq!(get("/n/sub", access), (0o750, Some(sub_access)));
    assert_eq!(get("/n/sub", default), (0o750, Some(named_default)));
    assert_eq!(get("/n/p", access), (0o640, Some(fifo_access)));
    assert_eq!(get("/big/file", access).1.map(|v| v.len()), Some(4 + 8 * 154));
    assert_eq!(get("/s", access), (0o755, None));
}

#[test]
fn default_acls_are_inherited_as_linux_does() {
    let tmp = tempfile::tempdir().unwrap();
    for v in VARIANTS {
        inheritance(v, tmp.path());
    }
}

#[test]
fn a_full_volume_refuses_a_new_xattr_node() {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "full.img", Variant::Uf2fs(""), 64 * MIB);
    let mut w = World::open(&img);
    // The root gains entries (and blocks) here: not a target.
    w.targets.retain(|t| t.path != "/");
    let root = w.fs.root();
    let spare: Vec<u32> = (0..1500)
        .map(|i| w.fs.create(root, format!("x{i}").as_bytes(), 0o644, 0, 0).unwrap().ino)
        .collect();
    let filler = w.fs.create(root, b"filler", 0o644, 0, 0).unwrap().ino;
    w.fs.write_checkpoint().unwrap();
    let chunk = vec![0x5a; MIB as usize];
    let mut at = 0u64;
    while w.fs.write(filler, at, &chunk).is_ok() {
        at += MIB;
        assert!(at < 64 * MIB, "never ran out of space");
    }
    assert!(at >= 2 * MIB, "only {at} bytes of data fitted");
    // Half of it back (whole segments, free again after a checkpoint), then spare
    // files get xattr nodes until none is left.
    w.fs.truncate(filler, at / 2).unwrap();
    w.fs.write_checkpoint().unwrap();
    let big = value(9, 3000);
    // Garbage collection before each operation may win a little room back after a
    // refusal: full is when several attempts in a row are refused.
    let (mut made, mut refused) = (0, 0);
    while refused < 3 {
        match w.fs.set_xattr(spare[made], b"user.big", &big, 0) {
            Ok(()) => (made, refused) = (made + 1, 0),
            Err(e) if e.is_no_space() => refused += 1,
            Err(e) => panic!("{e} after {made} xattr nodes"),
        }
        assert!(made < spare.len(), "never ran out of node blocks");
    }
    let free = w.fs.statfs().unwrap().blocks_free;
    assert!(made > 10, "only {made} xattr nodes fitted, {free} blocks free");
    let ino = w.target("/f").ino;
    let got = w.fs.set_xattr(ino, b"user.big", &big, 0);
    assert!(
        matches!(got, Err(ref e) if e.is_no_space()),
        "{got:?} with {free} blocks free"
    );
    w.check_one("/f", &w.fs, "refused");
    // Freeing space lets it in.
    w.fs.unlink(root, b"filler").unwrap();
    w.fs.write_checkpoint().unwrap();
    w.set("/f", "user.big", &big);
    assert!(w.inode("/f").node);
    for &x in &spare[..made] {
        assert_eq!(w.fs.get_xattr(x, b"user.big").unwrap().as_deref(), Some(&big[..]));
    }
    w.cycle("a full volume");
}

/// Random sequences against the model.
mod random {
    use super::*;
    use proptest::prelude::*;

    /// Names: valid ones that collide often, the longest, the ACLs, and bad ones.
    fn name() -> impl Strategy<Value = Vec<u8>> {
        let long = format!("user.{}", "l".repeat(250));
        let too_long = format!("trusted.{}", "t".repeat(248));
        prop_oneof![
            12 => prop::sample::select(vec!["user.a", "user.b", "user.c", "trusted.t", "security.s", "lustre.l"])
                .prop_map(|s| s.as_bytes().to_vec()),
            2 => Just(long.into_bytes()),
            3 => prop::sample::select(vec!["system.posix_acl_access", "system.posix_acl_default"])
                .prop_map(|s| s.as_bytes().to_vec()),
            1 => prop::sample::select(vec!["", "user.", "system.x", "os2.y"]).prop_map(|s| s.as_bytes().to_vec()),
            1 => Just(too_long.into_bytes()),
        ]
    }

    /// A value: small, about the inline area, up to and past the limit, or an ACL.
    #[derive(Debug, Clone)]
    enum Val {
        Bytes(usize, u64),
        Acl(Vec<(u16, u16, u32)>),
    }

    fn val() -> impl Strategy<Value = Val> {
        let perm = || 0u16..8;
        let acl = (
            perm(),
            prop::collection::vec((perm(), 0u32..5000), 0..40),
            perm(),
            perm(),
            any::<bool>(),
        )
            .prop_map(|(o, users, g, other, mask)| {
                let mut e = vec![(1, o, NOID)];
                e.extend(users.iter().map(|&(p, id)| (2, p, id)));
                e.push((4, g, NOID));
                if mask || !users.is_empty() {
                    e.push((0x10, 5, NOID));
                }
                e.push((0x20, other, NOID));
                e
            });
        prop_oneof![
            4 => (0usize..40, any::<u64>()).prop_map(|(l, s)| Val::Bytes(l, s)),
            3 => (40usize..400, any::<u64>()).prop_map(|(l, s)| Val::Bytes(l, s)),
            2 => (400usize..3000, any::<u64>()).prop_map(|(l, s)| Val::Bytes(l, s)),
            1 => (3900usize..4300, any::<u64>()).prop_map(|(l, s)| Val::Bytes(l, s)),
            3 => acl.prop_map(Val::Acl),
        ]
    }

    #[derive(Debug, Clone)]
    enum Step {
        Set(usize, Vec<u8>, Val, u32),
        Remove(usize, Vec<u8>),
        Chmod(usize, u32),
        Grow(usize),
        Checkpoint,
        Cycle,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            10 => (0usize..8, name(), val(), prop::sample::select(vec![0, 0, CREATE, REPLACE]))
                .prop_map(|(t, n, v, f)| Step::Set(t, n, v, f)),
            5 => (0usize..8, name()).prop_map(|(t, n)| Step::Remove(t, n)),
            1 => (0usize..8, 0u32..0o1000).prop_map(|(t, m)| Step::Chmod(t, m)),
            1 => (0usize..8).prop_map(Step::Grow),
            1 => Just(Step::Checkpoint),
            1 => Just(Step::Cycle),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        #[test]
        fn random_sequences_match_the_model(steps in prop::collection::vec(step(), 1..80), variant in 0usize..4) {
            let tmp = tempfile::tempdir().unwrap();
            let v = VARIANTS[variant];
            let img = image(tmp.path(), "random.img", v, 64 * MIB);
            let mut w = World::open(&img);
            let paths: Vec<String> = w.targets.iter().map(|t| t.path.clone()).collect();
            for s in &steps {
                match s {
                    Step::Set(t, n, val, flags) => {
                        let bytes = match val {
                            Val::Bytes(l, seed) => value(*seed, *l),
                            Val::Acl(e) => acl(e),
                        };
                        let _ = w.change(&paths[t % paths.len()], n, Some(&bytes), *flags);
                    }
                    Step::Remove(t, n) => {
                        let _ = w.change(&paths[t % paths.len()], n, None, 0);
                    }
                    Step::Chmod(t, m) => {
                        let p = &paths[t % paths.len()];
                        if kind(&w, p) != uf2fs_core::FileKind::Symlink {
                            w.chmod(p, *m);
                        }
                    }
                    Step::Grow(t) => w.grow(&paths[t % paths.len()]),
                    Step::Checkpoint => {
                        w.fs.write_checkpoint().unwrap();
                    }
                    Step::Cycle => w.cycle(&format!("{v:?}: random steps, midway")),
                }
            }
            w.cycle(&format!("{v:?}: random steps"));
        }
    }
}
