//! Namespace operations (write path step 2) judged from outside: scripted sequences and
//! random ones against an in-memory model, on uf2fs mkfs and mkfs.f2fs+sload images in
//! the default and extra-attribute feature sets; after each sequence an unmount,
//! `fsck.f2fs -f` (f2fs-tools 1.15 must be installed: these tests fail, not skip,
//! without it) and a read-only reopen compared with the model; and power cuts.

#[path = "common/cuts.rs"]
mod cuts;
#[path = "namespace/model.rs"]
mod model;
#[path = "namespace/world.rs"]
mod world;

use model::{join, walk, Model, EEXIST, EINVAL, EISDIR, ENOENT, ENOTDIR, ENOTEMPTY, EPERM};
use std::path::Path;
use uf2fs_core::device::{CrashDevice, MemDevice};
use uf2fs_core::{
    Error, FileKind, Fs, OpenOptions, SetAttr, Timestamp, RENAME_EXCHANGE, RENAME_NOREPLACE, RENAME_WHITEOUT,
};
use world::{fsck_clean, fsck_clean_in_place, image, Op, Variant, World, EXTRA, MIB, VARIANTS};

const ENAMETOOLONG: i32 = 36;
const ENOSPC: i32 = 28;

/// A name of `len` bytes (at least 6) unique for `i`.
fn name(i: usize, len: usize) -> String {
    let mut s = format!("n{i:05}");
    while s.len() < len {
        s.push((b'a' + (s.len() % 26) as u8) as char);
    }
    s
}

fn dir_size(fs: &Fs, path: &str) -> u64 {
    fs.stat(walk(fs, path.as_bytes()).unwrap()).unwrap().size
}

fn many_files(v: Variant, tmp: &Path) {
    let img = image(tmp, "many.img", v, 256 * MIB);
    let mut w = World::open(&img);
    w.ok(Op::mkdir("/", "big"));
    for i in 0..3000 {
        // 6 to 45 bytes: one to six dentry slots.
        w.ok(Op::create("/big", &name(i, 6 + i % 40)));
        if i == 5 {
            // Still inline: the directory's size is its inline dentry area.
            assert!(dir_size(&w.fs, "/big") < 4096, "{v:?}");
        }
        if i == 1500 {
            w.ok(Op::Checkpoint);
        }
    }
    let size = dir_size(&w.fs, "/big");
    // 3000 names of one to six slots fill some 50 blocks: hash levels 0 to 4 hold 62.
    assert!(
        size > 14 * 4096,
        "{v:?}: 3000 names took only {size} bytes: no hash levels grown"
    );
    for i in (0..3000).step_by(3) {
        w.ok(Op::unlink("/big", &name(i, 6 + i % 40)));
    }
    w.check("after unlinks");
    for i in 3000..3500 {
        w.ok(Op::create("/big", &name(i, 200)));
    }
    for i in 0..200 {
        w.ok(Op::create("/", &name(i, 10)));
    }
    w.err(Op::create("/big", &name(3001, 200)), EEXIST);
    let text = w.finish(&format!("{v:?}: many files"));
    assert!(text.contains("Hard link checking"), "{text}");
}

#[test]
fn thousands_of_files_in_one_directory() {
    let tmp = tempfile::tempdir().unwrap();
    for v in VARIANTS {
        many_files(v, tmp.path());
    }
}

#[test]
fn a_directory_past_its_inode_addresses_grows_direct_nodes() {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "huge.img", Variant::Uf2fs(EXTRA), 512 * MIB);
    let mut w = World::open(&img);
    w.ok(Op::mkdir("/", "huge"));
    let mut i = 0;
    // 255-byte names: six entries per dentry block, so hash levels fill fast.
    while dir_size(&w.fs, "/huge") <= 900 * 4096 {
        w.ok(Op::create("/huge", &name(i, 255)));
        i += 1;
        assert!(i < 20_000, "the directory never outgrew its inode");
    }
    for j in (0..i).step_by(2) {
        w.ok(Op::unlink("/huge", &name(j, 255)));
    }
    w.finish(&format!("a directory of {i} long names"));
}

fn deep(v: Variant, tmp: &Path) {
    let img = image(tmp, "deep.img", v, 128 * MIB);
    let mut w = World::open(&img);
    let mut path = String::from("/");
    for d in 0..120 {
        w.ok(Op::mkdir(&path, &format!("d{d}")));
        path = join(path.as_bytes(), format!("d{d}").as_bytes())
            .into_iter()
            .map(char::from)
            .collect();
        if d % 10 == 0 {
            w.ok(Op::create(&path, "f"));
        }
    }
    let mid: String = (0..60).fold(String::from(""), |p, d| format!("{p}/d{d}"));
    // A directory cannot move below itself; moving the chain's lower half up works.
    w.err(Op::rename("/", "d0", &mid, "x", 0), EINVAL);
    w.ok(Op::rename(&mid, "d60", "/", "top", 0));
    w.err(Op::rmdir(&mid, "d59"), ENOENT);
    w.err(Op::rmdir("/", "d0"), ENOTEMPTY);
    // Remove the moved half bottom-up.
    let mut lower: Vec<String> = vec![String::from("/top")];
    for d in 61..120 {
        let next = format!("{}/d{d}", lower.last().unwrap());
        lower.push(next);
    }
    for p in lower.iter().rev() {
        let (parent, leaf) = p.rsplit_once('/').unwrap();
        let parent = if parent.is_empty() { "/" } else { parent };
        let _ = w.apply(&Op::unlink(p, "f"));
        w.ok(Op::rmdir(parent, leaf));
    }
    w.finish(&format!("{v:?}: deep directories"));
}

#[test]
fn deep_directory_chains() {
    let tmp = tempfile::tempdir().unwrap();
    for v in VARIANTS {
        deep(v, tmp.path());
    }
}

fn links(v: Variant, tmp: &Path) {
    let img = image(tmp, "links.img", v, 128 * MIB);
    let mut w = World::open(&img);
    let inline_max = {
        let sb = w.fs.superblock();
        // 923 slots less extra attributes, inline xattrs and the reserved slot.
        let extra = if sb.has(uf2fs_format::superblock::FEATURE_EXTRA_ATTR) {
            9
        } else {
            0
        };
        4 * (923 - extra - 50 - 1)
    };
    w.ok(Op::mkdir("/", "a"));
    w.ok(Op::mkdir("/", "b"));
    for (i, len) in [1, 60, 255, inline_max, inline_max + 1, 4000, 4095]
        .into_iter()
        .enumerate()
    {
        let target: Vec<u8> = (0..len).map(|k| b"abc/def."[k % 8]).collect();
        w.ok(Op::symlink("/a", &format!("s{i}"), &target));
    }
    w.err(Op::symlink("/a", "too-long", &[b'x'; 4096]), ENAMETOOLONG);
    w.ok(Op::create("/a", "file"));
    w.ok(Op::link("/a/file", "/b", "second"));
    w.ok(Op::link("/a/file", "/", "third"));
    w.ok(Op::link("/a/s6", "/b", "symlink-link"));
    w.err(Op::link("/a", "/b", "dir-link"), EPERM);
    w.err(Op::link("/a/file", "/b", "second"), EEXIST);
    w.err(Op::link("/a/none", "/b", "x"), ENOENT);
    w.check("links made");
    w.ok(Op::unlink("/a", "file"));
    w.ok(Op::Checkpoint);
    w.ok(Op::unlink("/b", "second"));
    w.ok(Op::unlink("/a", "s6"));
    w.ok(Op::unlink("/a", "s5"));
    w.ok(Op::unlink("/a", "s0"));
    w.finish(&format!("{v:?}: symlinks and hard links"));
}

#[test]
fn symlinks_and_hard_links() {
    let tmp = tempfile::tempdir().unwrap();
    for v in VARIANTS {
        links(v, tmp.path());
    }
}

fn renames(v: Variant, tmp: &Path) {
    let img = image(tmp, "rename.img", v, 128 * MIB);
    let mut w = World::open(&img);
    for d in ["p", "q", "p/sub", "q/other", "p/sub/inner"] {
        let (parent, leaf) = d
            .rsplit_once('/')
            .map_or(("/".to_string(), d), |(a, b)| (format!("/{a}"), b));
        w.ok(Op::mkdir(&parent, leaf));
    }
    for f in ["f1", "f2", "f3", "f4"] {
        w.ok(Op::create("/p", f));
    }
    w.ok(Op::link("/p/f4", "/q", "f4-link"));
    // Same directory, new name; across directories; onto an existing file.
    w.ok(Op::rename("/p", "f1", "/p", "g1", 0));
    w.ok(Op::rename("/p", "g1", "/q", "g1", 0));
    w.ok(Op::rename("/p", "f2", "/q", "g1", 0));
    w.err(Op::rename("/p", "f3", "/q", "g1", RENAME_NOREPLACE), EEXIST);
    w.ok(Op::rename("/p", "f3", "/q", "f3", RENAME_NOREPLACE));
    // Hard links of one inode, and a name onto itself: nothing happens.
    w.ok(Op::rename("/p", "f4", "/q", "f4-link", 0));
    w.ok(Op::rename("/q", "f3", "/q", "f3", 0));
    // Exchange two files across directories, a file and a directory, two directories.
    w.ok(Op::create("/p", "x"));
    w.ok(Op::rename("/p", "x", "/q", "f3", RENAME_EXCHANGE));
    w.ok(Op::rename("/q", "f3", "/p", "sub", RENAME_EXCHANGE));
    w.ok(Op::rename("/q", "f3", "/p", "sub", RENAME_EXCHANGE));
    w.ok(Op::rename("/p", "sub", "/q", "other", RENAME_EXCHANGE));
    w.err(Op::rename("/p", "x", "/q", "none", RENAME_EXCHANGE), ENOENT);
    // Directory moves: into another parent, onto an empty directory, refusals.
    w.ok(Op::rename("/q", "other", "/", "moved", 0));
    w.ok(Op::mkdir("/", "vacant"));
    w.ok(Op::rename("/", "moved", "/", "vacant", 0));
    w.err(Op::rename("/", "vacant", "/q", "f4-link", 0), ENOTDIR);
    w.err(Op::rename("/q", "f4-link", "/", "vacant", 0), EISDIR);
    w.err(Op::rename("/", "q", "/", "vacant", 0), ENOTEMPTY);
    w.err(Op::rename("/", "vacant", "/vacant/inner", "x", 0), EINVAL);
    w.err(Op::rename("/vacant", "inner", "/", "vacant", RENAME_EXCHANGE), EINVAL);
    w.err(Op::rename("/", "nothing", "/", "x", 0), ENOENT);
    let root = w.fs.root();
    for (flags, errno) in [
        (RENAME_EXCHANGE | RENAME_NOREPLACE, EINVAL),
        (RENAME_WHITEOUT | RENAME_EXCHANGE, EINVAL),
        (64, EINVAL),
    ] {
        let r = w.fs.rename(root, b"p", root, b"x", flags);
        assert_eq!(r.map_err(|e| e.errno()), Err(errno), "flags {flags:#x}");
    }
    w.check("renames");
    w.ok(Op::Checkpoint);
    w.ok(Op::rename("/", "p", "/vacant/inner", "p", 0));
    w.ok(Op::rename("/vacant/inner", "p", "/", "p", 0));
    // Many renames in one directory: the added name may convert it from inline.
    for i in 0..200 {
        w.ok(Op::create("/q", &name(i, 30)));
    }
    for i in 0..200 {
        w.ok(Op::rename("/q", &name(i, 30), "/q", &name(i + 1000, 31), 0));
    }
    w.finish(&format!("{v:?}: renames"));
}

/// A rename inside one inline directory whose new, long name no longer fits the
/// inline area: adding it moves every entry into dentry block 0, and the old name must
/// be removed from there (fsstress found both names left, the inode counting one link,
/// so that unlinking one freed the inode under the other). Every fill level of the
/// inline area is tried, so that one of the renames is the one that converts.
fn rename_converting_inline(v: Variant, tmp: &Path) {
    let img = image(tmp, "convert.img", v, 256 * MIB);
    let mut w = World::open(&img);
    let mut converted = 0;
    for k in (100..215).step_by(5) {
        let dir = format!("k{k}");
        w.ok(Op::mkdir("/", &dir));
        let path = format!("/{dir}");
        for i in 0..k {
            w.ok(Op::create(&path, &name(i, 8)));
        }
        let before = dir_size(&w.fs, &path);
        w.ok(Op::rename(&path, &name(0, 8), &path, &name(9999, 255), 0));
        if before < 4096 && dir_size(&w.fs, &path) >= 4096 {
            converted += 1;
        }
        // Both names: the old one gone, the new one there (the model checks the rest).
        let d = walk(&w.fs, path.as_bytes()).unwrap();
        assert!(
            w.fs.lookup(d, name(0, 8).as_bytes()).is_err(),
            "{v:?}: k={k}: old name left"
        );
    }
    assert!(converted > 0, "{v:?}: no rename converted its directory");
    w.finish(&format!("{v:?}: renames converting inline directories"));
}

#[test]
fn a_rename_that_converts_an_inline_directory_removes_the_old_name() {
    let tmp = tempfile::tempdir().unwrap();
    for v in VARIANTS {
        rename_converting_inline(v, tmp.path());
    }
}

#[test]
fn renames_of_every_kind() {
    let tmp = tempfile::tempdir().unwrap();
    for v in VARIANTS {
        renames(v, tmp.path());
    }
}

fn specials(v: Variant, tmp: &Path) {
    let img = image(tmp, "special.img", v, 128 * MIB);
    let mut w = World::open(&img);
    for (i, (kind, rdev)) in [
        (FileKind::Fifo, (0, 0)),
        (FileKind::Socket, (0, 0)),
        (FileKind::CharDev, (1, 3)),
        (FileKind::CharDev, (300, 70_000)),
        (FileKind::BlockDev, (8, 1)),
        (FileKind::BlockDev, (259, 65_536)),
        (FileKind::File, (0, 0)),
    ]
    .into_iter()
    .enumerate()
    {
        w.ok(Op::Mknod(b"/".to_vec(), format!("node{i}").into_bytes(), kind, rdev));
    }
    let root = w.fs.root();
    assert_eq!(
        w.fs.mknod(root, b"dir", FileKind::Dir.mode_bits() | 0o755, (0, 0), 0, 0)
            .map_err(|e| e.errno()),
        Err(EINVAL)
    );
    w.ok(Op::Chmod(b"/node0".to_vec(), 0o600));
    w.ok(Op::Chmod(b"/".to_vec(), 0o711));
    let ino = walk(&w.fs, b"/node2").unwrap();
    let t = Timestamp {
        secs: 1_600_000_000,
        nsecs: 123,
    };
    let attrs = SetAttr {
        uid: Some(1000),
        gid: Some(100),
        atime: Some(t),
        mtime: Some(t),
        ..SetAttr::default()
    };
    let st = w.fs.setattr(ino, &attrs).unwrap();
    assert_eq!((st.uid, st.gid, st.atime, st.mtime), (1000, 100, t, t));
    assert!(st.ctime.secs > t.secs);
    let size = SetAttr {
        size: Some(0),
        ..SetAttr::default()
    };
    assert!(matches!(w.fs.setattr(ino, &size), Err(Error::Unsupported { .. })));
    let fs_check = w.fs.stat(ino).unwrap();
    w.finish(&format!("{v:?}: special files and attributes"));
    let fs = Fs::open(&img, &[]).unwrap();
    assert_eq!(fs.stat(ino).unwrap(), fs_check, "attributes survive the unmount");
}

#[test]
fn special_files_and_attributes() {
    let tmp = tempfile::tempdir().unwrap();
    for v in VARIANTS {
        specials(v, tmp.path());
    }
}

#[test]
fn errors_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "errors.img", Variant::Uf2fs(""), 64 * MIB);
    let mut w = World::open(&img);
    w.ok(Op::mkdir("/", "d"));
    w.ok(Op::create("/d", "f"));
    w.ok(Op::mkdir("/d", "e"));
    let before = w.model.clone();
    w.err(Op::create("/d", "f"), EEXIST);
    w.err(Op::mkdir("/d", "e"), EEXIST);
    w.err(Op::create("/none", "f"), ENOENT);
    w.err(Op::create("/d/f", "x"), ENOTDIR);
    w.err(Op::unlink("/d", "e"), EISDIR);
    w.err(Op::unlink("/d", "none"), ENOENT);
    w.err(Op::rmdir("/d", "f"), ENOTDIR);
    w.err(Op::rmdir("/", "d"), ENOTEMPTY);
    let long = "x".repeat(256);
    w.err(Op::create("/d", &long), ENAMETOOLONG);
    w.ok(Op::create("/d", &"y".repeat(255)));
    let root = w.fs.root();
    for (r, errno) in [
        (w.fs.create(root, b"a/b", 0o644, 0, 0).map(|_| ()), EINVAL),
        (w.fs.create(root, b"", 0o644, 0, 0).map(|_| ()), ENOENT),
        (w.fs.mkdir(root, b"..", 0o755, 0, 0).map(|_| ()), EEXIST),
        (w.fs.rmdir(root, b"."), EINVAL),
        (w.fs.unlink(root, b".."), EISDIR),
        (w.fs.rename(root, b"d", root, b"..", 0), EINVAL),
        (w.fs.symlink(root, b"s", b"", 0, 0).map(|_| ()), ENOENT),
    ] {
        assert_eq!(r.map_err(|e| e.errno()), Err(errno));
    }
    w.ok(Op::unlink("/d", &"y".repeat(255)));
    assert_eq!(w.model.nodes, before.nodes);
    w.finish("errors");
    let fs = Fs::open(&img, &[]).unwrap();
    assert_eq!(
        fs.create(fs.root(), b"x", 0o644, 0, 0).map_err(|e| e.errno()).err(),
        Some(30)
    );
}

#[test]
fn running_out_of_space_is_refused_before_anything_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "full.img", Variant::Uf2fs(""), 64 * MIB);
    let mut w = World::open(&img);
    w.ok(Op::mkdir("/", "d"));
    let mut made = 0;
    loop {
        match w.apply_unless_full(&Op::create("/d", &name(made, 20))) {
            Ok(()) => made += 1,
            Err(ENOSPC) => break,
            Err(e) => panic!("errno {e} after {made} files"),
        }
        assert!(made < 200_000, "never ran out of space");
        if made % 2000 == 0 {
            w.ok(Op::Checkpoint);
        }
    }
    assert!(made > 1000, "only {made} files fit");
    w.check("full");
    w.ok(Op::Checkpoint);
    // Removing names may use the reserved sections: a full volume can be emptied.
    for i in 0..made {
        w.ok(Op::unlink("/d", &name(i, 20)));
    }
    // Segments emptied become free after the checkpoint.
    w.ok(Op::Checkpoint);
    w.ok(Op::create("/d", "after"));
    w.finish(&format!("a volume filled with {made} files"));
}

#[test]
fn concurrent_operations_keep_the_namespace_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "threads.img", Variant::Uf2fs(EXTRA), 256 * MIB);
    let fs = Fs::open_rw(&img, &[]).unwrap();
    let root = fs.root();
    let shared = fs.mkdir(root, b"shared", 0o755, 0, 0).unwrap().ino;
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let fs = &fs;
            s.spawn(move || {
                let own = fs.mkdir(root, format!("t{t}").as_bytes(), 0o755, 0, 0).unwrap().ino;
                for i in 0..300 {
                    let n = format!("t{t}-{i}");
                    fs.create(shared, n.as_bytes(), 0o644, 0, 0).unwrap();
                    fs.create(own, n.as_bytes(), 0o644, 0, 0).unwrap();
                    if i % 3 == 0 {
                        fs.rename(shared, n.as_bytes(), own, format!("moved-{i}").as_bytes(), 0)
                            .unwrap();
                    }
                    if i % 100 == 0 {
                        fs.write_checkpoint().unwrap();
                    }
                }
            });
        }
    });
    assert_eq!(fs.read_dir(shared).unwrap().len(), 4 * 200);
    let model = Model::from_fs(&fs);
    fs.unmount().unwrap();
    fsck_clean(&img, "four threads");
    model.check(&Fs::open(&img, &[]).unwrap(), "four threads, reopened");
}

/// Random operations against the model.
mod random {
    use super::*;
    use proptest::prelude::*;

    const PARENTS: [&str; 6] = ["/", "/d1", "/d2", "/d1/d2", "/d2/d1", "/d1/d1"];
    const NAMES: [&str; 7] = [
        "d1",
        "d2",
        "f1",
        "f2",
        "s1",
        "n3",
        "a-much-longer-name-of-forty-bytes-000000",
    ];

    fn path() -> impl Strategy<Value = Vec<u8>> {
        (0..PARENTS.len(), 0..NAMES.len()).prop_map(|(p, n)| join(PARENTS[p].as_bytes(), NAMES[n].as_bytes()))
    }

    fn parent() -> impl Strategy<Value = Vec<u8>> {
        (0..PARENTS.len()).prop_map(|p| PARENTS[p].as_bytes().to_vec())
    }

    fn leaf() -> impl Strategy<Value = Vec<u8>> {
        (0..NAMES.len()).prop_map(|n| NAMES[n].as_bytes().to_vec())
    }

    fn op() -> impl Strategy<Value = Op> {
        let kinds = [FileKind::Fifo, FileKind::Socket, FileKind::CharDev, FileKind::BlockDev];
        prop_oneof![
            3 => (parent(), leaf()).prop_map(|(p, n)| Op::Create(p, n, 0o644)),
            3 => (parent(), leaf()).prop_map(|(p, n)| Op::Mkdir(p, n, 0o755)),
            1 => (parent(), leaf(), 0..4usize).prop_map(move |(p, n, k)| Op::Mknod(p, n, kinds[k], (k as u32, 7))),
            1 => (parent(), leaf(), prop_oneof![Just(1usize), Just(200), Just(3600), Just(4000)])
                .prop_map(|(p, n, len)| Op::Symlink(p, n, vec![b'l'; len])),
            2 => (path(), parent(), leaf()).prop_map(|(s, p, n)| Op::Link(s, p, n)),
            2 => (parent(), leaf()).prop_map(|(p, n)| Op::Unlink(p, n)),
            2 => (parent(), leaf()).prop_map(|(p, n)| Op::Rmdir(p, n)),
            4 => (parent(), leaf(), parent(), leaf(), prop_oneof![Just(0u32), Just(RENAME_NOREPLACE), Just(RENAME_EXCHANGE)])
                .prop_map(|(sp, sn, dp, dn, f)| Op::Rename(sp, sn, dp, dn, f)),
            1 => (path(), 0..0o777u32).prop_map(|(p, m)| Op::Chmod(p, m)),
            1 => Just(Op::Checkpoint),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        #[test]
        fn random_sequences_match_the_model(ops in proptest::collection::vec(op(), 1..60), extra in any::<bool>(), case in 0u32..1000) {
            let tmp = tempfile::tempdir().unwrap();
            let v = Variant::Uf2fs(if extra { EXTRA } else { "" });
            let img = image(tmp.path(), "random.img", v, 64 * MIB);
            let mut w = World::open(&img);
            for op in &ops {
                let _ = w.apply(op);
            }
            w.check("random sequence");
            // fsck (slow) on about one case in four.
            if case % 4 == 0 {
                w.finish(&format!("random sequence {ops:?}"));
            } else {
                w.fs.unmount().unwrap();
                w.model.check(&Fs::open(&img, &[]).unwrap(), "random sequence, reopened");
            }
        }
    }
}

/// A namespace sequence with checkpoints on a device that records every write; after
/// a power cut at any point each image opens, is fsck-clean, and holds the namespace
/// of the last checkpoint that made it to the device.
#[test]
fn power_cuts_leave_the_last_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    for v in [Variant::Uf2fs(""), Variant::Sload(EXTRA)] {
        power_cuts(v, tmp.path());
    }
}

fn batches() -> Vec<Vec<Op>> {
    let mut first = vec![Op::mkdir("/", "pc"), Op::mkdir("/pc", "sub")];
    for i in 0..250 {
        first.push(Op::create("/pc", &name(i, 12)));
    }
    first.push(Op::symlink("/pc", "long-link", &[b'x'; 4000]));
    let mut second = vec![Op::link(&format!("/pc/{}", name(1, 12)), "/pc/sub", "hard")];
    for i in (0..250).step_by(2) {
        second.push(Op::unlink("/pc", &name(i, 12)));
    }
    second.push(Op::rename("/pc", "sub", "/", "sub-moved", 0));
    second.push(Op::rename("/pc", &name(3, 12), "/sub-moved", "hard", RENAME_EXCHANGE));
    let third = vec![
        Op::unlink("/pc", "long-link"),
        Op::rmdir("/", "pc"),
        Op::Mknod(b"/".to_vec(), b"fifo".to_vec(), FileKind::Fifo, (0, 0)),
    ];
    vec![first, second, third]
}

fn power_cuts(v: Variant, tmp: &Path) {
    // sload leaves its logs in SSR mode: each moves to a free section at its first
    // write, more than a 64 MiB volume has above its reserved sections.
    let size = if matches!(v, Variant::Sload(_)) { 128 } else { 64 };
    let base = image(tmp, "pc.img", v, size * MIB);
    let dev = CrashDevice::new(std::fs::read(&base).unwrap(), 1 << 16);
    let fs = Fs::open_device_with(Box::new(dev.clone()), "crash", OpenOptions { read_write: true }).unwrap();
    let mut w = World {
        model: Model::from_fs(&fs),
        fs,
        img: base.clone(),
        ops: 0,
    };
    let mut tried = 0;
    let last = batches().len() - 1;
    for (b, batch) in batches().into_iter().enumerate() {
        let before = w.model.clone();
        let version = w.fs.last_checkpoint().checkpoint_ver;
        dev.settle();
        for op in &batch {
            let _ = w.apply(op);
        }
        let after = w.model.clone();
        if b == last {
            let after = Fs::open_device(Box::new(MemDevice::new(dev.image_now())), "after").unwrap();
            std::mem::replace(&mut w.fs, after).unmount().unwrap();
        } else {
            w.ok(Op::Checkpoint);
        }
        for (k, keep) in cuts(&dev) {
            let img = tmp.join("cut.img");
            write_sparse(&img, &dev.image_after_cut(k, &|i| keep[i]));
            let what = format!("{v:?} batch {b}, cut after flush {k}, kept {keep:?}");
            let fs = Fs::open(&img, &[]).unwrap();
            let got = fs.checkpoint().checkpoint_ver;
            if got == version {
                before.check(&fs, &what);
            } else {
                assert_eq!(got, version + 1, "{what}");
                after.check(&fs, &what);
            }
            drop(fs);
            fsck_clean_in_place(&img, &what);
            tried += 1;
        }
    }
    println!("{v:?}: {tried} cuts checked");
}

/// Writes `image` to a sparse file at `path` (only its non-zero blocks).
fn write_sparse(path: &Path, image: &[u8]) {
    use std::os::unix::fs::FileExt;
    let _ = std::fs::remove_file(path);
    let f = std::fs::File::create(path).unwrap();
    f.set_len(image.len() as u64).unwrap();
    let zero = [0u8; 4096];
    for (i, block) in image.chunks(4096).enumerate() {
        if block != &zero[..block.len()] {
            f.write_all_at(block, i as u64 * 4096).unwrap();
        }
    }
}

/// Cuts of the recorded writes: after each flush, with six prefixes of the writes in
/// flight (none and all among them: the device wrote them in order), three single
/// writes spread over the window and one seeded subset (it reordered them).
fn cuts(dev: &CrashDevice) -> Vec<(usize, Vec<bool>)> {
    let mut out = Vec::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for k in 0..=dev.flush_count() {
        let n = dev.in_flight_after(k).len();
        if n == 0 {
            out.push((k, Vec::new()));
            continue;
        }
        let mut prefixes: Vec<usize> = (0..=5).map(|p| p * n / 5).collect();
        prefixes.dedup();
        for m in prefixes {
            out.push((k, (0..n).map(|j| j < m).collect()));
        }
        for i in 0..n.min(3) {
            out.push((k, (0..n).map(|j| j == i * n / 3).collect()));
        }
        for _ in 0..1 {
            out.push((k, cuts::seeded_keep(n, &mut seed)));
        }
    }
    out
}

/// Not a check by itself: writes a namespace made by uf2fs to `$UF2FS_NS_IMAGE` and
/// the kernel-check manifest of what it must hold to `$UF2FS_NS_IMAGE.manifest`, for
/// `scripts/kernel-check.sh verify` (Linux F2FS reading uf2fs's namespace) and
/// `mount --rw` (Linux adding to uf2fs's directories).
#[test]
#[ignore]
fn kernel_fixture() {
    let Ok(out) = std::env::var("UF2FS_NS_IMAGE") else {
        return;
    };
    let features = std::env::var("UF2FS_NS_FEATURES").unwrap_or_default();
    let features: &'static str = Box::leak(features.into_boxed_str());
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "fixture.img", Variant::Uf2fs(features), 256 * MIB);
    let mut w = World::open(&img);
    for d in ["inline", "big", "deep", "links"] {
        w.ok(Op::mkdir("/", d));
    }
    w.ok(Op::create("/inline", "one"));
    for i in 0..1500 {
        w.ok(Op::create("/big", &name(i, 6 + i % 40)));
    }
    for i in (0..1500).step_by(5) {
        w.ok(Op::unlink("/big", &name(i, 6 + i % 40)));
    }
    let mut p = String::from("/deep");
    for d in 0..30 {
        w.ok(Op::mkdir(&p, &format!("d{d}")));
        p = format!("{p}/d{d}");
    }
    w.ok(Op::symlink("/links", "short", b"../inline/one"));
    w.ok(Op::symlink("/links", "long", &[b'y'; 4000]));
    w.ok(Op::link("/inline/one", "/links", "hard"));
    for (i, (kind, rdev)) in [
        (FileKind::Fifo, (0, 0)),
        (FileKind::Socket, (0, 0)),
        (FileKind::CharDev, (1, 3)),
        (FileKind::BlockDev, (259, 70_000)),
    ]
    .into_iter()
    .enumerate()
    {
        w.ok(Op::Mknod(
            b"/links".to_vec(),
            format!("node{i}").into_bytes(),
            kind,
            rdev,
        ));
    }
    w.ok(Op::rename("/deep/d0/d1", "d2", "/", "moved", 0));
    w.ok(Op::rename("/inline", "one", "/big", &name(0, 6), RENAME_NOREPLACE));
    let manifest = manifest(&w.model);
    w.finish("kernel fixture");
    std::fs::copy(&img, &out).unwrap();
    std::fs::write(format!("{out}.manifest"), manifest).unwrap();
}

/// The kernel-check manifest of a model: path, type, mode, link count, owner, group,
/// size (symlinks), target; "-" for what the model does not know.
fn manifest(m: &Model) -> String {
    let mut out = String::new();
    for (p, n) in &m.nodes {
        let ty = match n.kind {
            FileKind::File => "f",
            FileKind::Dir => "d",
            FileKind::Symlink => "l",
            FileKind::CharDev => "c",
            FileKind::BlockDev => "b",
            FileKind::Fifo => "p",
            FileKind::Socket => "s",
        };
        let size = match n.kind {
            FileKind::Symlink => n.target.len().to_string(),
            _ => "-".into(),
        };
        let target = if n.kind == FileKind::Symlink {
            String::from_utf8_lossy(&n.target).into_owned()
        } else {
            "-".into()
        };
        let path = String::from_utf8_lossy(p);
        let nlink = m.nlink(p);
        out.push_str(&format!(
            "{path}\t{ty}\t{:04o}\t{nlink}\t0\t0\t{size}\t-\t-\t{target}\t-\t-\n",
            n.perm
        ));
    }
    out
}

/// Not a check by itself: with `$UF2FS_NS_IMAGE` naming an image Linux F2FS wrote
/// (say, the fixture after `kernel-check.sh mount --rw`), changes every directory of
/// its root with uf2fs (names added, half of the files removed, a directory made and
/// one moved in), then unmounts and judges the result with fsck and the model.
#[test]
#[ignore]
fn kernel_image_round_trip() {
    let Ok(src) = std::env::var("UF2FS_NS_IMAGE") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("roundtrip.img");
    std::fs::copy(&src, &img).unwrap();
    let mut w = World::open(&img);
    let dirs: Vec<String> = w
        .model
        .nodes
        .iter()
        .filter(|(p, n)| n.kind == FileKind::Dir && p.len() > 1 && !p[1..].contains(&b'/'))
        .map(|(p, _)| String::from_utf8_lossy(p).into_owned())
        .collect();
    for (k, d) in dirs.iter().enumerate() {
        for i in 0..60 {
            w.ok(Op::create(d, &format!("uf2fs-{i}")));
        }
        let files: Vec<Vec<u8>> = w
            .model
            .nodes
            .iter()
            .filter(|(p, n)| n.kind == FileKind::File && p.starts_with(format!("{d}/").as_bytes()))
            .map(|(p, _)| p[d.len() + 1..].to_vec())
            .filter(|n| !n.contains(&b'/'))
            .collect();
        for f in files.iter().step_by(2) {
            w.ok(Op::Unlink(d.as_bytes().to_vec(), f.clone()));
        }
        w.ok(Op::mkdir(d, "uf2fs-dir"));
        if k > 0 {
            w.ok(Op::rename(&dirs[k - 1], "uf2fs-dir", d, "uf2fs-moved", 0));
        }
    }
    let manifest = manifest(&w.model);
    let text = w.finish("uf2fs changing an image Linux wrote");
    println!("{text}");
    std::fs::copy(&img, format!("{src}.roundtrip")).unwrap();
    std::fs::write(format!("{src}.roundtrip.manifest"), manifest).unwrap();
}

#[test]
fn unlinking_large_files_frees_their_node_trees() {
    let tmp = tempfile::tempdir().unwrap();
    // The loaded tree: a file of direct nodes and one reaching an indirect node (sload
    // 1.15 corrupts such files on flexible_inline_xattr images: default features only).
    let tree = tmp.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let block = |i: u32| -> Vec<u8> { (0..4096u32).map(|k| (i.wrapping_mul(31) ^ k) as u8).collect() };
    for (name, blocks) in [("direct", 1500u32), ("indirect", 3200)] {
        let data: Vec<u8> = (0..blocks).flat_map(block).collect();
        std::fs::write(tree.join(name), data).unwrap();
    }
    let img = image(tmp.path(), "large.img", Variant::Sload(""), 256 * MIB);
    let mut w = World::open(&img);
    let free_before = w.fs.statfs().unwrap().blocks_free;
    w.ok(Op::link("/indirect", "/", "second-name"));
    w.ok(Op::unlink("/", "direct"));
    w.ok(Op::unlink("/", "indirect"));
    w.check("one link left");
    w.ok(Op::unlink("/", "second-name"));
    let freed = w.fs.statfs().unwrap().blocks_free - free_before;
    // Data blocks, direct nodes, the indirect node and the inodes.
    assert!(freed >= 1500 + 3200 + 5, "only {freed} blocks freed");
    w.finish("large files unlinked");
}
