//! Orphan inodes and read-write reopening after a crash, judged from outside
//! (f2fs-tools 1.15 must be installed: these tests fail, not skip, without it).
//!
//! - An open inode that loses its last link (unlink, rmdir, rename over it) keeps its
//!   data and keeps working through its number until its last release, which frees
//!   it; meanwhile every checkpoint lists it in its orphan blocks, and such images are
//!   fsck-clean; unmount frees what is still open.
//! - A read-write open frees the orphans its checkpoint lists; power cuts before and
//!   during the checkpoint that records it leave images that reopen and reclaim again.
//! - An image cut after uf2fs wrote but before its next checkpoint reopens read-write
//!   at its last checkpoint; nodes in its warm node log are replayed by roll-forward
//!   recovery exactly when the kernel's rules say so (tests/roll_forward.rs has the
//!   fsync side).

#[path = "common/cuts.rs"]
mod cuts;

#[path = "common/oracle.rs"]
mod oracle;
#[path = "common/volume.rs"]
mod volume;

use std::collections::BTreeMap;
use uf2fs_core::device::MemDevice;
use uf2fs_core::{Error, Fs, Ino};
use uf2fs_format::checkpoint::{checkpoint_crc, CP_CRC_RECOVERY_FLAG, CP_ORPHAN_PRESENT_FLAG, CP_UMOUNT_FLAG};
use uf2fs_format::le::{put_u32, put_u64, u32_at};
use volume::{fresh_image, fsck_clean, open_rw, pattern, read_all, RW};

const MIB: u64 = 1 << 20;
const EXTRA: &str = "extra_attr,inode_checksum,flexible_inline_xattr";

fn open_ro(image: &[u8]) -> Fs {
    Fs::open_device(Box::new(MemDevice::new(image.to_vec())), "ro").unwrap()
}

/// Every name under the root, recursively, with its file contents (None for others).
fn tree(fs: &Fs) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![(fs.root(), String::new())];
    while let Some((dir, path)) = todo.pop() {
        for e in fs.read_dir(dir).unwrap() {
            let p = format!("{path}/{}", String::from_utf8_lossy(&e.name));
            match e.kind {
                uf2fs_core::FileKind::Dir => {
                    todo.push((e.ino, p.clone()));
                    out.insert(p, None);
                }
                uf2fs_core::FileKind::File => {
                    out.insert(p, Some(read_all(fs, e.ino)));
                }
                _ => {
                    out.insert(p, None);
                }
            }
        }
    }
    out
}

fn is_allocated(fs: &Fs, ino: Ino) -> bool {
    fs.node_blkaddr(ino).unwrap() != 0
}

fn orphan_flag(fs: &Fs) -> bool {
    fs.last_checkpoint().ckpt_flags & CP_ORPHAN_PRESENT_FLAG != 0
}

fn unlinked_open_file_keeps_working(features: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let what = format!("[{features}]");
    let (fs, dev) = open_rw(fresh_image(tmp.path(), features, 128 * MIB));
    let root = fs.root();
    let free_at_start = fs.statfs().unwrap().blocks_free;
    let big = pattern(1, 3 * MIB as usize + 5);
    let f = fs.create(root, b"big", 0o644, 0, 0).unwrap().ino;
    fs.write(f, 0, &big).unwrap();
    let small = fs.create(root, b"small", 0o644, 0, 0).unwrap().ino;
    fs.write(small, 0, b"inline bytes").unwrap();
    fs.write_checkpoint().unwrap();
    fs.open_file(f).unwrap();
    fs.open_file(f).unwrap();
    fs.open_file(small).unwrap();
    fs.unlink(root, b"big").unwrap();
    fs.unlink(root, b"small").unwrap();
    assert!(matches!(fs.lookup(root, b"big"), Err(Error::NotFound(_))), "{what}");
    assert!(fs
        .read_dir(root)
        .unwrap()
        .iter()
        .all(|e| e.name != b"big" && e.name != b"small"));
    assert_eq!(fs.orphan_inodes(), vec![f, small], "{what}");
    let st = fs.stat(f).unwrap();
    assert_eq!((st.nlink, st.size), (0, big.len() as u64), "{what}");
    assert_eq!(read_all(&fs, f), big, "{what}: an orphan reads back");
    // Writes, truncation, attributes and fsync through the number.
    fs.write(f, 100, b"after unlink").unwrap();
    let mut want = big.clone();
    want[100..112].copy_from_slice(b"after unlink");
    fs.truncate(f, 2 * MIB + 1).unwrap();
    want.truncate(2 * MIB as usize + 1);
    let attrs = uf2fs_core::SetAttr {
        mode: Some(0o600),
        ..Default::default()
    };
    assert_eq!(fs.setattr(f, &attrs).unwrap().mode & 0o777, 0o600);
    fs.fsync(f, false).unwrap();
    assert!(orphan_flag(&fs), "{what}: the fsync checkpoint lists the orphans");
    assert_eq!(read_all(&fs, f), want);
    // The image as of that checkpoint (a power cut now) is clean and lists both.
    let cut = dev.image_now();
    let text = fsck_clean(tmp.path(), &cut, &format!("{what}: a checkpoint with two orphans"));
    assert!(text.contains("orphan_inodes"), "{what}: fsck sees no orphans:\n{text}");
    let ro = open_ro(&cut);
    assert_eq!(ro.orphan_inodes(), vec![f, small]);
    assert!(ro.checkpoint().ckpt_flags & CP_ORPHAN_PRESENT_FLAG != 0);
    assert!(!tree(&ro).contains_key("/big"));
    assert_eq!(read_all(&ro, f), want, "{what}: read-only opens leave orphans alone");
    drop(ro);
    // One release of two keeps it; the last frees it; another is refused.
    fs.release_file(f).unwrap();
    assert!(is_allocated(&fs, f));
    assert_eq!(read_all(&fs, f), want);
    fs.release_file(f).unwrap();
    assert!(!is_allocated(&fs, f), "{what}: the last release frees the orphan");
    assert!(fs.stat(f).is_err());
    assert!(matches!(fs.release_file(f), Err(Error::Invalid(_))));
    assert_eq!(fs.orphan_inodes(), vec![small]);
    fs.write_checkpoint().unwrap();
    let free = fs.statfs().unwrap().blocks_free;
    assert!(
        free + 8 >= free_at_start,
        "{what}: space comes back after the last release ({free} free, {free_at_start} at start)"
    );
    fsck_clean(tmp.path(), &dev.image_now(), &format!("{what}: one orphan left"));
    // Unmount frees what is still open.
    fs.unmount().unwrap();
    let img = dev.image_now();
    fsck_clean(tmp.path(), &img, &format!("{what}: unmounted with an open orphan"));
    let ro = open_ro(&img);
    assert!(ro.orphan_inodes().is_empty());
    assert!(ro.checkpoint().ckpt_flags & CP_UMOUNT_FLAG != 0);
    assert!(!is_allocated(&ro, small) && !is_allocated(&ro, f));
    assert!(tree(&ro).is_empty(), "{what}: {:?}", tree(&ro).keys());
}

#[test]
fn an_unlinked_open_file_keeps_working_until_its_last_release() {
    unlinked_open_file_keeps_working("");
    unlinked_open_file_keeps_working(EXTRA);
}

/// rmdir of an open directory, and renames over an open file and an open directory:
/// each loses its last link and becomes an orphan; a rename over a name with links
/// left, or over a name nobody holds, makes none.
#[test]
fn rmdir_and_rename_over_open_inodes_make_orphans() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = open_rw(fresh_image(tmp.path(), EXTRA, 128 * MIB));
    let root = fs.root();
    let dir = fs.mkdir(root, b"dir", 0o755, 0, 0).unwrap().ino;
    let victim_dir = fs.mkdir(root, b"victim_dir", 0o755, 0, 0).unwrap().ino;
    fs.mkdir(root, b"mover_dir", 0o755, 0, 0).unwrap();
    let victim = fs.create(root, b"victim", 0o644, 0, 0).unwrap().ino;
    fs.write(victim, 0, &pattern(2, 20_000)).unwrap();
    let mover = fs.create(root, b"mover", 0o644, 0, 0).unwrap().ino;
    fs.write(mover, 0, b"new contents").unwrap();
    let linked = fs.create(root, b"linked", 0o644, 0, 0).unwrap().ino;
    fs.link(linked, root, b"second").unwrap();
    fs.create(root, b"other", 0o644, 0, 0).unwrap();
    let unheld = fs.create(root, b"unheld", 0o644, 0, 0).unwrap().ino;
    for ino in [dir, victim_dir, victim, linked] {
        fs.open_file(ino).unwrap();
    }
    fs.rmdir(root, b"dir").unwrap();
    fs.rename(root, b"mover", root, b"victim", 0).unwrap();
    fs.rename(root, b"mover_dir", root, b"victim_dir", 0).unwrap();
    fs.rename(root, b"other", root, b"linked", 0).unwrap();
    fs.rename(root, b"second", root, b"unheld", 0).unwrap();
    assert_eq!(fs.orphan_inodes(), vec![dir, victim_dir, victim]);
    assert!(!is_allocated(&fs, unheld), "a name nobody holds is freed at once");
    assert_eq!(fs.stat(linked).unwrap().nlink, 1, "a link is left: no orphan");
    assert_eq!(fs.stat(dir).unwrap().nlink, 0);
    assert_eq!(fs.stat(victim_dir).unwrap().nlink, 0);
    assert_eq!(read_all(&fs, victim), pattern(2, 20_000));
    assert_eq!(read_all(&fs, mover), b"new contents");
    assert!(
        fs.mkdir(dir, b"inside", 0o755, 0, 0).is_err(),
        "a removed directory takes no names"
    );
    fs.write_checkpoint().unwrap();
    let text = fsck_clean(tmp.path(), &dev.image_now(), "open directories and files renamed over");
    assert!(text.contains("orphan_inodes"), "{text}");
    for ino in [dir, victim_dir, victim, linked] {
        fs.release_file(ino).unwrap();
    }
    assert!(fs.orphan_inodes().is_empty());
    for ino in [dir, victim_dir, victim] {
        assert!(!is_allocated(&fs, ino), "inode {ino} freed at its last release");
    }
    assert!(is_allocated(&fs, linked));
    fs.unmount().unwrap();
    fsck_clean(tmp.path(), &dev.image_now(), "all released");
}

/// A read-write open frees the orphans its checkpoint lists, in memory; the next
/// checkpoint records the empty list. A power cut before that checkpoint leaves the
/// orphans listed (and reclaimed again at the next open); a cut anywhere during it
/// leaves either checkpoint, each fsck-clean, each reopening read-write.
#[test]
fn orphans_are_reclaimed_at_open_across_power_cuts() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = open_rw(fresh_image(tmp.path(), "", 128 * MIB));
    let root = fs.root();
    let keep = fs.create(root, b"keep", 0o644, 0, 0).unwrap().ino;
    fs.write(keep, 0, &pattern(3, 50_000)).unwrap();
    let gone = fs.create(root, b"gone", 0o644, 0, 0).unwrap().ino;
    fs.write(gone, 0, &pattern(4, 2 * MIB as usize)).unwrap();
    let gone_dir = fs.mkdir(root, b"gone_dir", 0o755, 0, 0).unwrap().ino;
    fs.open_file(gone).unwrap();
    fs.open_file(gone_dir).unwrap();
    fs.unlink(root, b"gone").unwrap();
    fs.rmdir(root, b"gone_dir").unwrap();
    fs.write_checkpoint().unwrap();
    let crashed = dev.image_now();
    drop(fs); // a crash with both still open
    let listed = open_ro(&crashed);
    assert_eq!(listed.orphan_inodes(), vec![gone, gone_dir]);
    let version = listed.checkpoint().checkpoint_ver;
    let free_before = listed.statfs().unwrap().blocks_free;
    drop(listed);
    let want = BTreeMap::from([("/keep".to_string(), Some(pattern(3, 50_000)))]);

    let (fs, dev) = open_rw(crashed.clone());
    assert!(fs.orphan_inodes().is_empty(), "reclaimed at open");
    assert!(!is_allocated(&fs, gone) && !is_allocated(&fs, gone_dir));
    assert_eq!(tree(&fs), want);
    assert_eq!(dev.ops().len(), 0, "the open writes nothing");
    // Cut before the first checkpoint: the image is the crashed one.
    fsck_clean(tmp.path(), &dev.image_now(), "reclaimed in memory only");
    fs.write_checkpoint().unwrap();
    let free_after = fs.statfs().unwrap().blocks_free;
    assert!(
        free_after >= free_before + 512,
        "{free_before} -> {free_after} free blocks"
    );
    let mut tried = 0;
    for (cut, kept) in cuts::cuts(&dev, 0x2545_f491_4f6c_dd1d) {
        let what = format!("cut after flush {cut}, kept {kept:?}");
        let img = dev.image_after_cut(cut, &|i| kept[i]);
        let ro = open_ro(&img);
        let got = ro.checkpoint().checkpoint_ver;
        if got == version {
            assert_eq!(ro.orphan_inodes(), vec![gone, gone_dir], "{what}");
        } else {
            assert_eq!(got, version + 1, "{what}");
            assert!(ro.orphan_inodes().is_empty(), "{what}");
            assert_eq!(ro.checkpoint().ckpt_flags & CP_ORPHAN_PRESENT_FLAG, 0, "{what}");
            assert!(!is_allocated(&ro, gone), "{what}");
        }
        assert_eq!(tree(&ro), want, "{what}");
        drop(ro);
        fsck_clean(tmp.path(), &img, &what);
        let (again, again_dev) = open_rw(img);
        assert!(again.orphan_inodes().is_empty(), "{what}");
        assert_eq!(tree(&again), want, "{what}");
        again.unmount().unwrap();
        fsck_clean(
            tmp.path(),
            &again_dev.image_now(),
            &format!("{what}, reopened and unmounted"),
        );
        tried += 1;
    }
    assert!(tried >= 4, "{tried} cuts");
}

/// Cuts of a checkpoint that follows dirty-node and data write-outs (so uf2fs wrote
/// node blocks stamped for the next checkpoint, data, NAT and SIT blocks and part of
/// a pack, but no closing block): every such image reopens read-write at its last
/// checkpoint, with its orphan reclaimed; changed and unmounted, it is fsck-clean.
#[test]
fn a_cut_before_the_next_checkpoint_reopens_read_write() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = open_rw(fresh_image(tmp.path(), EXTRA, 256 * MIB));
    let root = fs.root();
    let a = fs.create(root, b"a", 0o644, 0, 0).unwrap().ino;
    fs.write(a, 0, &pattern(5, MIB as usize)).unwrap();
    let o = fs.create(root, b"o", 0o644, 0, 0).unwrap().ino;
    fs.write(o, 0, &pattern(6, 300_000)).unwrap();
    fs.open_file(o).unwrap();
    fs.unlink(root, b"o").unwrap();
    fs.write_checkpoint().unwrap();
    let version = fs.last_checkpoint().checkpoint_ver;
    let at_checkpoint = tree(&fs);
    dev.settle();
    // More than the dirty-page and dirty-node bounds: written out before the next
    // checkpoint starts.
    let b = fs.create(root, b"b", 0o644, 0, 0).unwrap().ino;
    fs.write(b, 0, &pattern(7, 20 * MIB as usize)).unwrap();
    fs.write(a, 4096, b"changed after the checkpoint").unwrap();
    let d = fs.mkdir(root, b"many", 0o755, 0, 0).unwrap().ino;
    for i in 0..4200 {
        fs.create(d, format!("f{i}").as_bytes(), 0o644, 0, 0).unwrap();
    }
    let before_cp = dev.ops().len();
    assert!(before_cp > 4000, "only {before_cp} writes before the checkpoint");
    fs.write_checkpoint().unwrap();
    drop(fs);
    let mut tried = 0;
    for (cut, kept) in cuts::cuts(&dev, 0x2545_f491_4f6c_dd1d) {
        let img = dev.image_after_cut(cut, &|i| kept[i]);
        if open_ro(&img).checkpoint().checkpoint_ver != version {
            continue;
        }
        let what = format!(
            "cut after flush {cut} of {}, kept {} of {}",
            dev.flush_count(),
            kept.iter().filter(|k| **k).count(),
            kept.len()
        );
        fsck_clean(tmp.path(), &img, &what);
        let (fs, dev2) = open_rw(img);
        assert!(fs.orphan_inodes().is_empty(), "{what}");
        assert!(!is_allocated(&fs, o), "{what}: the orphan is reclaimed");
        assert_eq!(tree(&fs), at_checkpoint, "{what}");
        let c = fs.create(root, b"c", 0o644, 0, 0).unwrap().ino;
        fs.write(c, 0, &pattern(8, 3 * MIB as usize)).unwrap();
        fs.write(a, 0, b"after the reopen").unwrap();
        fs.unmount().unwrap();
        let img = dev2.image_now();
        fsck_clean(tmp.path(), &img, &format!("{what}: reopened, changed, unmounted"));
        let ro = open_ro(&img);
        let mut want = at_checkpoint.clone();
        want.insert("/c".into(), Some(pattern(8, 3 * MIB as usize)));
        let mut a_data = pattern(5, MIB as usize);
        a_data[..16].copy_from_slice(b"after the reopen");
        want.insert("/a".into(), Some(a_data));
        assert_eq!(tree(&ro), want, "{what}");
        tried += 1;
    }
    assert!(tried >= 3, "{tried} cuts at the old checkpoint");
}

/// The checkpoint block of the pack in use, and its address.
fn current_pack(image: &[u8]) -> (u64, u64) {
    let fs = open_ro(image);
    let sb = fs.superblock();
    let cp = fs.checkpoint();
    let two = (0..2u64)
        .map(|p| sb.cp_blkaddr as u64 + p * sb.blocks_per_seg() as u64)
        .find(|&start| {
            let b = fs.read_raw_block(start).unwrap();
            uf2fs_format::le::u64_at(&b, 0) == cp.checkpoint_ver
        })
        .unwrap();
    (two, cp.cp_pack_total_block_count as u64)
}

fn block_mut(image: &mut [u8], blk: u64) -> &mut [u8] {
    &mut image[blk as usize * 4096..(blk as usize + 1) * 4096]
}

/// Stamps the footer of a node block as an fsync of the kernel would: checkpoint
/// version `cp_ver`, flag bits `flag_bits` added, next block `next`.
fn stamp(block: &mut [u8], cp_ver: u64, flag_bits: u32, next: u64) {
    let f = 4096 - 24;
    put_u32(block, f + 8, u32_at(block, f + 8) | flag_bits);
    put_u64(block, f + 12, cp_ver);
    put_u32(block, f + 20, next as u32);
}

/// An image left without an unmount checkpoint, with an inode block crafted in its
/// warm node log as a kernel fsync leaves it (its mtime changed): a read-write open
/// replays it (the file shows the new mtime) when the chain from the log's next block
/// reaches it with the fsync mark and the checkpoint's version (or, under
/// `CP_CRC_RECOVERY_FLAG`, the version with the checkpoint's checksum), and ignores it
/// when the chain ends before it; a chain that loops is reported corrupt. Read-only
/// opens show the same, replayed in memory.
#[test]
fn fsynced_nodes_after_the_checkpoint_are_replayed_by_the_chain_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = open_rw(fresh_image(tmp.path(), "", 128 * MIB));
    let root = fs.root();
    let f = fs.create(root, b"f", 0o644, 0, 0).unwrap().ino;
    fs.write(f, 0, &pattern(9, 100_000)).unwrap();
    fs.write_checkpoint().unwrap();
    let cp = fs.last_checkpoint();
    let version = cp.checkpoint_ver;
    let start = {
        let sb = fs.superblock();
        sb.main_blkaddr as u64 + cp.cur_node_segno[1] as u64 * 512 + cp.cur_node_blkoff[1] as u64
    };
    let mut inode_block = fs.read_raw_block(fs.node_blkaddr(f).unwrap()).unwrap();
    let old_mtime = fs.stat(f).unwrap().mtime.secs;
    const NEW_MTIME: i64 = 1_234_567_890;
    put_u64(&mut inode_block, 48, NEW_MTIME as u64);
    drop(fs);
    let base = dev.image_now();
    let want = tree(&open_ro(&base));
    let opens = |img: Vec<u8>, replayed: bool, what: &str| {
        // Read-only opens replay in memory what read-write ones replay on the image.
        let ro = open_ro(&img);
        assert_eq!(ro.replayed_in_memory(), replayed, "{what}: read-only");
        let want_mtime = if replayed { NEW_MTIME } else { old_mtime };
        assert_eq!(ro.stat(f).unwrap().mtime.secs, want_mtime, "{what}: read-only");
        drop(ro);
        let (fs, dev) = open_rw(img);
        assert_eq!(tree(&fs), want, "{what}");
        let mtime = fs.stat(f).unwrap().mtime.secs;
        assert_eq!(mtime == NEW_MTIME, replayed, "{what}: replayed");
        fs.unmount().unwrap();
        fsck_clean(tmp.path(), &dev.image_now(), what);
    };
    let with = |nodes: &[(u64, u64, u32, u64)]| {
        let mut img = base.clone();
        for &(at, ver, bits, next) in nodes {
            let b = block_mut(&mut img, at);
            b.copy_from_slice(&inode_block);
            stamp(b, ver, bits, next);
        }
        img
    };
    const FSYNC: u32 = 2;
    opens(base.clone(), false, "nothing after the checkpoint");
    opens(with(&[(start, version, FSYNC, start + 1)]), true, "an fsync node first");
    opens(
        with(&[(start, version, 0, start + 7), (start + 7, version, FSYNC, start + 8)]),
        true,
        "an fsync node down the chain",
    );
    opens(
        with(&[(start, version, 0, start + 1)]),
        false,
        "a matching node without the fsync mark",
    );
    opens(
        with(&[(start, version - 1, FSYNC, start + 1)]),
        false,
        "an fsync node of an older checkpoint",
    );
    opens(
        with(&[(start, version, 0, start + 7), (start + 9, version, FSYNC, start + 10)]),
        false,
        "an fsync node off the chain",
    );
    match Fs::open_device_with(
        Box::new(MemDevice::new(with(&[(start, version, 0, start)]))),
        "loop",
        RW,
    ) {
        Err(Error::Corrupt { detail, .. }) => assert!(detail.contains("loops"), "{detail}"),
        Err(e) => panic!("a looping chain: {e}"),
        Ok(_) => panic!("a looping chain opened read-write"),
    }
    let ro = open_ro(&with(&[(start, version, 0, start)]));
    assert!(
        !ro.replayed_in_memory(),
        "a looping chain: read-only shows the checkpoint"
    );
    assert_eq!(tree(&ro), want, "a looping chain, read-only");
    drop(ro);
    // Under CP_CRC_RECOVERY_FLAG the footer carries the checkpoint's checksum too.
    let (pack, total) = current_pack(&base);
    let mut crc_base = base.clone();
    let mut crc = 0;
    for blk in [pack, pack + total - 1] {
        let b = block_mut(&mut crc_base, blk);
        put_u32(b, 132, u32_at(b, 132) | CP_CRC_RECOVERY_FLAG);
        let ofs = u32_at(b, 164) as usize;
        crc = checkpoint_crc(b, ofs);
        put_u32(b, ofs, crc);
    }
    let crc_with = |ver: u64| {
        let mut img = crc_base.clone();
        let b = block_mut(&mut img, start);
        b.copy_from_slice(&inode_block);
        stamp(b, ver, FSYNC, start + 1);
        img
    };
    opens(
        crc_with(version | (crc as u64) << 32),
        true,
        "CRC recovery: version and checksum",
    );
    opens(crc_with(version), false, "CRC recovery: the version alone");
}

/// Threads that create, open, unlink, write through and release files while another
/// writes checkpoints: no deadlock, every orphan freed at its last release (no node
/// left allocated), and a clean image.
#[test]
fn concurrent_opens_unlinks_and_releases_leave_no_orphan() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = open_rw(fresh_image(tmp.path(), EXTRA, 256 * MIB));
    let fs = std::sync::Arc::new(fs);
    let root = fs.root();
    let nodes_free = fs.statfs().unwrap().files_free;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let checkpointer = {
        let (fs, stop) = (fs.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                fs.write_checkpoint().unwrap();
                n += 1;
            }
            n
        })
    };
    let workers: Vec<_> = (0..4u8)
        .map(|t| {
            let fs = fs.clone();
            std::thread::spawn(move || {
                for i in 0..40 {
                    let name = format!("t{t}-{i}");
                    let ino = fs.create(root, name.as_bytes(), 0o644, 0, 0).unwrap().ino;
                    fs.open_file(ino).unwrap();
                    fs.open_file(ino).unwrap();
                    fs.write(ino, 0, &pattern(t, 5000 + i * 997)).unwrap();
                    fs.unlink(root, name.as_bytes()).unwrap();
                    fs.write(ino, 3, b"more").unwrap();
                    fs.release_file(ino).unwrap();
                    assert_eq!(read_all(&fs, ino).len(), 5000 + i * 997);
                    fs.release_file(ino).unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(checkpointer.join().unwrap() > 0);
    assert!(fs.orphan_inodes().is_empty());
    assert_eq!(fs.statfs().unwrap().files_free, nodes_free, "nodes left allocated");
    assert!(tree(&fs).is_empty());
    let fs = std::sync::Arc::into_inner(fs).unwrap();
    fs.unmount().unwrap();
    fsck_clean(tmp.path(), &dev.image_now(), "concurrent orphans");
}
