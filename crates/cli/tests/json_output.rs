//! `--json` end to end (docs/json.md): `ls --json` of an mkfs.f2fs + sload.f2fs image
//! against the source tree (every name, its type, mode, links, owner, size, mtime and
//! symlink target; hard links sharing an inode), `info --json` against dump.f2fs's
//! reading of the same superblock and checkpoint, and bad input failing with one line
//! and no JSON.

mod common;

use common::{assert_no_problems, full, uf2fs};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::process::Command;
use uf2fs_testkit::run::{arg, path_arg};
use uf2fs_testkit::tree::{is_root, ExpectedKind};

fn parse(out: &[u8]) -> Value {
    serde_json::from_slice(out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", String::from_utf8_lossy(out)))
}

/// An entry's exact path bytes: `path_bytes` when present, else `path`.
fn path_of(entry: &Value) -> Vec<u8> {
    match entry.get("path_bytes") {
        Some(Value::Array(bytes)) => bytes.iter().map(|b| b.as_u64().unwrap() as u8).collect(),
        _ => entry["path"].as_str().unwrap().as_bytes().to_vec(),
    }
}

#[test]
fn ls_json_lists_every_entry_with_its_attributes() {
    let fx = full("extra_flex");
    let out = uf2fs().run([arg(b"ls"), arg(b"--json"), arg(b"-R"), path_arg(fx.img())]);
    let doc = parse(out.assert_ok());
    let entries = doc["entries"].as_array().expect("entries array");
    let mut problems = Vec::new();
    let mut seen: BTreeMap<Vec<u8>, &Value> = BTreeMap::new();
    for e in entries {
        let path = path_of(e);
        if seen.insert(path.clone(), e).is_some() {
            problems.push(format!("{} listed twice", String::from_utf8_lossy(&path)));
        }
    }
    // Every expected path but the root (not an entry of any directory), and nothing else.
    let want: Vec<&Vec<u8>> = fx.expected.keys().filter(|k| !k.is_empty()).collect();
    for rel in &want {
        let mut abs = b"/".to_vec();
        abs.extend_from_slice(rel);
        let Some(e) = seen.get(&abs) else {
            problems.push(format!("/{} missing", String::from_utf8_lossy(rel)));
            continue;
        };
        let x = &fx.expected[*rel];
        let shown = String::from_utf8_lossy(rel);
        let (kind, target) = match &x.kind {
            ExpectedKind::File(_) => ("file", None),
            ExpectedKind::Dir => ("dir", None),
            ExpectedKind::Symlink(t) => ("symlink", Some(t)),
        };
        if e["type"] != kind {
            problems.push(format!("/{shown}: type {} (want {kind})", e["type"]));
        }
        if e["mode"].as_u64() != Some(u64::from(x.perm)) {
            problems.push(format!("/{shown}: mode {} (want {})", e["mode"], x.perm));
        }
        if e["nlink"].as_u64() != Some(u64::from(x.nlink)) {
            problems.push(format!("/{shown}: nlink {} (want {})", e["nlink"], x.nlink));
        }
        let owner_kept = is_root() || fx.variant().sload.preserve_owner;
        if owner_kept && (e["uid"].as_u64(), e["gid"].as_u64()) != (Some(u64::from(x.uid)), Some(u64::from(x.gid))) {
            problems.push(format!(
                "/{shown}: owner {}:{} (want {}:{})",
                e["uid"], e["gid"], x.uid, x.gid
            ));
        }
        if let Some(size) = x.size() {
            if e["size"].as_u64() != Some(size) {
                problems.push(format!("/{shown}: size {} (want {size})", e["size"]));
            }
        }
        if let Some(mtime) = x.mtime {
            if e["mtime"].as_i64() != Some(mtime) || e["mtime_nsec"].as_u64() != Some(0) {
                problems.push(format!("/{shown}: mtime {} (want {mtime})", e["mtime"]));
            }
        }
        let got_target: Option<Vec<u8>> = match (e.get("target_bytes"), e.get("target")) {
            (Some(Value::Array(b)), _) => Some(b.iter().map(|v| v.as_u64().unwrap() as u8).collect()),
            (_, Some(Value::String(t))) => Some(t.as_bytes().to_vec()),
            _ => None,
        };
        if got_target.as_ref() != target {
            problems.push(format!("/{shown}: target {got_target:?} (want {target:?})"));
        }
        if e["name"].as_str().is_none() || e["ino"].as_u64().is_none() {
            problems.push(format!("/{shown}: no name or ino: {e}"));
        }
    }
    if seen.len() != want.len() {
        problems.push(format!("{} entries listed, {} expected", seen.len(), want.len()));
    }
    // Names of one link group share one inode number, and no one else has it.
    let mut by_group: HashMap<usize, Vec<u64>> = HashMap::new();
    for (rel, x) in &fx.expected {
        if let (Some(g), false) = (x.link_group, rel.is_empty()) {
            let mut abs = b"/".to_vec();
            abs.extend_from_slice(rel);
            if let Some(e) = seen.get(&abs) {
                by_group.entry(g).or_default().push(e["ino"].as_u64().unwrap());
            }
        }
    }
    for (g, inos) in &by_group {
        if inos.iter().any(|i| *i != inos[0]) {
            problems.push(format!("link group {g}: inodes {inos:?}"));
        }
    }
    assert!(!by_group.is_empty(), "the tree has hard links");
    assert_no_problems("ls --json -R", &problems);
}

#[test]
fn ls_json_of_one_file_and_with_dot_entries() {
    let fx = full("default");
    let (rel, x) = fx
        .expected
        .iter()
        .find(|(_, x)| matches!(x.kind, ExpectedKind::File(_)))
        .expect("a file");
    let mut abs = b"/".to_vec();
    abs.extend_from_slice(rel);
    let out = uf2fs().run([arg(b"ls"), arg(b"--json"), path_arg(fx.img()), arg(&abs)]);
    let doc = parse(out.assert_ok());
    let entries = doc["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{doc}");
    assert_eq!(path_of(&entries[0]), abs);
    assert_eq!(entries[0]["size"].as_u64(), x.size());

    let out = uf2fs().run([arg(b"ls"), arg(b"--json"), arg(b"-a"), path_arg(fx.img())]);
    let doc = parse(out.assert_ok());
    let names: Vec<&str> = doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(&names[..2], [".", ".."], "{names:?}");
    let top_level = fx
        .expected
        .keys()
        .filter(|k| !k.is_empty() && !k.contains(&b'/'))
        .count();
    assert_eq!(names.len(), top_level + 2);
}

/// `name  [0x  hex : decimal]` lines of dump.f2fs -d 1: the decimal value by name.
fn dump_fields(img: &std::path::Path) -> HashMap<String, u64> {
    let out = Command::new(uf2fs_testkit::image::tool("dump.f2fs"))
        .args(["-d", "1"])
        .arg(img)
        .output()
        .expect("run dump.f2fs (is f2fs-tools installed?)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let mut fields = HashMap::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once('[') else {
            continue;
        };
        let Some(dec) = rest.split_once(':').map(|(_, d)| d.trim().trim_end_matches(']').trim()) else {
            continue;
        };
        if let Ok(v) = dec.parse::<u64>() {
            fields.insert(name.trim().to_owned(), v);
        }
    }
    assert!(
        fields.contains_key("block_count"),
        "dump.f2fs -d 1 printed no superblock:\n{text}"
    );
    fields
}

#[test]
fn info_json_matches_dump_f2fs() {
    for variant in ["default", "seg4"] {
        let fx = full(variant);
        let out = uf2fs().run([arg(b"info"), arg(b"--json"), path_arg(fx.img())]);
        let doc = parse(out.assert_ok());
        let d = dump_fields(fx.img());
        let cp = &doc["checkpoint"];
        let areas = &doc["areas"];
        let pairs: [(&str, &Value); 16] = [
            ("block_count", &doc["block_count"]),
            ("section_count", &doc["section_count"]),
            ("segment_count", &doc["segment_count"]),
            ("segs_per_sec", &doc["segments_per_section"]),
            ("secs_per_zone", &doc["sections_per_zone"]),
            ("segment_count_main", &areas["main"]["segments"]),
            ("cp_blkaddr", &areas["checkpoint"]["blkaddr"]),
            ("sit_blkaddr", &areas["sit"]["blkaddr"]),
            ("nat_blkaddr", &areas["nat"]["blkaddr"]),
            ("main_blkaddr", &areas["main"]["blkaddr"]),
            ("root_ino", &doc["root_ino"]),
            ("checkpoint_ver", &cp["version"]),
            ("user_block_count", &cp["user_block_count"]),
            ("valid_block_count", &cp["valid_block_count"]),
            ("valid_node_count", &cp["valid_node_count"]),
            ("valid_inode_count", &cp["valid_inode_count"]),
        ];
        let mut problems = Vec::new();
        for (name, got) in pairs {
            match d.get(name) {
                Some(want) if got.as_u64() == Some(*want) => {}
                want => problems.push(format!("{variant}: {name}: info --json {got}, dump.f2fs {want:?}")),
            }
        }
        assert_eq!(
            doc["blocks_per_segment"].as_u64(),
            d.get("log_blocks_per_seg").map(|l| 1 << l)
        );
        assert_no_problems("info --json against dump.f2fs", &problems);
        for feature in fx.variant().features {
            assert!(
                doc["features"].as_array().unwrap().iter().any(|f| f == feature),
                "{variant}: {feature} missing from {}",
                doc["features"]
            );
        }
        assert_eq!(doc["block_size"], 4096);
        assert_eq!(doc["roll_forward_replayed"], false);
        assert_eq!(doc["uuid"].as_str().map(str::len), Some(36));
    }
}

#[test]
fn bad_input_is_one_line_and_no_json() {
    let tmp = common::scratch("json-bad-");
    let junk = tmp.path().join("junk.img");
    std::fs::write(&junk, vec![0u8; 1 << 20]).unwrap();
    for sub in [&b"info"[..], b"ls"] {
        let out = uf2fs().run([arg(sub), arg(b"--json"), path_arg(&junk)]);
        out.assert_clean_failure();
        assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    }
    let fx = full("default");
    let out = uf2fs().run([arg(b"ls"), arg(b"--json"), path_arg(fx.img()), arg(b"/no/such")]);
    out.assert_clean_failure();
    assert!(out.stdout.is_empty());
}
