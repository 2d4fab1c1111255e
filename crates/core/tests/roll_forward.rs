//! Roll-forward fsync and recovery, judged from outside (f2fs-tools 1.15 must be
//! installed: these tests fail, not skip, without it).
//!
//! An fsync of a regular file writes its data and direct nodes with the fsync mark
//! and no checkpoint; a power cut right after it leaves an image whose read-write open
//! replays them: new files come back under their names, changed files with their
//! fsync'd contents, sizes, holes, inline data and xattrs; the image is then
//! fsck-clean and reads the same read-only. The cases Linux checkpoints for (a renamed
//! file, a hard link, a directory, `fsync_mode=strict`) still write a checkpoint.

#[path = "common/oracle.rs"]
mod oracle;
#[path = "common/volume.rs"]
mod volume;

use uf2fs_core::{Fs, FsyncMode};
use volume::{fresh_image, fsck_clean, open_rw, pattern, read_all};

const MIB: u64 = 1 << 20;
const EXTRA: &str = "extra_attr,inode_checksum,flexible_inline_xattr,inode_crtime";

/// Whether the image's warm node log holds an fsync'd node after its checkpoint.
fn has_fsync_chain(image: &[u8]) -> bool {
    let dev = uf2fs_core::device::MemDevice::new(image.to_vec());
    let sbc = uf2fs_core::checkpoint::load_superblock(&dev).unwrap();
    let cps = uf2fs_core::checkpoint::load_checkpoint(&dev, &sbc.sb).unwrap();
    uf2fs_core::checkpoint::roll_forward::find_fsync_node(&dev, &sbc.sb, &cps)
        .unwrap()
        .is_some()
}

/// What must come back: path -> (contents, xattr).
type Want = Vec<(&'static str, Vec<u8>, Option<(&'static [u8], Vec<u8>)>)>;

fn check(fs: &Fs, want: &Want, what: &str) {
    for (name, data, xattr) in want {
        let ino = fs
            .lookup(fs.root(), name.as_bytes())
            .unwrap_or_else(|e| panic!("{what}: {name}: {e}"));
        let got = read_all(fs, ino);
        assert_eq!(got.len(), data.len(), "{what}: size of {name}");
        assert!(got == *data, "{what}: contents of {name}");
        if let Some((k, v)) = xattr {
            assert_eq!(
                fs.get_xattr(ino, k).unwrap().as_ref(),
                Some(v),
                "{what}: xattr of {name}"
            );
        }
    }
}

fn fsync_then_power_cut(features: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = open_rw(fresh_image(tmp.path(), features, 256 * MIB));
    let root = fs.root();
    // Checkpointed first: a multi-block file, an inline one.
    let old = fs.create(root, b"old", 0o644, 0, 0).unwrap().ino;
    let mut old_data = pattern(1, 3 * MIB as usize);
    fs.write(old, 0, &old_data).unwrap();
    let inl = fs.create(root, b"inline", 0o600, 0, 0).unwrap().ino;
    fs.write(inl, 0, b"small inline file").unwrap();
    let shrunk = fs.create(root, b"shrunk", 0o644, 0, 0).unwrap().ino;
    fs.write(shrunk, 0, &pattern(13, 9 * MIB as usize)).unwrap();
    let gone = fs.create(root, b"replaced", 0o644, 0, 0).unwrap().ino;
    fs.write(gone, 0, &pattern(9, 20_000)).unwrap();
    fs.write_checkpoint().unwrap();
    let version = fs.last_checkpoint().checkpoint_ver;

    let mut want: Want = Vec::new();
    // New files: one direct node, past the first indirect node, sparse, with an xattr.
    let new = fs.create(root, b"new", 0o644, 0, 0).unwrap().ino;
    let new_data = pattern(2, 5 * MIB as usize + 123);
    fs.write(new, 0, &new_data).unwrap();
    let big = fs.create(root, b"big", 0o644, 0, 0).unwrap().ino;
    let big_data = pattern(3, 13 * MIB as usize);
    fs.write(big, 0, &big_data).unwrap();
    let holes = fs.create(root, b"holes", 0o644, 0, 0).unwrap().ino;
    fs.write(holes, 8 * MIB, &pattern(4, 4096)).unwrap();
    let mut holes_data = vec![0u8; 8 * MIB as usize];
    holes_data.extend(pattern(4, 4096));
    let xa = fs.create(root, b"xattr", 0o644, 0, 0).unwrap().ino;
    fs.set_xattr(xa, b"user.note", &pattern(5, 300), 0).unwrap();
    fs.write(xa, 0, b"with an xattr").unwrap();
    // Changed: overwritten in place and appended; inline grown, still inline.
    old_data[MIB as usize..MIB as usize + 12288].copy_from_slice(&pattern(6, 12288));
    fs.write(old, MIB, &pattern(6, 12288)).unwrap();
    fs.write(old, old_data.len() as u64, &pattern(7, 200_000)).unwrap();
    old_data.extend(pattern(7, 200_000));
    fs.write(inl, 17, b", grown after the checkpoint").unwrap();
    // Cut to 100,000 bytes (freeing its direct nodes past that), then grown again with
    // a hole: the old blocks must not come back.
    fs.truncate(shrunk, 100_000).unwrap();
    fs.truncate(shrunk, 8 * MIB).unwrap();
    fs.write(shrunk, 7 * MIB, b"after the hole").unwrap();
    let mut shrunk_data = pattern(13, 100_000);
    shrunk_data.resize(7 * MIB as usize, 0);
    shrunk_data.extend(b"after the hole");
    shrunk_data.resize(8 * MIB as usize, 0);
    // A shrunk file's fsync writes empty direct nodes over the ones it freed.
    for ino in [new, big, holes, xa, old, inl, shrunk] {
        fs.fsync(ino, false).unwrap();
    }
    assert_eq!(
        fs.last_checkpoint().checkpoint_ver,
        version,
        "fsync of regular files wrote a checkpoint"
    );
    // fsync'd twice, changed in between.
    let twice = fs.create(root, b"twice", 0o644, 0, 0).unwrap().ino;
    fs.write(twice, 0, &pattern(8, 40_000)).unwrap();
    fs.fsync(twice, true).unwrap();
    fs.write(twice, 40_000, &pattern(10, 70_000)).unwrap();
    fs.fsync(twice, false).unwrap();
    let mut twice_data = pattern(8, 40_000);
    twice_data.extend(pattern(10, 70_000));
    // Written but not fsync'd: may or may not come back.
    let loose = fs.create(root, b"loose", 0o644, 0, 0).unwrap().ino;
    fs.write(loose, 0, &pattern(11, 50_000)).unwrap();
    want.push(("new", new_data, None));
    want.push(("big", big_data, None));
    want.push(("holes", holes_data, None));
    want.push((
        "xattr",
        b"with an xattr".to_vec(),
        Some((b"user.note", pattern(5, 300))),
    ));
    want.push(("old", old_data, None));
    want.push((
        "inline",
        b"small inline file, grown after the checkpoint".to_vec(),
        None,
    ));
    want.push(("twice", twice_data, None));
    want.push(("replaced", pattern(9, 20_000), None));
    want.push(("shrunk", shrunk_data, None));
    // The power cut: everything up to the last flush, nothing after.
    let image = dev.image_after_cut(dev.flush_count(), &|_| false);
    drop(fs);
    assert!(has_fsync_chain(&image), "no fsync'd node after the checkpoint");

    let (fs, dev) = open_rw(image);
    assert!(
        fs.last_checkpoint().checkpoint_ver > version,
        "recovery wrote no checkpoint"
    );
    check(&fs, &want, "after recovery");
    // The volume goes on working.
    let after = fs.create(root, b"after", 0o644, 0, 0).unwrap().ino;
    fs.write(after, 0, &pattern(12, 300_000)).unwrap();
    fs.unmount().unwrap();
    let image = dev.image_now();
    fsck_clean(tmp.path(), &image, "recovery and unmount");
    let ro = Fs::open_device(Box::new(uf2fs_core::device::MemDevice::new(image)), "ro").unwrap();
    check(&ro, &want, "read-only after unmount");
}

#[test]
fn fsynced_files_survive_a_power_cut() {
    fsync_then_power_cut("");
}

#[test]
fn fsynced_files_survive_a_power_cut_with_extra_attributes() {
    fsync_then_power_cut(EXTRA);
}

/// A power cut after fsync at every flush of a run of fsyncs: each fsync that
/// returned before the cut is there in full, and every image is fsck-clean after
/// recovery.
#[test]
fn every_fsync_before_the_cut_survives() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = open_rw(fresh_image(tmp.path(), EXTRA, 128 * MIB));
    let root = fs.root();
    fs.write_checkpoint().unwrap();
    dev.settle();
    // (flushes done when it returned, name, contents)
    let mut done: Vec<(usize, String, Vec<u8>)> = Vec::new();
    for i in 0..12u8 {
        let name = format!("f{i}");
        let ino = fs.create(root, name.as_bytes(), 0o644, 0, 0).unwrap().ino;
        let data = pattern(i, 3000 + 9000 * i as usize);
        fs.write(ino, 0, &data).unwrap();
        fs.fsync(ino, false).unwrap();
        done.push((dev.flush_count(), name, data));
    }
    drop(fs);
    for cut in 0..=dev.flush_count() {
        for keep_all in [false, true] {
            let image = dev.image_after_cut(cut, &|_| keep_all);
            let what = format!("cut at flush {cut} (in-flight writes kept: {keep_all})");
            let (fs, dev2) = open_rw(image);
            for (flushes, name, data) in &done {
                if *flushes > cut {
                    continue;
                }
                let ino = fs
                    .lookup(root, name.as_bytes())
                    .unwrap_or_else(|e| panic!("{what}: {name}: {e}"));
                assert!(read_all(&fs, ino) == *data, "{what}: {name}");
            }
            fs.unmount().unwrap();
            fsck_clean(tmp.path(), &dev2.image_now(), &what);
        }
    }
}

/// Truncates, punched and zeroed ranges and an inline file grown out of its inode,
/// each fsync'd by roll-forward (issue 28), on both feature sets: after a power cut
/// nothing freed comes back: not the checkpoint's direct nodes a shrink freed, nor the
/// ones an earlier fsync wrote after the checkpoint and a later shrink freed (both
/// under a hole of a regrown file), nor punched or zeroed blocks. No checkpoint is
/// written until the cut; the recovered image is fsck-clean, and its free space is what
/// the same changes leave without a crash, less the empty direct nodes recovery keeps.
#[test]
fn freed_blocks_stay_freed_after_roll_forward() {
    for features in ["", EXTRA] {
        let tmp = tempfile::tempdir().unwrap();
        let (fs, dev) = open_rw(fresh_image(tmp.path(), features, 128 * MIB));
        let root = fs.root();
        let mk = |name: &[u8], seed: u8, len: u64| {
            let ino = fs.create(root, name, 0o644, 0, 0).unwrap().ino;
            fs.write(ino, 0, &pattern(seed, len as usize)).unwrap();
            ino
        };
        let cut = mk(b"cut", 1, 12 * MIB);
        let late = mk(b"late", 2, 100_000);
        let punched = mk(b"punched", 3, 9 * MIB);
        let zeroed = mk(b"zeroed", 4, 6 * MIB);
        let inl = mk(b"inline", 5, 100);
        fs.write_checkpoint().unwrap();
        let version = fs.last_checkpoint().checkpoint_ver;
        // Direct nodes written after the checkpoint by an fsync, then freed.
        fs.write(late, 10 * MIB, &pattern(6, 3 * MIB as usize)).unwrap();
        fs.fsync(late, false).unwrap();
        fs.truncate(late, 50_000).unwrap();
        fs.write(late, 14 * MIB, b"past the hole").unwrap();
        let mut late_data = pattern(2, 50_000);
        late_data.resize(14 * MIB as usize, 0);
        late_data.extend(b"past the hole");
        // The checkpoint's direct nodes freed, the file regrown by a truncate up.
        fs.truncate(cut, 3000).unwrap();
        fs.truncate(cut, 11 * MIB + 5).unwrap();
        let mut cut_data = pattern(1, 3000);
        cut_data.resize(11 * MIB as usize + 5, 0);
        // A hole over the inode's addresses, a whole direct node and part of the next.
        use uf2fs_core::{FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE};
        fs.fallocate(punched, 100_000, 7 * MIB, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)
            .unwrap();
        let mut punched_data = pattern(3, 9 * MIB as usize);
        punched_data[100_000..100_000 + 7 * MIB as usize].fill(0);
        fs.fallocate(zeroed, 5000, 5 * MIB, FALLOC_FL_ZERO_RANGE).unwrap();
        let mut zeroed_data = pattern(4, 6 * MIB as usize);
        zeroed_data[5000..5000 + 5 * MIB as usize].fill(0);
        // O_TRUNC, then out of the inode.
        fs.truncate(inl, 0).unwrap();
        fs.write(inl, 0, &pattern(7, 20_000)).unwrap();
        for ino in [late, cut, punched, zeroed, inl] {
            fs.fsync(ino, false).unwrap();
        }
        assert_eq!(
            fs.last_checkpoint().checkpoint_ver,
            version,
            "{features:?}: a checkpoint"
        );
        let want: Want = vec![
            ("cut", cut_data, None),
            ("late", late_data, None),
            ("punched", punched_data, None),
            ("zeroed", zeroed_data, None),
            ("inline", pattern(7, 20_000), None),
        ];
        check(&fs, &want, "before the cut");
        let fsynced = dev.flush_count();
        fs.sync_fs().unwrap();
        let free_no_crash = fs.statfs().unwrap().blocks_free;
        // The cut right after the last fsync, before the sync's checkpoint.
        let image = dev.image_after_cut(fsynced, &|_| false);
        drop(fs);
        assert!(has_fsync_chain(&image));
        let (fs, dev) = open_rw(image);
        check(&fs, &want, &format!("{features:?}: after recovery"));
        // Recovery keeps the checkpoint's freed direct nodes under a regrown file's hole
        // as empty nodes (as Linux's does: it replays the records over them), at most
        // those of `cut` (two under the inode's first indirect node's range) and `late`;
        // every data block freed stays free.
        let free = fs.statfs().unwrap().blocks_free;
        assert!(
            free <= free_no_crash && free_no_crash - free <= 4,
            "{features:?}: {free} free blocks after recovery, {free_no_crash} without a crash"
        );
        fs.unmount().unwrap();
        fsck_clean(tmp.path(), &dev.image_now(), "recovered truncates and holes");
    }
}

/// What Linux checkpoints for still checkpoints: a renamed file, a file with two
/// links, a directory, a file in a directory not yet checkpointed; so do a file below a
/// directory renamed since the checkpoint (stricter than Linux) and every fsync under
/// `fsync_mode=strict`; a shrunk, grown or punched file does not (issue 28).
#[test]
fn fsync_checkpoints_where_the_kernel_does() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, _dev) = open_rw(fresh_image(tmp.path(), "", 64 * MIB));
    let root = fs.root();
    let d = fs.mkdir(root, b"d", 0o755, 0, 0).unwrap().ino;
    fs.write_checkpoint().unwrap();
    let ver = || fs.last_checkpoint().checkpoint_ver;
    let a = fs.create(root, b"a", 0o644, 0, 0).unwrap().ino;
    fs.write(a, 0, b"a").unwrap();
    let v = ver();
    fs.fsync(a, false).unwrap();
    assert_eq!(ver(), v, "a new file in a checkpointed directory");
    fs.rename(root, b"a", root, b"b", 0).unwrap();
    fs.fsync(a, false).unwrap();
    assert_eq!(ver(), v + 1, "a renamed file");
    fs.link(a, root, b"c").unwrap();
    fs.fsync(a, false).unwrap();
    assert_eq!(ver(), v + 2, "two links");
    fs.fsync(d, false).unwrap();
    assert_eq!(ver(), v + 3, "a directory");
    let e = fs.create(d, b"e", 0o644, 0, 0).unwrap().ino;
    fs.fsync(e, false).unwrap();
    assert_eq!(ver(), v + 3, "a file in a checkpointed directory");
    let d2 = fs.mkdir(root, b"d2", 0o755, 0, 0).unwrap().ino;
    let f = fs.create(d2, b"f", 0o644, 0, 0).unwrap().ino;
    fs.fsync(f, false).unwrap();
    assert_eq!(ver(), v + 4, "a file in a directory not yet checkpointed");
    let g = fs.create(d, b"g", 0o644, 0, 0).unwrap().ino;
    fs.write(g, 0, &pattern(1, 30_000)).unwrap();
    fs.truncate(g, 10).unwrap();
    fs.fsync(g, false).unwrap();
    assert_eq!(ver(), v + 4, "a shrunk file");
    fs.truncate(g, 1_000_000).unwrap();
    fs.fsync(g, false).unwrap();
    assert_eq!(ver(), v + 4, "a grown file");
    fs.fallocate(
        g,
        4096,
        8192,
        uf2fs_core::FALLOC_FL_PUNCH_HOLE | uf2fs_core::FALLOC_FL_KEEP_SIZE,
    )
    .unwrap();
    fs.fsync(g, false).unwrap();
    assert_eq!(ver(), v + 4, "a punched file");
    fs.rename(root, b"d2", d, b"moved", 0).unwrap();
    fs.fsync(g, false).unwrap();
    assert_eq!(ver(), v + 5, "a directory renamed since the checkpoint");
    let mut s = fs.settings();
    s.fsync_mode = FsyncMode::Strict;
    fs.set_settings(s).unwrap();
    fs.write(g, 0, b"strict").unwrap();
    fs.fsync(g, false).unwrap();
    assert_eq!(ver(), v + 6, "fsync_mode=strict");
}

/// A fresh volume's checkpoint is an unmount checkpoint; an fsync after it (the mount
/// wrote no checkpoint of its own) is recovered all the same, and files created but
/// not fsync'd are not.
#[test]
fn an_fsync_after_an_unmount_checkpoint_is_recovered() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = open_rw(fresh_image(tmp.path(), "", 64 * MIB));
    let root = fs.root();
    let a = fs.create(root, b"a", 0o644, 0, 0).unwrap().ino;
    fs.create(root, b"b", 0o644, 0, 0).unwrap();
    fs.write(a, 0, b"fsync'd").unwrap();
    fs.fsync(a, false).unwrap();
    let image = dev.image_now();
    drop(fs);
    assert!(has_fsync_chain(&image));
    let (fs, dev) = open_rw(image);
    let a = fs.lookup(root, b"a").unwrap();
    assert_eq!(read_all(&fs, a), b"fsync'd");
    assert!(fs.lookup(root, b"b").is_err(), "b was never fsync'd");
    fs.unmount().unwrap();
    fsck_clean(tmp.path(), &dev.image_now(), "recovered after an unmount checkpoint");
}

/// A power cut during recovery itself (at any flush of the recovering open, with none,
/// all or some of the writes in flight): the next open recovers again, with every
/// fsync'd file, and the image is fsck-clean after it.
#[test]
fn a_power_cut_during_recovery_recovers_again() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = open_rw(fresh_image(tmp.path(), EXTRA, 128 * MIB));
    let root = fs.root();
    fs.write_checkpoint().unwrap();
    let mut want: Vec<(String, Vec<u8>)> = Vec::new();
    for i in 0..40u8 {
        let name = format!("f{i}");
        let ino = fs.create(root, name.as_bytes(), 0o644, 0, 0).unwrap().ino;
        let data = pattern(i, 1000 + 37_000 * (i as usize % 7));
        fs.write(ino, 0, &data).unwrap();
        fs.fsync(ino, false).unwrap();
        want.push((name, data));
    }
    let crashed = dev.image_now();
    drop(fs);
    // The recovering open, recorded.
    let (fs, rec) = open_rw(crashed);
    drop(fs);
    let cuts = {
        let mut seed = 0x5851_f42d_4c95_7f2du64;
        let mut v = Vec::new();
        for k in 0..=rec.flush_count() {
            let n = rec.in_flight_after(k).len();
            v.push((k, vec![false; n]));
            v.push((k, vec![true; n]));
            v.push((
                k,
                (0..n)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        seed & 1 == 1
                    })
                    .collect(),
            ));
        }
        v
    };
    assert!(cuts.len() >= 9, "{} cuts", cuts.len());
    for (k, keep) in cuts {
        let what = format!(
            "cut at flush {k} of the recovering open, kept {} of {}",
            keep.iter().filter(|x| **x).count(),
            keep.len()
        );
        let image = rec.image_after_cut(k, &|i| keep[i]);
        let (fs, dev2) = open_rw(image);
        for (name, data) in &want {
            let ino = fs
                .lookup(root, name.as_bytes())
                .unwrap_or_else(|e| panic!("{what}: {name}: {e}"));
            assert!(read_all(&fs, ino) == *data, "{what}: {name}");
        }
        fs.unmount().unwrap();
        fsck_clean(tmp.path(), &dev2.image_now(), &what);
    }
}

/// Every xattr removed (the xattr node freed), then an fsync by roll-forward and a
/// power cut: the xattrs stay removed after recovery (the recovered inode's xattr node
/// id is the fsync'd one, none).
#[test]
fn removed_xattrs_stay_removed_after_roll_forward() {
    for features in ["", EXTRA] {
        let tmp = tempfile::tempdir().unwrap();
        let (fs, dev) = open_rw(fresh_image(tmp.path(), features, 64 * MIB));
        let ino = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
        fs.write(ino, 0, b"data").unwrap();
        let big = vec![b'v'; 900];
        for k in 0..4 {
            fs.set_xattr(ino, format!("user.k{k}").as_bytes(), &big, 0).unwrap();
        }
        fs.write_checkpoint().unwrap();
        for k in 0..4 {
            fs.remove_xattr(ino, format!("user.k{k}").as_bytes()).unwrap();
        }
        fs.write(ino, 4, b"more").unwrap();
        fs.fsync(ino, false).unwrap();
        let fsynced = dev.flush_count();
        let image = dev.image_after_cut(fsynced, &|_| false);
        drop(fs);
        assert!(
            has_fsync_chain(&image),
            "{features:?}: the fsync was a roll-forward record"
        );
        let (fs, dev) = open_rw(image);
        let ino = fs.lookup(fs.root(), b"f").unwrap();
        assert_eq!(read_all(&fs, ino), b"datamore", "{features:?}");
        for k in 0..4 {
            assert_eq!(
                fs.get_xattr(ino, format!("user.k{k}").as_bytes()).unwrap(),
                None,
                "{features:?}: user.k{k} came back after recovery"
            );
        }
        fs.unmount().unwrap();
        fsck_clean(tmp.path(), &dev.image_now(), "recovered xattr removal");
    }
}

#[allow(dead_code)]
#[path = "../../../fuzz/src/image.rs"]
mod image;

/// An image of mkfs.f2fs and sload.f2fs records its logs in SSR mode: uf2fs moves the
/// warm node log to a free segment before its first node block, and a node written
/// there is out of reach of recovery, which starts at the checkpoint's position of the
/// log and follows the node footers. The first fsync then writes a checkpoint, and the
/// file is there after a power cut.
#[test]
fn fsync_on_an_sload_image_with_ssr_logs_survives_a_power_cut() {
    use std::sync::Arc;
    use uf2fs_core::device::OverlayDevice;
    let img = image::damaged_image_with(0, |_| {});
    let overlay = OverlayDevice::new(Arc::new(img));
    let fs = Fs::open_device_with(
        Box::new(overlay.clone()),
        "sload",
        uf2fs_core::OpenOptions { read_write: true },
    )
    .unwrap();
    assert!(
        fs.checkpoint().alloc_type[4] != 0,
        "the base image's warm node log is in SSR mode"
    );
    let root = fs.root();
    let st = fs.create(root, b"a", 0o644, 0, 0).unwrap();
    let data = pattern(7, 8192);
    assert_eq!(fs.write(st.ino, 0, &data).unwrap(), data.len());
    fs.fsync(st.ino, false).unwrap();
    drop(fs);
    use uf2fs_core::device::BlockDevice;
    let mut crashed = vec![0u8; overlay.block_count() as usize * overlay.block_size()];
    overlay.read_blocks(0, &mut crashed).unwrap();
    let dir = tempfile::tempdir().unwrap();
    fsck_clean(dir.path(), &crashed, "an sload image after fsync and a power cut");
    let again = Fs::open_device(Box::new(overlay), "sload").unwrap();
    let a = again
        .lookup(again.root(), b"a")
        .expect("a file fsync'd on an sload image is there after a power cut");
    assert_eq!(read_all(&again, a), data);
}

/// The first of the last main segments, which fsck.f2fs 1.15 refuses in the
/// roll-forward chain: it counts the main area's segments from `segment0_blkaddr`
/// (`MAX_BLKADDR` with `TOTAL_SEGS` the main segments), which stops
/// `(main_blkaddr - segment0_blkaddr) / blocks_per_seg` segments short of its end.
fn fsck_limit(fs: &Fs) -> u32 {
    let sb = fs.superblock();
    sb.segment_count_main - (sb.main_blkaddr - sb.segment0_blkaddr) / sb.blocks_per_seg()
}

/// Moves a log into the last main segments (`at(fs)`: its segment in the last
/// checkpoint): rounds of a file `write(fs, file, round)` writes, checkpointed, then
/// deleted and checkpointed, until it gets there.
fn move_log_into_tail(fs: &Fs, at: &dyn Fn(&Fs) -> u32, write: &dyn Fn(&Fs, uf2fs_core::Ino, usize)) {
    let root = fs.root();
    for round in 0..400 {
        if at(fs) >= fsck_limit(fs) {
            return;
        }
        let name = format!("fill{round}");
        let f = fs.create(root, name.as_bytes(), 0o644, 0, 0).unwrap().ino;
        write(fs, f, round);
        fs.write_checkpoint().unwrap();
        fs.unlink(root, name.as_bytes()).unwrap();
        fs.write_checkpoint().unwrap();
    }
    panic!("the log did not reach the last main segments");
}

/// Moves the warm data log into the last main segments.
fn warm_data_into_tail(fs: &Fs) {
    move_log_into_tail(fs, &|fs| fs.last_checkpoint().cur_data_segno[1], &|fs, f, round| {
        fs.write(f, 0, &pattern(round as u8, 2 * MIB as usize)).unwrap();
    });
}

/// After a power cut right after the fsync of `f` (which must have written a
/// checkpoint, `image` the device then): fsck-clean, and `f` there with `data`.
fn fsynced_by_checkpoint(dir: &std::path::Path, image: Vec<u8>, name: &[u8], data: &[u8], what: &str) {
    assert!(!has_fsync_chain(&image), "{what}: the fsync wrote a checkpoint");
    fsck_clean(dir, &image, what);
    let (fs, _dev) = open_rw(image);
    let f = fs.lookup(fs.root(), name).expect("the fsync'd file is there");
    assert!(read_all(&fs, f) == data, "{what}: the fsync'd contents");
}

/// fsck.f2fs (1.15) checks the blocks of the fsync'd chain and the data addresses of
/// its direct nodes against an end of the main area it computes as
/// `segment0_blkaddr + segment_count_main * blocks_per_seg` (see [`fsck_limit`]), so
/// it refuses (`record_fsync_data failed`) a recovered data block in the last main
/// segments, which Linux's recovery accepts. Found through FUSE: a checkpoint ioctl
/// moved the warm data log so that the first stream log of the writeback contexts
/// opened in the last main segment; an atomic commit (an fsync) there and `kill -9`
/// left an image fsck.f2fs refuses. fsync writes a checkpoint instead when one of the
/// nodes it writes (or a data block they point at) lies there.
#[test]
fn fsync_with_data_in_the_last_main_segments_is_fsck_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = open_rw(fresh_image(tmp.path(), "", 128 * MIB));
    warm_data_into_tail(&fs);
    let f = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
    let data = pattern(5, 12288);
    fs.write(f, 0, &data).unwrap();
    fs.fsync(f, false).unwrap();
    let image = dev.image_now();
    drop(fs);
    fsynced_by_checkpoint(tmp.path(), image, b"f", &data, "fsync'd data in the last main segments");
}

/// The same for a data block in the last main segments that a direct node written
/// before the fsync points at: written to the warm node log between checkpoints (more
/// than 4096 dirty nodes), it is in the chain, and fsck.f2fs checks every node of an
/// fsync'd inode there, not only those the fsync wrote. The fsync itself writes only
/// the inode, which points at no block there.
#[test]
fn fsync_after_a_node_pointing_into_the_last_main_segments_is_fsck_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = open_rw(fresh_image(tmp.path(), "", 128 * MIB));
    warm_data_into_tail(&fs);
    let root = fs.root();
    let f = fs.create(root, b"f", 0o644, 0, 0).unwrap().ino;
    // Past the inode's 923 addresses: in the first direct node.
    let at = 1000 * 4096;
    fs.write(f, at, &pattern(6, 8192)).unwrap();
    fs.write_checkpoint().unwrap();
    fs.write(f, at, &pattern(7, 8192)).unwrap();
    fs.writeback().unwrap();
    // Dirty nodes past the bound: every one is written out, the direct node too.
    for i in 0..4200 {
        fs.create(root, format!("n{i}").as_bytes(), 0o644, 0, 0).unwrap();
    }
    fs.truncate(f, at + 3 * 8192).unwrap();
    fs.fsync(f, false).unwrap();
    let image = dev.image_now();
    drop(fs);
    let mut data = vec![0u8; at as usize];
    data.extend(pattern(7, 8192));
    data.extend(vec![0u8; 2 * 8192]);
    fsynced_by_checkpoint(
        tmp.path(),
        image,
        b"f",
        &data,
        "an fsync after a direct node into the last main segments",
    );
}

/// fsck.f2fs 1.15 stops following the chain, without a word, at a node block in the
/// last main segments: an fsync while the warm node log is there writes a checkpoint
/// (fsck would pass, but it would not see the fsync'd nodes that Linux recovers).
#[test]
fn fsync_with_the_warm_node_log_in_the_last_main_segments_writes_a_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = open_rw(fresh_image(tmp.path(), "", 128 * MIB));
    // Sparse files of 300 direct nodes each: 300 node blocks a round.
    move_log_into_tail(&fs, &|fs| fs.last_checkpoint().cur_node_segno[1], &|fs, f, round| {
        for k in 0..300u64 {
            fs.write(f, k * 1018 * 4096 + 923 * 4096, &[round as u8; 16]).unwrap();
        }
    });
    assert!(
        fs.last_checkpoint().cur_data_segno[1] < fsck_limit(&fs),
        "the warm data log stayed out of the last main segments"
    );
    let f = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
    let data = pattern(8, 12288);
    fs.write(f, 0, &data).unwrap();
    fs.fsync(f, false).unwrap();
    let image = dev.image_now();
    drop(fs);
    fsynced_by_checkpoint(
        tmp.path(),
        image,
        b"f",
        &data,
        "an fsync with the warm node log in the last main segments",
    );
}
