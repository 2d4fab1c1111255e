//! `uf2fs status MOUNTPOINT` end to end: a read-write mount with GC options reports
//! them and the blocks written (user blocks equal to what was written, device blocks
//! at least that, a WAF); a read-only mount says it writes nothing; a directory that is
//! no uf2fs mount is refused with one line.
//!
//! Needs /dev/fuse and fusermount3 (see mount_xattr.rs for the UF2FS_REQUIRE_FUSE rule).

mod common;

use common::mount::{fresh_volume, fuse_available, Mounted, Volume};
use common::uf2fs;
use std::ffi::OsString;
use std::fs;
use std::io::Write;

/// The value of `key:` in a status report.
fn field<'a>(report: &'a str, key: &str) -> &'a str {
    report
        .lines()
        .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix(':')))
        .unwrap_or_else(|| panic!("no '{key}' in:\n{report}"))
        .trim()
}

#[test]
fn status_reports_settings_and_blocks_written() {
    if !fuse_available(&[]) {
        return;
    }
    let Volume { tmp, img, mnt } = fresh_volume("mount-status-", "128M");
    let opts = ["-o", "gc_policy=prefer-data-v2,background_gc=off"];
    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("rw.log"), &opts);
    let mut f = fs::File::create(mnt.join("f")).unwrap();
    f.write_all(&vec![7u8; 8 << 20]).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let out = uf2fs().run([OsString::from("status"), mnt.clone().into()]);
    let report = String::from_utf8(out.assert_ok().to_vec()).unwrap();
    assert_eq!(field(&report, "mode"), "read-write");
    assert_eq!(field(&report, "gc policy"), "prefer-data-v2");
    assert_eq!(field(&report, "background gc"), "off");
    let user: u64 = field(&report, "user blocks written")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(user, 2048, "8 MiB written in 4 KiB blocks:\n{report}");
    let device: u64 = field(&report, "device blocks")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(device >= user, "{report}");
    let waf: f64 = field(&report, "waf").parse().unwrap();
    assert!(waf >= 1.0, "{report}");
    // The file is new in a checkpointed root: its fsync is a roll-forward record.
    assert_eq!(
        field(&report, "fsyncs"),
        "1 roll-forward, 0 by checkpoint (fsync_mode=posix)",
        "{report}"
    );
    assert_eq!(
        field(&report, "recovered at open"),
        "0 inodes from 0 fsync'd node blocks"
    );
    // The same figures as JSON (docs/json.md): the mount's status structure
    // serialised, numbers as numbers.
    let out = uf2fs().run([OsString::from("status"), OsString::from("--json"), mnt.clone().into()]);
    let doc: serde_json::Value = serde_json::from_slice(out.assert_ok()).expect("status --json is JSON");
    assert_eq!(doc["mode"], "read-write", "{doc}");
    assert_eq!(doc["gc_policy"], "prefer-data-v2", "{doc}");
    assert_eq!(doc["background_gc"], "off", "{doc}");
    assert_eq!(doc["user_blocks_written"].as_u64(), Some(user), "{doc}");
    let blocks = &doc["device_blocks"];
    assert!(blocks["total"].as_u64().is_some_and(|d| d >= user), "{doc}");
    assert_eq!(blocks["total"].as_u64(), Some(device), "the text's total: {doc}");
    assert_eq!(blocks["per_device"], serde_json::json!([device]), "{doc}");
    assert_eq!(doc["stopped"], serde_json::Value::Null, "{doc}");
    assert_eq!(doc["fsync_mode"], "posix", "{doc}");
    assert_eq!(doc["active_logs"], 6, "{doc}");
    assert_eq!(
        doc["recovered_at_open"],
        serde_json::json!({"inodes": 0, "node_blocks": 0}),
        "{doc}"
    );
    assert_eq!(
        doc["gc_pacing"]
            .as_str()
            .map(|p| field(&report, "gc pacing").starts_with(p)),
        Some(true),
        "{doc}"
    );
    let kinds: u64 = [
        "user_data",
        "gc_data",
        "user_node",
        "gc_node",
        "checkpoint",
        "nat",
        "sit",
        "ssa",
        "superblock",
    ]
    .iter()
    .map(|k| {
        blocks[*k]
            .as_u64()
            .unwrap_or_else(|| panic!("device_blocks.{k} in {doc}"))
    })
    .sum();
    assert_eq!(
        Some(kinds),
        blocks["total"].as_u64(),
        "the kinds add up to the total: {doc}"
    );
    assert!(blocks["user_data"].as_u64().is_some_and(|d| d >= user), "{doc}");
    assert!(doc["waf"].as_f64().is_some_and(|w| w >= 1.0), "{doc}");
    assert_eq!(doc["fsyncs"]["roll_forward"], 1, "{doc}");
    assert_eq!(doc["fsyncs"]["by_checkpoint"], 0, "{doc}");
    assert!(
        doc["gc_calls"]["foreground"].is_u64() && doc["gc_calls"]["background"].is_u64(),
        "{doc}"
    );
    assert!(doc["gc_time"].is_number(), "{doc}");
    let (ok, log) = m.unmount();
    assert!(ok, "{log}");

    let mut m = Mounted::start(&img, &mnt, &tmp.path().join("ro.log"), &["-o", "ro"]);
    let out = uf2fs().run([OsString::from("status"), mnt.clone().into()]);
    let report = String::from_utf8(out.assert_ok().to_vec()).unwrap();
    assert!(field(&report, "mode").starts_with("read-only"), "{report}");
    let out = uf2fs().run([OsString::from("status"), OsString::from("--json"), mnt.clone().into()]);
    let doc: serde_json::Value = serde_json::from_slice(out.assert_ok()).expect("status --json is JSON");
    assert_eq!(doc, serde_json::json!({"mode": "read-only"}), "{doc}");
    m.unmount();

    let out = uf2fs().run([OsString::from("status"), tmp.path().into()]);
    out.assert_clean_failure();
    assert!(out.err().contains("is not the root of a uf2fs mount"), "{}", out.err());
}
