//! The checkpoint writer's SIT and NAT block paths, driven from inside the crate
//! (nothing public dirties them before step 2), judged by fsck.f2fs.

use crate::device::{BlockDevice, CrashDevice, MemDevice};
use crate::segment::LogType;
use crate::{Fs, OpenOptions};
use std::path::Path;
use std::process::Command;
use uf2fs_format::summary::Summary;

const RW: OpenOptions = OpenOptions { read_write: true };

/// fsck.f2fs -f on `image` written to a file in `dir`: exit 0, nothing to fix.
fn fsck_clean(dir: &Path, image: &[u8], what: &str) -> String {
    let img = dir.join("fsck.img");
    std::fs::write(&img, image).unwrap();
    let out = Command::new("fsck.f2fs")
        .arg("-f")
        .arg(&img)
        .output()
        .expect("cannot run fsck.f2fs (is f2fs-tools installed?)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let bad = text
        .lines()
        .any(|l| l.contains("[Fail]") || l.contains("[FIX") || l.contains("ASSERT"));
    assert!(out.status.success() && !bad, "fsck.f2fs -f after {what}:\n{text}");
    text
}

/// A 128 MiB mkfs.f2fs image with a few hundred files loaded by sload.f2fs.
fn loaded_image(dir: &Path) -> Vec<u8> {
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    for i in 0..400 {
        std::fs::write(tree.join(format!("sub/f{i}")), vec![b'x'; i * 37]).unwrap();
    }
    let img = dir.join("base.img");
    std::fs::File::create(&img).unwrap().set_len(128 << 20).unwrap();
    let run = |cmd: &mut Command| {
        let out = cmd.output().expect("cannot run f2fs-tools");
        assert!(
            out.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(Command::new("mkfs.f2fs").args(["-q", "-f"]).arg(&img));
    run(Command::new("sload.f2fs")
        .arg("-f")
        .arg(&tree)
        .args(["-t", "/"])
        .arg(&img));
    std::fs::read(&img).unwrap()
}

/// The value fsck prints for a `[FSCK] ... [Ok..] [0x..]` line starting with `label`.
fn fsck_figure(text: &str, label: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.contains(label))
        .unwrap_or_else(|| panic!("{label}:\n{text}"));
    let hex = line.rsplit("[0x").next().unwrap().trim_end_matches(']');
    u64::from_str_radix(hex, 16).unwrap()
}

/// Takes `count` blocks from each of the six logs.
fn take(fs: &Fs, count: u32) -> Vec<u64> {
    let mut segs = fs.segments().unwrap();
    let mut taken = Vec::new();
    for log in LogType::ALL {
        for i in 0..count {
            let s = Summary {
                nid: 100_000 + i,
                version: 0,
                ofs_in_node: 0,
            };
            taken.push(segs.alloc_block(fs.device(), log, s).unwrap());
        }
    }
    taken
}

/// Gives blocks back: with [`take`], the SIT changes (segment types, log positions,
/// prefree segments) while no block changes owner, so fsck stays clean.
fn give_back(fs: &Fs, taken: &[u64]) {
    let mut segs = fs.segments().unwrap();
    for a in taken {
        segs.invalidate(*a).unwrap();
    }
}

/// Marks the NAT entries of nids 4..=`last` dirty with their current values.
fn touch_nat(fs: &Fs, last: u32) {
    for nid in 4..=last {
        let e = fs.nodes().nat_entry(fs.device(), nid).unwrap();
        fs.nodes().set_nat_entry(nid, e).unwrap();
    }
}

fn open_rw(image: Vec<u8>) -> (Fs, CrashDevice) {
    let dev = CrashDevice::new(image, 1 << 20);
    let fs = Fs::open_device_with(Box::new(dev.clone()), "mem", RW).unwrap();
    (fs, dev)
}

fn sit_line(fs: &Fs) -> String {
    let info = fs.info().unwrap().to_string();
    info.lines()
        .find(|l| l.starts_with("segments (SIT)"))
        .unwrap()
        .to_string()
}

#[test]
fn sit_blocks_and_prefree_segments_stay_fsck_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = open_rw(loaded_image(tmp.path()));
    let free0 = fs.checkpoint().free_segment_count;
    let taken = take(&fs, 1300);
    // Too many dirty entries for the journal: SIT blocks are written.
    let r = fs.write_checkpoint().unwrap();
    assert!(r.sit_blocks >= 1 && r.sit_journal == 0, "{r:?}");
    let in_use = free0 - fs.last_checkpoint().free_segment_count;
    assert!(in_use >= 6 * 2, "{in_use} segments taken");
    give_back(&fs, &taken);
    let prefree = fs.segments().unwrap().prefree_count();
    assert!(prefree >= 6 * 2, "{prefree} prefree segments");
    let r = fs.write_checkpoint().unwrap();
    assert!(r.sit_blocks >= 1, "{r:?}");
    assert_eq!(fs.segments().unwrap().prefree_count(), 0);
    let cp = fs.last_checkpoint();
    // Every emptied segment is free again; the six logs moved on from segments that may
    // still hold the image's blocks.
    let free = cp.free_segment_count;
    assert!(
        free <= free0 && free + 6 >= free0,
        "{free} free segments, {free0} at open"
    );
    assert_eq!(cp.valid_block_count, fs.checkpoint().valid_block_count);
    let sit_before = sit_line(&fs);
    fs.unmount().unwrap();
    let image = dev.image_now();
    let text = fsck_clean(tmp.path(), &image, "SIT churn");
    assert_eq!(
        fsck_figure(&text, "free segment_count matched"),
        cp.free_segment_count as u64
    );
    assert_eq!(fsck_figure(&text, "valid_block_count matching"), cp.valid_block_count);
    let ro = Fs::open_device(Box::new(MemDevice::new(image)), "mem").unwrap();
    assert_eq!(sit_line(&ro), sit_before, "the SIT read back from disk");
}

#[test]
fn nat_entries_go_to_the_journal_or_to_nat_blocks() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = open_rw(loaded_image(tmp.path()));
    let free_nid = fs.superblock().max_nid() as u32 - 1;
    let mut e = fs.nodes().nat_entry(fs.device(), free_nid).unwrap();
    assert_eq!(e.block_addr, 0);
    e.version = 7;
    fs.nodes().set_nat_entry(free_nid, e).unwrap();
    assert_eq!(fs.nodes().nat_entry(fs.device(), free_nid).unwrap().version, 7);
    // A few entries fit the journal.
    let r = fs.write_checkpoint().unwrap();
    assert_eq!((r.nat_journal, r.nat_blocks), (1, 0), "{r:?}");
    // Hundreds do not: journal and dirty entries go to NAT blocks.
    touch_nat(&fs, 1000);
    assert_eq!(fs.nodes().dirty_nat_count(), 997);
    let r = fs.write_checkpoint().unwrap();
    assert_eq!(r.nat_journal, 0, "{r:?}");
    assert!(r.nat_blocks >= 3, "{r:?}");
    assert_eq!(fs.nodes().nat_entry(fs.device(), free_nid).unwrap().version, 7);
    touch_nat(&fs, 6);
    let r = fs.write_checkpoint().unwrap();
    assert_eq!((r.nat_journal, r.nat_blocks), (3, 0), "{r:?}");
    // The unmount empties the journal into NAT blocks for valid NAT bits.
    fs.unmount().unwrap();
    let image = dev.image_now();
    let text = fsck_clean(tmp.path(), &image, "NAT churn");
    assert!(text.contains("Checked valid nat_bits"), "{text}");
    let ro = Fs::open_device(Box::new(MemDevice::new(image)), "mem").unwrap();
    assert_eq!(ro.nodes().nat_entry(ro.device(), free_nid).unwrap().version, 7);
    assert!(ro
        .info()
        .unwrap()
        .to_string()
        .contains("journal entries:    NAT 0, SIT 0"));
    assert_eq!(ro.read_dir(ro.resolve(b"/sub", true).unwrap()).unwrap().len(), 400);
}

#[test]
fn power_cuts_during_sit_and_nat_block_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let (fs, dev) = open_rw(loaded_image(tmp.path()));
    let v0 = fs.checkpoint().checkpoint_ver;
    // Since the last checkpoint: SSA blocks of the segments the logs left, then the
    // checkpoint's NAT and SIT blocks, all in flight until its first flush.
    dev.settle();
    let taken = take(&fs, 600);
    give_back(&fs, &taken);
    touch_nat(&fs, 500);
    let r = fs.write_checkpoint().unwrap();
    assert!(r.sit_blocks >= 1 && r.nat_blocks >= 1, "{r:?}");
    let in_flight = dev.in_flight_after(0).len() as u32;
    assert!(
        in_flight > r.sit_blocks + r.nat_blocks,
        "{in_flight} writes before the first flush"
    );
    let mut cuts = 0;
    for k in 0..=dev.flush_count() {
        let n = dev.in_flight_after(k).len();
        let keeps: Vec<Box<dyn Fn(usize) -> bool>> = vec![
            Box::new(|_| false),
            Box::new(|_| true),
            Box::new(|i| i % 2 == 0),
            Box::new(move |i| i + 1 == n),
        ];
        for keep in keeps {
            let image = dev.image_after_cut(k, &*keep);
            let ro = Fs::open_device(Box::new(MemDevice::new(image.clone())), "cut").unwrap();
            let v = ro.checkpoint().checkpoint_ver;
            assert!(v == v0 || v == v0 + 1, "cut after flush {k}: version {v}");
            assert_eq!(ro.read_dir(ro.resolve(b"/sub", true).unwrap()).unwrap().len(), 400);
            fsck_clean(tmp.path(), &image, &format!("cut after flush {k}"));
            cuts += 1;
        }
    }
    assert!(cuts >= 12);
    let _ = dev.block_count();
}

/// A volume made by our mkfs, in memory.
fn our_image(segs_per_sec: u32) -> Vec<u8> {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("img");
    let opts = crate::mkfs::MkfsOptions {
        size_bytes: Some(128 << 20),
        segs_per_sec,
        ..Default::default()
    };
    crate::mkfs::mkfs(&img, &opts).unwrap();
    std::fs::read(&img).unwrap()
}

/// Writes a pack built from `spec` at pack `which` of `dev`.
fn put_pack(
    dev: &MemDevice,
    sb: &uf2fs_format::superblock::Superblock,
    which: u64,
    spec: &super::pack::PackSpec,
) -> super::pack::Pack {
    let pack = super::pack::build_pack(spec).unwrap();
    let start = sb.cp_blkaddr as u64 + which * 512;
    for (off, b) in pack.body.iter().chain(std::iter::once(&pack.last)) {
        dev.write_blocks(start + *off as u64, b).unwrap();
    }
    pack
}

#[test]
fn packs_read_back_as_written() {
    use super::{load_checkpoint, load_superblock};
    use uf2fs_format::checkpoint::{CP_COMPACT_SUM_FLAG, CP_ORPHAN_PRESENT_FLAG};
    let entries = |n: usize, base: u32| -> Vec<Summary> {
        (0..512)
            .map(|i| Summary {
                nid: if i < n { base + i as u32 } else { 0 },
                version: (i % 3) as u8,
                ofs_in_node: i as u16,
            })
            .collect()
    };
    // (entries in use per data log, orphans, unmount): compacted in 1 and 2 blocks,
    // then normal; orphans in 0, 1 and 2 blocks.
    let cases: [([usize; 3], usize, bool); 5] = [
        ([1, 0, 0], 0, true),
        ([300, 139, 0], 5, true),
        ([300, 140, 0], 1020, false),
        ([512, 511, 0], 1021, true),
        ([512, 512, 1], 2500, false),
    ];
    for (counts, orphan_count, umount) in cases {
        let dev = MemDevice::new(our_image(1));
        let sb = load_superblock(&dev).unwrap().sb;
        let cps = load_checkpoint(&dev, &sb).unwrap();
        let logs: Vec<Vec<Summary>> = (0..6)
            .map(|i| entries(if i < 3 { counts[i] } else { 100 + i }, 1000 * i as u32))
            .collect();
        let orphans: Vec<u32> = (0..orphan_count as u32).map(|i| 5000 + i).collect();
        let mut cp = cps.cp.clone();
        cp.checkpoint_ver += 1;
        for (off, n) in cp.cur_data_blkoff.iter_mut().zip(counts) {
            *off = n.max(*off as usize) as u16;
        }
        let spec = super::pack::PackSpec {
            cp,
            cp_payload: sb.cp_payload,
            segment_count_nat: sb.segment_count_nat,
            nat_bitmap: &cps.nat_bitmap,
            sit_bitmap: &cps.sit_bitmap,
            orphans: &orphans,
            nat_journal: &cps.nat_journal,
            sit_journal: &cps.sit_journal,
            data_logs: std::array::from_fn(|i| (&logs[i][..], counts[i])),
            node_logs: umount.then(|| std::array::from_fn(|i| &logs[3 + i][..])),
            nat_bits: None,
            geo: uf2fs_format::Geometry::DEFAULT,
        };
        let pack = put_pack(&dev, &sb, 1, &spec);
        let what = format!("{counts:?}, {orphan_count} orphans, umount {umount}");
        let back = load_checkpoint(&dev, &sb).unwrap();
        assert_eq!((back.pack, &back.cp), (1, &pack.cp), "{what}");
        assert_eq!(
            back.cp.has_flag(CP_COMPACT_SUM_FLAG),
            counts.iter().sum::<usize>() <= 439 + 584,
            "{what}"
        );
        assert_eq!(back.cp.has_flag(CP_ORPHAN_PRESENT_FLAG), orphan_count > 0, "{what}");
        assert_eq!(back.orphans, orphans, "{what}");
        assert_eq!(
            (back.nat_journal.clone(), back.sit_journal.clone()),
            (cps.nat_journal.clone(), cps.sit_journal.clone())
        );
        if !umount {
            continue;
        }
        let m = crate::segment::SegmentManager::load(&dev, &sb, &back).unwrap();
        for (i, t) in LogType::ALL.into_iter().enumerate() {
            let want = if i < 3 {
                counts[i].max(cps.cp.cur_data_blkoff[i] as usize)
            } else {
                512
            };
            let got = &m.log(t).summaries()[..want.min(counts.get(i).copied().unwrap_or(512))];
            assert_eq!(got, &logs[i][..got.len()], "{what}: log {t:?}");
        }
    }
}

/// A device whose writes fail after a budget is spent.
struct Failing {
    inner: MemDevice,
    writes_left: std::sync::atomic::AtomicUsize,
}

impl BlockDevice for Failing {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> crate::Result<()> {
        self.inner.read_blocks(blkaddr, buf)
    }
    fn block_count(&self) -> u64 {
        self.inner.block_count()
    }
    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> crate::Result<()> {
        use std::sync::atomic::Ordering;
        if self.writes_left.fetch_sub(1, Ordering::SeqCst) == 0 {
            self.writes_left.store(0, Ordering::SeqCst);
            return Err(crate::Error::Io {
                context: format!("write of block {blkaddr:#x}"),
                source: std::io::Error::other("injected"),
            });
        }
        self.inner.write_blocks(blkaddr, buf)
    }
}

#[test]
fn a_failed_checkpoint_stops_further_ones() {
    let dev = Failing {
        inner: MemDevice::new(our_image(4)),
        writes_left: std::sync::atomic::AtomicUsize::new(2),
    };
    let fs = Fs::open_device_with(Box::new(dev), "failing", RW).unwrap();
    let err = fs.write_checkpoint().unwrap_err().to_string();
    assert!(err.contains("write of block"), "{err}");
    let again = fs.write_checkpoint().unwrap_err();
    assert!(
        again.errno() == 5 && again.to_string().contains("stopped after an error"),
        "{again}"
    );
    assert!(fs.unmount().is_err());
}
