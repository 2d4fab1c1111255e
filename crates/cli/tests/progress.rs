//! Progress display: `extract` and `mkfs` draw a progress line on stderr when it is a
//! terminal (here a pseudo-terminal made by util-linux's `script`), and write nothing
//! there in a pipe; the work itself is the same either way. `mkfs -q` stays quiet on a
//! terminal too.

mod common;

use common::{assert_no_problems, full, scratch};
use std::path::Path;
use std::process::{Command, Output};
use uf2fs_testkit::compare::{compare_tree, CompareOptions};
use uf2fs_testkit::tree::is_root;

const BIN: &str = env!("CARGO_BIN_EXE_uf2fs");

/// `'arg'` for sh.
fn quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

/// Runs uf2fs with `args` on a pseudo-terminal: what the terminal showed (stdout and
/// stderr together, as `script` records them).
fn on_terminal(args: &[&str]) -> Output {
    let mut cmdline = quote(BIN);
    for a in args {
        cmdline.push(' ');
        cmdline.push_str(&quote(a));
    }
    let out = Command::new("script")
        .args(["-q", "-e", "-f", "-c", &cmdline, "/dev/null"])
        .env("TERM", "xterm")
        .output()
        .expect("run script (util-linux)");
    assert!(
        out.status.success(),
        "{cmdline} on a terminal: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

/// Runs uf2fs with stdout and stderr piped.
fn in_pipe(args: &[&str]) -> Output {
    let out = Command::new(BIN).args(args).output().expect("run uf2fs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn same_tree(img_expected: &common::Fixture, out: &Path) {
    let opts = CompareOptions {
        owners: is_root(),
        root: false,
        atime: true,
        ctime: false,
        xattrs: false,
        contents: true,
    };
    let problems = compare_tree(out, &img_expected.expected, opts);
    assert_no_problems("extracted tree", &problems);
}

#[test]
fn extract_shows_progress_on_a_terminal_only() {
    let fx = full("default");
    let img = fx.img().to_str().unwrap();
    let tmp = scratch("progress-extract-");

    let dest = tmp.path().join("tty");
    let out = on_terminal(&["extract", img, dest.to_str().unwrap()]);
    let shown = text(&out.stdout);
    let inodes = {
        let info = in_pipe(&["info", "--json", img]);
        let doc: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        doc["checkpoint"]["valid_inode_count"].as_u64().unwrap()
    };
    // The whole image: files out of the checkpoint's inode count, bytes with a rate and
    // the time left, then the line cleared (erase-line, and nothing after it).
    assert!(
        shown.contains(&format!("/{inodes} files extracting")),
        "terminal showed:\n{shown}"
    );
    // Bytes done out of the total (the total is in MiB; how far the bytes done got
    // before the last redraw depends on the machine's speed, so only the total is sure).
    for want in ["ETA", "B/s", " MiB "] {
        assert!(shown.contains(want), "no '{want}' in:\n{shown}");
    }
    let last_line = shown.rsplit(['\r', '\n']).find(|l| !l.is_empty()).unwrap_or("");
    assert!(
        !last_line.contains("extracting"),
        "bar left on the terminal:\n{shown:?}"
    );
    same_tree(fx, &dest);

    // A subtree: no totals, counts only.
    let sub = fx
        .expected
        .iter()
        .find(|(k, x)| !k.is_empty() && !k.contains(&b'/') && x.kind == uf2fs_testkit::tree::ExpectedKind::Dir)
        .map(|(k, _)| format!("/{}", String::from_utf8_lossy(k)))
        .expect("a top-level directory");
    let out = on_terminal(&["extract", img, &sub, tmp.path().join("sub").to_str().unwrap()]);
    let shown = text(&out.stdout);
    assert!(shown.contains(" files extracting") && !shown.contains("ETA"), "{shown}");

    let dest = tmp.path().join("pipe");
    let out = in_pipe(&["extract", img, dest.to_str().unwrap()]);
    assert!(out.stderr.is_empty() && out.stdout.is_empty(), "{}", text(&out.stderr));
    same_tree(fx, &dest);
}

#[test]
fn mkfs_shows_progress_on_a_terminal_unless_quiet() {
    let tmp = scratch("progress-mkfs-");
    let img = tmp.path().join("tty.img");
    let out = on_terminal(&["mkfs", "--size", "512M", img.to_str().unwrap()]);
    let shown = text(&out.stdout);
    // The bar shows "<done>/<total>" with the total in KiB or MiB; how far <done> got
    // before the last redraw depends on the machine's speed (0 B on a fast one).
    let total_shown = shown.split("B/").skip(1).any(|rest| {
        rest.split_whitespace()
            .nth(1)
            .is_some_and(|unit| unit == "KiB" || unit == "MiB")
    });
    assert!(shown.contains("formatting") && total_shown, "{shown}");
    assert!(shown.contains("made F2FS on"), "{shown}");
    // The summary comes after the bar is cleared.
    let summary_at = shown.find("made F2FS on").unwrap();
    assert!(!shown[summary_at..].contains("formatting"), "{shown:?}");

    let img = tmp.path().join("quiet.img");
    let out = on_terminal(&["mkfs", "-q", "--size", "512M", img.to_str().unwrap()]);
    assert!(
        out.stdout.is_empty(),
        "mkfs -q on a terminal showed: {:?}",
        text(&out.stdout)
    );

    let img = tmp.path().join("pipe.img");
    let out = in_pipe(&["mkfs", "--size", "512M", img.to_str().unwrap()]);
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("made F2FS on"), "{}", text(&out.stdout));
}

/// On a block device (a loop device over a sparse file; needs root, as CI runs) mkfs
/// zeroes the old SIT and NAT: tens of MiB on 64 GiB, all counted by the bar.
#[test]
fn mkfs_of_a_device_counts_the_metadata_it_clears() {
    if !is_root() {
        eprintln!("skipped: a loop device needs root");
        return;
    }
    let tmp = scratch("progress-mkfs-dev-");
    let backing = tmp.path().join("dev.img");
    std::fs::File::create(&backing).unwrap().set_len(64 << 30).unwrap();
    let out = Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&backing)
        .output()
        .expect("run losetup");
    assert!(out.status.success(), "losetup: {}", text(&out.stderr));
    let dev = text(&out.stdout).trim().to_owned();
    let shown = on_terminal(&["mkfs", "-f", &dev]);
    let detach = Command::new("losetup").args(["-d", &dev]).status();
    let shown = text(&shown.stdout);
    assert!(detach.is_ok_and(|s| s.success()), "losetup -d {dev}");
    // The last count drawn is the total, in MiB.
    let totals: Vec<&str> = shown
        .split(['\r', '\n'])
        .filter(|l| l.contains("formatting"))
        .filter_map(|l| l.split(" MiB/").nth(1))
        .collect();
    assert!(!totals.is_empty(), "no MiB total drawn:\n{shown}");
    assert!(shown.contains("made F2FS on"), "{shown}");
}

/// Building an image from a tree: inodes made out of the scan's count and data bytes
/// written out of its total, with the rate and the time left, on a terminal; nothing on
/// stderr in a pipe or with `-q`.
#[test]
fn mkfs_from_a_tree_shows_progress_on_a_terminal_only() {
    let tmp = scratch("progress-pack-");
    let src = tmp.path().join("src");
    std::fs::create_dir_all(src.join("d")).unwrap();
    for i in 0..30 {
        let data = uf2fs_testkit::data::noise(1 << 20, 0x9e37_79b9_7f4a_7c15 ^ i);
        std::fs::write(src.join(format!("d/f{i:02}")), data).unwrap();
    }
    let src_arg = src.to_str().unwrap();
    let img = tmp.path().join("tty.img");
    let out = on_terminal(&["mkfs", img.to_str().unwrap(), src_arg]);
    let shown = text(&out.stdout);
    // 30 files, their directory and the root.
    assert!(shown.contains("/32 files packing"), "terminal showed:\n{shown}");
    for want in ["ETA", "B/s", "/30.00 MiB "] {
        assert!(shown.contains(want), "no '{want}' in:\n{shown}");
    }
    // The summary comes after the bar is cleared.
    let summary_at = shown.find("packed:").expect("summary");
    assert!(!shown[summary_at..].contains("packing"), "{shown:?}");

    let img = tmp.path().join("quiet.img");
    let out = on_terminal(&["mkfs", "-q", img.to_str().unwrap(), src_arg]);
    assert!(out.stdout.is_empty(), "mkfs -q showed: {:?}", text(&out.stdout));

    let pipe = tmp.path().join("pipe.img");
    let out = in_pipe(&["mkfs", pipe.to_str().unwrap(), src_arg]);
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("packed:"), "{}", text(&out.stdout));
    // The same image either way.
    assert_eq!(std::fs::read(&img).unwrap(), std::fs::read(&pipe).unwrap());
}
