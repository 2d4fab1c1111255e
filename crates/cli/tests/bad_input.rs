//! Bad input: truncated, zeroed and bit-flipped images, and unusable arguments.
//!
//! Every run must end within 5 s, never by a panic (exit 101) or a signal (a failed
//! allocation aborts: runs are limited to 1 GiB of address space when `prlimit` exists),
//! and a failure must print exactly one `uf2fs: ...` line. Damage aimed at one structure
//! must also be named in that line. Damaged images are copies of the small tree's image;
//! random flips are seeded, so a failure names the trial that replays it.

mod common;

use common::{scratch, small, Fixture};
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;
use uf2fs_testkit::corrupt::{node_blocks, sparse_copy, zero_blocks, zero_bytes, Flipper, Layout, NodeRef, BLOCK};
use uf2fs_testkit::run::{run_with_timeout, Outcome};
use uf2fs_testkit::Rng;

/// Per-run time limit.
const LIMIT: Duration = Duration::from_secs(5);
/// Address-space limit per run: far above what reading a small image needs.
const ADDRESS_SPACE: u64 = 1 << 30;

/// What each damaged image is put through.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Cmd {
    Info,
    LsLongRecursive,
    CatSmall,
    CatNodeFile,
    CatDeep,
    Extract,
}

const CMDS: [Cmd; 6] = [
    Cmd::Info,
    Cmd::LsLongRecursive,
    Cmd::CatSmall,
    Cmd::CatNodeFile,
    Cmd::CatDeep,
    Cmd::Extract,
];

fn prlimit() -> Option<PathBuf> {
    ["/usr/bin/prlimit", "/bin/prlimit"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// Runs one command on `img`, with the time and memory limits.
fn run(cmd: Cmd, img: &Path, scratch_dir: &Path) -> Outcome {
    let img: OsString = img.into();
    let args: Vec<OsString> = match cmd {
        Cmd::Info => vec!["info".into(), img],
        Cmd::LsLongRecursive => vec!["ls".into(), "-l".into(), "-R".into(), img],
        Cmd::CatSmall => vec!["cat".into(), img, "/hello.txt".into()],
        Cmd::CatNodeFile => vec!["cat".into(), img, "/needs_direct_node".into()],
        Cmd::CatDeep => vec!["cat".into(), img, "/dir/sub/leaf".into()],
        Cmd::Extract => {
            let dest = scratch_dir.join("extract");
            let _ = fs::remove_dir_all(&dest);
            vec!["extract".into(), img, dest.into()]
        }
    };
    let bin = env!("CARGO_BIN_EXE_uf2fs");
    let mut command = match prlimit() {
        Some(p) => {
            let mut c = std::process::Command::new(p);
            c.arg(format!("--as={ADDRESS_SPACE}")).arg("--").arg(bin);
            c
        }
        None => std::process::Command::new(bin),
    };
    command.args(&args);
    let out = run_with_timeout(&mut command, LIMIT);
    if cmd == Cmd::Extract {
        let _ = fs::remove_dir_all(scratch_dir.join("extract"));
    }
    out
}

/// A private copy of the small image to damage.
fn copy_of(fx: &Fixture, dir: &Path) -> PathBuf {
    let img = dir.join("damaged.img");
    sparse_copy(fx.img(), &img).expect("copy image");
    img
}

/// Runs every command; returns the robustness problems (labelled with `what`) and the
/// outcomes.
fn run_all(img: &Path, dir: &Path, what: &str) -> (Vec<String>, Vec<(Cmd, Outcome)>) {
    let mut problems = Vec::new();
    let mut outcomes = Vec::new();
    for cmd in CMDS {
        let out = run(cmd, img, dir);
        if let Some(p) = out.robustness_problem() {
            problems.push(format!("{what}: {cmd:?}: {p}"));
        }
        outcomes.push((cmd, out));
    }
    (problems, outcomes)
}

/// Requires `cmds` to have failed and their message to contain every word of `words`
/// (case-insensitive).
fn require_named(what: &str, outcomes: &[(Cmd, Outcome)], cmds: &[Cmd], words: &[&str], problems: &mut Vec<String>) {
    for (cmd, out) in outcomes.iter().filter(|(c, _)| cmds.contains(c)) {
        if out.success() {
            problems.push(format!("{what}: {cmd:?} should fail but succeeded: {}", out.describe()));
            continue;
        }
        let msg = out.err().to_lowercase();
        for w in words {
            if !msg.contains(w) {
                problems.push(format!(
                    "{what}: {cmd:?}: message should name {w:?}: {}",
                    out.err().trim_end()
                ));
            }
        }
    }
}

/// For outcomes that failed, the message must contain one of `words`.
fn failures_name_one_of(what: &str, outcomes: &[(Cmd, Outcome)], words: &[&str], problems: &mut Vec<String>) {
    for (cmd, out) in outcomes.iter().filter(|(_, o)| !o.success()) {
        let msg = out.err().to_lowercase();
        if !words.iter().any(|w| msg.contains(w)) {
            problems.push(format!(
                "{what}: {cmd:?}: message should name one of {words:?}: {}",
                out.err().trim_end()
            ));
        }
    }
}

fn assert_none(what: &str, problems: &[String]) {
    common::assert_no_problems(what, problems);
}

#[test]
fn undamaged_small_image_reads_cleanly() {
    let fx = small("default");
    let tmp = scratch("bad-ok-");
    let (problems, outcomes) = run_all(fx.img(), tmp.path(), "undamaged");
    assert_none("undamaged image", &problems);
    for (cmd, out) in outcomes {
        assert!(out.success(), "{cmd:?} on the undamaged image: {}", out.describe());
    }
}

#[test]
fn truncated_images_fail_cleanly() {
    let fx = small("default");
    let tmp = scratch("bad-trunc-");
    let layout = Layout::read(fx.img()).expect("layout");
    let len = fs::metadata(fx.img()).unwrap().len();
    let used_end = last_used_block(fx.img(), &layout) * BLOCK;
    let cuts = [
        0,
        512,
        1024 + 100,
        BLOCK,
        2 * BLOCK,
        layout.cp_blkaddr * BLOCK + 2048,
        layout.sit_blkaddr * BLOCK,
        layout.nat_blkaddr * BLOCK + BLOCK,
        layout.ssa_blkaddr * BLOCK,
        layout.main_blkaddr * BLOCK,
        layout.main_blkaddr * BLOCK + (used_end - layout.main_blkaddr * BLOCK) / 2,
        used_end - BLOCK + 100,
        len - BLOCK,
    ];
    let mut problems = Vec::new();
    let img = copy_of(fx, tmp.path());
    for cut in cuts {
        let f = fs::OpenOptions::new().write(true).open(&img).unwrap();
        f.set_len(cut).unwrap();
        drop(f);
        let what = format!("truncated to {cut} bytes");
        let (p, outcomes) = run_all(&img, tmp.path(), &what);
        problems.extend(p);
        if cut < 2 * BLOCK {
            // No complete pair of superblocks and nothing after: nothing can work.
            let all: Vec<Cmd> = CMDS.to_vec();
            require_named(&what, &outcomes, &all, &[], &mut problems);
        }
        if cut <= layout.main_blkaddr * BLOCK {
            // No main area: no inode can be read.
            require_named(
                &what,
                &outcomes,
                &[Cmd::LsLongRecursive, Cmd::CatSmall, Cmd::Extract],
                &[],
                &mut problems,
            );
        }
        // Restore the full image for the next cut.
        sparse_copy(fx.img(), &img).unwrap();
    }
    assert_none("truncated images", &problems);
}

/// The highest block in use: the largest node block address or data block address is
/// not known without parsing, so take the last non-zero 4 KiB block of the file.
fn last_used_block(img: &Path, layout: &Layout) -> u64 {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = fs::File::open(img).unwrap();
    let blocks = f.metadata().unwrap().len() / BLOCK;
    let mut buf = vec![0u8; BLOCK as usize];
    let mut b = blocks;
    while b > layout.main_blkaddr {
        b -= 1;
        f.seek(SeekFrom::Start(b * BLOCK)).unwrap();
        f.read_exact(&mut buf).unwrap();
        if buf.iter().any(|&c| c != 0) {
            return b + 1;
        }
    }
    layout.main_blkaddr + 1
}

/// One structure zeroed at a time; the ones every read depends on must be named.
#[test]
fn zeroed_structures_are_named() {
    let fx = small("default");
    let tmp = scratch("bad-zero-");
    let layout = Layout::read(fx.img()).expect("layout");
    let nodes = node_blocks(fx.img(), tmp.path()).expect("dump.f2fs -n");
    let root = nodes
        .iter()
        .find(|n| n.nid == 3)
        .copied()
        .expect("root inode in the NAT");
    let node_file_ino = inode_of(fx, tmp.path(), "needs_direct_node");
    let direct = nodes
        .iter()
        .find(|n| n.ino == node_file_ino && n.nid != n.ino)
        .copied()
        .expect("a direct node");
    let all_reads = [
        Cmd::LsLongRecursive,
        Cmd::CatSmall,
        Cmd::CatNodeFile,
        Cmd::CatDeep,
        Cmd::Extract,
    ];
    let mut problems = Vec::new();
    let img = copy_of(fx, tmp.path());
    type Damage<'a> = Box<dyn Fn(&Path) + 'a>;
    let cases: Vec<(&str, Damage, Vec<Cmd>, Vec<&str>)> = vec![
        (
            "both superblocks zeroed",
            Box::new(|p| zero_bytes(p, 1024, 2 * BLOCK - 1024).unwrap()),
            CMDS.to_vec(),
            vec!["superblock"],
        ),
        (
            "first superblock zeroed",
            Box::new(|p| zero_bytes(p, 1024, BLOCK - 1024).unwrap()),
            vec![],
            vec!["superblock"],
        ),
        (
            "both checkpoint packs zeroed",
            Box::new(|p| {
                let (s, _) = layout.cp_pack(0);
                let (_, e) = layout.cp_pack(1);
                zero_blocks(p, s, e).unwrap()
            }),
            CMDS.to_vec(),
            vec!["checkpoint"],
        ),
        (
            "checkpoint pack 0 zeroed",
            Box::new(|p| {
                let (s, e) = layout.cp_pack(0);
                zero_blocks(p, s, e).unwrap()
            }),
            vec![],
            vec!["checkpoint"],
        ),
        (
            "checkpoint pack 1 zeroed",
            Box::new(|p| {
                let (s, e) = layout.cp_pack(1);
                zero_blocks(p, s, e).unwrap()
            }),
            vec![],
            vec!["checkpoint"],
        ),
        (
            "NAT zeroed",
            Box::new(|p| {
                let (s, e) = layout.nat();
                zero_blocks(p, s, e).unwrap()
            }),
            all_reads.to_vec(),
            vec!["nat"],
        ),
        (
            "SIT zeroed",
            Box::new(|p| {
                let (s, e) = layout.sit();
                zero_blocks(p, s, e).unwrap()
            }),
            vec![],
            vec!["sit"],
        ),
        (
            "root inode block zeroed",
            Box::new(move |p| zero_blocks(p, root.blkaddr, root.blkaddr + 1).unwrap()),
            all_reads.to_vec(),
            vec!["inode"],
        ),
        (
            "direct node of /needs_direct_node zeroed",
            Box::new(move |p| zero_blocks(p, direct.blkaddr, direct.blkaddr + 1).unwrap()),
            vec![Cmd::CatNodeFile, Cmd::Extract],
            vec!["node"],
        ),
    ];
    for (what, damage, must_fail, words) in &cases {
        damage(&img);
        let (p, outcomes) = run_all(&img, tmp.path(), what);
        problems.extend(p);
        // Named structure and its block address in every required failure.
        let mut named: Vec<&str> = words.clone();
        named.push("block");
        require_named(what, &outcomes, must_fail, &named, &mut problems);
        // Any other failure must at least name the structure.
        failures_name_one_of(what, &outcomes, words, &mut problems);
        sparse_copy(fx.img(), &img).unwrap();
    }
    assert_none("zeroed structures", &problems);
}

/// The inode number of a top-level name, from fsck.f2fs's tree listing.
fn inode_of(fx: &Fixture, work: &Path, name: &str) -> u64 {
    let out = std::process::Command::new(uf2fs_testkit::image::tool("fsck.f2fs"))
        .arg("-t")
        .arg(fx.img())
        .current_dir(work)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("fsck.f2fs -t");
    let text = String::from_utf8_lossy(&out.stdout);
    let needle = format!("|-- {name} <ino = 0x");
    let line = text
        .lines()
        .find(|l| l.starts_with(&needle))
        .unwrap_or_else(|| panic!("{name} not in fsck -t"));
    let hex = &line[needle.len()..];
    let hex: String = hex.chars().take_while(char::is_ascii_hexdigit).collect();
    u64::from_str_radix(&hex, 16).unwrap()
}

/// Where a flip may land: metadata blocks every open reads, and node blocks.
#[derive(Debug, Clone, Copy)]
enum Target {
    Meta(u64),
    Node(NodeRef),
}

fn pick_target(rng: &mut Rng, layout: &Layout, nodes: &[NodeRef]) -> Target {
    if rng.chance(1, 2) {
        return Target::Node(*rng.pick(nodes));
    }
    let (cp0, _) = layout.cp_pack(0);
    let (cp1, _) = layout.cp_pack(1);
    let (nat, nat_end) = layout.nat();
    let nat_half = (nat_end - nat) / 2;
    let meta = [
        0,
        1,
        cp0,
        cp0 + 1,
        cp0 + 2,
        cp0 + 3,
        cp1,
        cp1 + 1,
        cp1 + 2,
        cp1 + 3,
        nat,
        nat + 1,
        nat + nat_half,
        nat + nat_half + 1,
        layout.sit_blkaddr,
        layout.ssa_blkaddr,
    ];
    Target::Meta(*rng.pick(&meta))
}

/// A byte of a metadata block, mostly where the small image keeps live fields: the
/// superblock's fields, the checkpoint header, the NAT entries of the first nids.
fn meta_offset(rng: &mut Rng, block: u64, layout: &Layout) -> u64 {
    let (nat, nat_end) = layout.nat();
    let live = if block < 2 {
        1024..1024 + 0x180
    } else if (nat..nat_end).contains(&block) {
        0..9 * 200
    } else {
        0..0x200
    };
    if rng.chance(3, 4) {
        rng.range(live.start, live.end)
    } else if block < 2 {
        rng.range(1024, BLOCK)
    } else {
        rng.below(BLOCK)
    }
}

/// A byte of a node block, mostly in the inode header and the first addresses, or in the
/// footer (nid, ino, offset, checkpoint version, next block).
fn node_offset(rng: &mut Rng) -> u64 {
    match rng.below(4) {
        0 | 1 => rng.below(360 + 64),
        2 => rng.range(BLOCK - 24, BLOCK),
        _ => rng.below(BLOCK),
    }
}

/// Byte offsets of an inode's i_size (16..24): a flipped size is a valid reading of a
/// sparse file (F2FS keeps no second copy to check it against), and `cat` would then
/// rightly stream terabytes of zeros. Flips avoid it.
const I_SIZE: std::ops::Range<u64> = 16..24;

fn flip_trials(variant: &str, seed: u64, trials: u64) {
    let fx = small(variant);
    let tmp = scratch("bad-flip-");
    let layout = Layout::read(fx.img()).expect("layout");
    let nodes = node_blocks(fx.img(), tmp.path()).expect("dump.f2fs -n");
    assert!(!nodes.is_empty());
    let img = copy_of(fx, tmp.path());
    let mut flipper = Flipper::open(&img).unwrap();
    let mut rng = Rng::new(seed);
    let mut problems = Vec::new();
    let (mut failed, mut slowest) = (0usize, Duration::ZERO);
    for trial in 0..trials {
        let target = pick_target(&mut rng, &layout, &nodes);
        let flips = rng.range(1, 4);
        let mut desc = Vec::new();
        for _ in 0..flips {
            let (block, offset) = match target {
                Target::Meta(b) => (b, meta_offset(&mut rng, b, &layout)),
                Target::Node(n) => {
                    let mut off = node_offset(&mut rng);
                    while n.nid == n.ino && I_SIZE.contains(&off) {
                        off = node_offset(&mut rng);
                    }
                    (n.blkaddr, off)
                }
            };
            let bit = rng.below(8) as u8;
            flipper.flip(block * BLOCK + offset, bit).unwrap();
            desc.push(format!("block {block:#x} byte {offset} bit {bit}"));
        }
        let what = format!(
            "{variant} trial {trial} (seed {seed:#x}; {target:?}; {})",
            desc.join(", ")
        );
        let (p, outcomes) = run_all(&img, tmp.path(), &what);
        problems.extend(p);
        for (_, o) in &outcomes {
            failed += usize::from(!o.success());
            slowest = slowest.max(o.elapsed);
        }
        flipper.undo().unwrap();
    }
    eprintln!("{variant}: {trials} flip trials, {failed} failing runs, slowest run {slowest:.2?}");
    assert_none(&format!("bit flips on {variant}"), &problems);
}

fn trials() -> u64 {
    std::env::var("UF2FS_FLIP_TRIALS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200)
}

#[test]
fn random_bit_flips_default() {
    flip_trials("default", 0xb17f_1105, trials());
}

#[test]
fn random_bit_flips_extra_attr_checksums() {
    flip_trials("extra_csum", 0xb17f_1106, trials() / 2);
}

/// Arguments that are not images at all.
#[test]
fn unusable_inputs_fail_with_one_line() {
    let tmp = scratch("bad-args-");
    let empty = tmp.path().join("empty.img");
    fs::write(&empty, b"").unwrap();
    let text = tmp.path().join("text.img");
    fs::write(&text, "not an image\n".repeat(2000)).unwrap();
    let fx = small("default");
    let img: OsString = fx.img().into();
    let bin = common::uf2fs().with_timeout(LIMIT);
    let cases: Vec<Vec<OsString>> = vec![
        vec!["info".into(), tmp.path().join("missing.img").into()],
        vec!["info".into(), tmp.path().into()],
        vec!["info".into(), empty.clone().into()],
        vec!["info".into(), text.clone().into()],
        vec!["info".into(), "/dev/null".into()],
        vec!["ls".into(), text.into()],
        vec!["cat".into(), empty.into(), "/x".into()],
        vec!["ls".into(), img.clone(), "/no/such".into()],
        vec!["cat".into(), img.clone(), "/dir".into()],
        vec!["cat".into(), img.clone(), "/hello.txt/below".into()],
        vec![
            "extract".into(),
            img.clone(),
            "/no/such".into(),
            tmp.path().join("out1").into(),
        ],
        vec!["extract".into(), img.clone(), "/dev/null/x".into()],
        vec!["frobnicate".into()],
        vec!["cat".into(), img],
    ];
    let mut problems = Vec::new();
    for args in cases {
        let out = bin.run(&args);
        if out.success() {
            problems.push(format!("should fail: {}", out.describe()));
        } else if let Some(p) = out.robustness_problem() {
            problems.push(p);
        }
    }
    assert_none("unusable inputs", &problems);
}
