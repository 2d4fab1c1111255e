//! Sweeps: `uf2fs bench waf|latency|writeback --shard I/N` and `uf2fs bench merge`, on
//! runs small enough for seconds. Shards 1/3, 2/3 and 3/3 merged give the JSON of the
//! unsharded run (timings aside: keys containing "elapsed"); missing, repeated and
//! foreign shards are refused with one line, exit code 2, and no output written.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn uf2fs(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_uf2fs"))
        .args(args)
        .output()
        .expect("run uf2fs")
}

fn run_ok(args: &[String]) -> String {
    let out = uf2fs(args);
    assert!(
        out.status.success(),
        "uf2fs {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn path(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// A tiny `bench waf`: 64 zones of 2 MiB, 3 policies x 2 workloads (6 runs).
fn waf(extra: &[&str]) -> Vec<String> {
    waf_of("greedy,prefer-data-v2,default", "uniform,zipf", extra)
}

/// A tiny `bench waf` of `policies` x `workloads`.
fn waf_of(policies: &str, workloads: &str, extra: &[&str]) -> Vec<String> {
    let mut v = strs(&[
        "bench",
        "waf",
        "--zones",
        "64",
        "--zone-size",
        "2M",
        "--conv-size",
        "16M",
        "--file-size",
        "80M",
        "--io-size",
        "40M",
        "--overprovision",
        "10",
        "--policy",
        policies,
        "--workload",
        workloads,
    ]);
    v.extend(strs(extra));
    v
}

/// A tiny `bench latency`: the small preset's volume, 16 MiB of overwrites, three
/// pacers at full speed and at 50% (6 runs).
fn latency(extra: &[&str]) -> Vec<String> {
    let mut v = strs(&[
        "bench",
        "latency",
        "--file-size",
        "512M",
        "--io-size",
        "16M",
        "--rate",
        "50",
    ]);
    v.extend(strs(extra));
    v
}

/// A tiny `bench writeback`: 2 workloads x 3 context counts, 2 runs each.
fn writeback(extra: &[&str]) -> Vec<String> {
    let mut v = strs(&[
        "bench",
        "writeback",
        "--large-size",
        "4M",
        "--large-files",
        "2",
        "--small-files",
        "40",
        "--contexts",
        "1,2,4",
        "--policy",
        "ino-hash",
        "--runs",
        "2",
    ]);
    v.extend(strs(extra));
    v
}

fn with(base: &[String], extra: &[String]) -> Vec<String> {
    base.iter().chain(extra).cloned().collect()
}

fn read(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The document without its timings (every key containing "elapsed").
fn untimed(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.contains("elapsed"))
                .map(|(k, v)| (k.clone(), untimed(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(untimed).collect()),
        other => other.clone(),
    }
}

/// Runs `base` unsharded and as shards 1/3..3/3 into `dir`; returns the local JSON,
/// the shard files, and merges them (in the order 3, 1, 2) into `merged.json`.
fn sweep(dir: &Path, base: &[String]) -> (PathBuf, Vec<PathBuf>, PathBuf) {
    let local = dir.join("local.json");
    run_ok(&with(base, &strs(&["--json", &path(&local)])));
    let shards: Vec<PathBuf> = (1..=3).map(|i| dir.join(format!("shard-{i}.json"))).collect();
    for (i, s) in shards.iter().enumerate() {
        let out = run_ok(&with(
            base,
            &strs(&["--shard", &format!("{}/3", i + 1), "--json", &path(s)]),
        ));
        assert!(out.contains(&format!("shard {}/3:", i + 1)), "{out}");
    }
    let merged = dir.join("merged.json");
    let out = run_ok(&strs(&[
        "bench",
        "merge",
        "--json",
        &path(&merged),
        &path(&shards[2]),
        &path(&shards[0]),
        &path(&shards[1]),
    ]));
    assert!(out.contains("merged 3 shards"), "{out}");
    (local, shards, merged)
}

#[test]
fn waf_shards_merge_into_the_local_run() {
    let dir = tempfile::tempdir().unwrap();
    let (local, shards, merged) = sweep(dir.path(), &waf(&[]));
    let (l, m) = (read(&local), read(&merged));
    assert_eq!(l.as_array().unwrap().len(), 6);
    assert_eq!(untimed(&l), untimed(&m));
    // Byte for byte, once the timings are the same.
    let strip = |p: &Path| {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .filter(|l| !l.contains("elapsed"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip(&local), strip(&merged));
    // waf_vs_greedy comes from greedy's run, in another shard for two of the policies.
    let s1 = read(&shards[0]);
    let recs = s1["records"].as_array().unwrap();
    assert_eq!(
        recs.iter().map(|r| r["run"].as_u64().unwrap()).collect::<Vec<_>>(),
        [0, 3]
    );
    assert!(recs.iter().all(|r| r["record"]["waf_vs_greedy"].is_null()));
    assert!(m[1]["waf_vs_greedy"].is_f64(), "{}", m[1]);
    // Each record whole: its own setup and geometry.
    assert_eq!(recs[0]["record"]["setup"]["zones"], 64);
    assert!(recs[0]["record"]["geometry"]["main_sections"].is_u64());
}

#[test]
fn latency_shards_merge_into_the_local_run() {
    let dir = tempfile::tempdir().unwrap();
    let (local, shards, merged) = sweep(dir.path(), &latency(&[]));
    let (l, m) = (read(&local), read(&merged));
    assert_eq!(l["results"].as_array().unwrap().len(), 6);
    assert_eq!(untimed(&l), untimed(&m));
    // Shard 2/3 holds seed at full speed and at 50%, which needs off's full-speed
    // IOPS: it ran off for it, and left it out of its records.
    let keys = |p: &Path| -> Vec<String> {
        read(p)["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["key"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(keys(&shards[0]), ["off/full", "off/50%"]);
    assert_eq!(keys(&shards[1]), ["seed/full", "seed/50%"]);
    assert_eq!(l["results"][4]["offered_iops"], m["results"][4]["offered_iops"]);
    assert!(l["results"][4]["offered_iops"].as_f64().unwrap() > 0.0);
}

#[test]
fn writeback_shards_merge_into_the_local_runs_order() {
    let dir = tempfile::tempdir().unwrap();
    let base = writeback(&[]);
    let (local, shards, merged) = sweep(dir.path(), &base);
    // Throughput and layout are wall-clock and thread measurements, different in any
    // two runs: the same runs in the same order, each record whole from its shard.
    let id = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| format!("{}/{}/{}/{}", r["workload"], r["contexts"], r["policy"], r["bytes"]))
            .collect()
    };
    let (l, m) = (read(&local), read(&merged));
    assert_eq!(id(&l).len(), 12);
    assert_eq!(id(&l), id(&m));
    let mut from_shards: Vec<(u64, Value)> = Vec::new();
    for s in &shards {
        for r in read(s)["records"].as_array().unwrap() {
            for run in r["record"].as_array().unwrap() {
                from_shards.push((r["run"].as_u64().unwrap(), run.clone()));
            }
        }
    }
    from_shards.sort_by_key(|(run, _)| *run);
    let from_shards: Vec<Value> = from_shards.into_iter().map(|(_, v)| v).collect();
    assert_eq!(m, Value::Array(from_shards));
    for r in m.as_array().unwrap() {
        let keys: Vec<&String> = r.as_object().unwrap().keys().collect();
        let local_keys: Vec<&String> = l[0].as_object().unwrap().keys().collect();
        assert_eq!(keys, local_keys);
    }
}

/// Runs `bench merge` expecting a refusal: exit code 2, one `uf2fs:` line containing
/// `want`, and no output file.
fn refused(dir: &Path, shards: &[&Path], want: &str) {
    let out_path = dir.join("refused.json");
    let mut args = strs(&["bench", "merge", "--json", &path(&out_path)]);
    args.extend(shards.iter().map(|p| path(p)));
    let out = uf2fs(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("uf2fs: ") && stderr.contains(want),
        "want '{want}': {stderr}"
    );
    assert!(!out_path.exists(), "{args:?} wrote {}", out_path.display());
}

/// Writes `v` as a shard file `name` in `dir`.
fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
    p
}

#[test]
fn missing_repeated_and_foreign_shards_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = waf_of("greedy,default", "uniform", &[]);
    let shard = |i: usize, n: usize, extra: &[&str], name: &str| -> PathBuf {
        let p = d.join(name);
        let mut args = with(&base, &strs(&["--shard", &format!("{i}/{n}"), "--json", &path(&p)]));
        args.extend(strs(extra));
        run_ok(&args);
        p
    };
    let (s1, s2, s3) = (
        shard(1, 3, &[], "s1.json"),
        shard(2, 3, &[], "s2.json"),
        // 2 runs, 3 shards: shard 3 has none, and still belongs to the sweep.
        shard(3, 3, &[], "s3.json"),
    );
    assert!(read(&s3)["records"].as_array().unwrap().is_empty());
    let ok = d.join("ok.json");
    run_ok(&strs(&[
        "bench",
        "merge",
        "--json",
        &path(&ok),
        &path(&s1),
        &path(&s2),
        &path(&s3),
    ]));
    assert_eq!(read(&ok).as_array().unwrap().len(), 2);

    refused(d, &[&s1, &s3], "shard 2/3 of the sweep missing");
    refused(d, &[&s1, &s2, &s3, &s2], "s2.json is given twice");
    let copy = d.join("copy.json");
    std::fs::copy(&s2, &copy).unwrap();
    refused(d, &[&s1, &s2, &s3, &copy], "are both shard 2/3");
    // Other options, another number of shards, another bench, another version.
    let other_seed = shard(2, 3, &["--seed", "7"], "seed7.json");
    refused(d, &[&s1, &other_seed, &s3], "different options (setup.seed: 1 and 7)");
    let of_two = shard(2, 2, &[], "of2.json");
    refused(d, &[&s1, &of_two, &s3], "shard 1/3 of 2 runs and shard 2/2 of 2 runs");
    let mut v = read(&s2);
    v["uf2fs_shard"]["bench"] = "latency".into();
    let other_bench = write(d, "bench.json", &v);
    refused(d, &[&s1, &other_bench, &s3], "bench waf and bench latency");
    let mut v = read(&s2);
    v["uf2fs_shard"]["uf2fs"] = "0.0.1".into();
    let old = write(d, "old.json", &v);
    refused(d, &[&s1, &old, &s3], "written by uf2fs");
    // A run that failed in its shard (no record), a record of another shard's run.
    let mut v = read(&s2);
    v["records"] = Value::Array(vec![]);
    let failed = write(d, "failed.json", &v);
    refused(d, &[&s1, &failed, &s3], "run 1 of shard 2/3 has no record");
    let mut v = read(&s2);
    v["records"][0]["run"] = 0.into();
    let wrong = write(d, "wrong.json", &v);
    refused(d, &[&s1, &wrong, &s3], "is not shard 2/3's");
    // Not shards at all.
    let local = d.join("local.json");
    run_ok(&with(&base, &strs(&["--json", &path(&local)])));
    refused(d, &[&s1, &local, &s3], "not a shard file");
    let text = write(d, "text.json", &Value::Null);
    std::fs::write(&text, "not json").unwrap();
    refused(d, &[&s1, &text, &s3], "is not JSON");
    // The output is one of the shards: refused before anything is read or written.
    let before = std::fs::read(&s1).unwrap();
    let out = uf2fs(&strs(&[
        "bench",
        "merge",
        "--json",
        &path(&s1),
        &path(&s1),
        &path(&s2),
        &path(&s3),
    ]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is one of the shards"));
    assert_eq!(std::fs::read(&s1).unwrap(), before);
}

#[test]
fn bad_shard_options_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let json = path(&dir.path().join("x.json"));
    for (extra, want) in [
        (vec!["--shard", "0/3", "--json", &json], "not a shard"),
        (vec!["--shard", "4/3", "--json", &json], "not a shard"),
        (vec!["--shard", "1/0", "--json", &json], "not a shard"),
        (vec!["--shard", "half", "--json", &json], "not a shard"),
        (vec!["--shard", "1/2"], "--json"),
    ] {
        for base in [waf(&[]), latency(&[]), writeback(&[])] {
            let out = uf2fs(&with(&base, &strs(&extra)));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
            assert!(stderr.contains(want), "{extra:?}: {stderr}");
        }
    }
    let out = uf2fs(&strs(&["bench", "merge", "--json", &json]));
    assert_eq!(out.status.code(), Some(2));
}
