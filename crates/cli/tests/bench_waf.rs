//! `uf2fs bench waf` end to end, on volumes small enough to run in seconds: the table,
//! the JSON records, the SVG, the same figures whatever `--jobs`, and bad options
//! refused with one line and exit code 2.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

const IO_BYTES: u64 = 300 << 20;

fn uf2fs(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_uf2fs"))
        .args(args)
        .output()
        .expect("run uf2fs")
}

/// A tiny custom setup: 96 zones of 2 MiB, a 150 MiB file, 300 MiB of overwrites.
fn tiny(extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "bench",
        "waf",
        "--zones",
        "96",
        "--zone-size",
        "2M",
        "--conv-size",
        "16M",
        "--file-size",
        "150M",
        "--io-size",
        "300M",
        "--policy",
        "greedy,prefer-data-v2",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn run_ok(args: &[String]) -> String {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = uf2fs(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "uf2fs {args:?} failed: {stderr}");
    // Not a terminal: no progress bar, nothing on stderr.
    assert!(stderr.is_empty(), "{stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `python3 args...`, asserts that it succeeded and returns its standard output.
fn python3_ok(args: &[&Path]) -> String {
    let out = Command::new("python3").args(args).output().expect("run python3");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    text
}

fn records(path: &Path) -> Vec<Value> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v.as_array().expect("a JSON array").clone()
}

fn num(r: &Value, key: &str) -> f64 {
    r[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing or not a number in {r}"))
}

#[test]
fn two_policies_two_workloads_with_json_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("waf.json");
    let svg = dir.path().join("waf.svg");
    let stdout = run_ok(&tiny(&[
        "--workload",
        "uniform,multifile",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]));
    assert!(
        stdout.contains("setup: custom: 16 MiB conventional + 96 zones of 2 MiB"),
        "{stdout}"
    );
    let table: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("greedy ") || l.starts_with("prefer-data-v2 "))
        .collect();
    assert_eq!(table.len(), 4, "{stdout}");
    assert!(stdout.contains("vs greedy"), "{stdout}");
    assert!(stdout.contains("greedy's analytical WAF"), "{stdout}");

    let recs = records(&json);
    assert_eq!(recs.len(), 4);
    let mut pairs = Vec::new();
    for r in &recs {
        for key in [
            "waf",
            "user_blocks",
            "device_blocks",
            "data_blocks_moved",
            "node_blocks_moved",
            "fg_gc_calls",
            "bg_gc_calls",
            "utilization",
            "elapsed_s",
        ] {
            num(r, key);
        }
        let (policy, workload) = (r["policy"].as_str().unwrap(), r["workload"].as_str().unwrap());
        pairs.push(format!("{policy}/{workload}"));
        assert_eq!(num(r, "user_blocks") as u64, IO_BYTES / 4096, "{r}");
        let waf = num(r, "waf");
        assert!(waf >= 1.0, "{r}");
        assert!(
            (waf - num(r, "device_blocks") / num(r, "user_blocks")).abs() < 1e-9,
            "{r}"
        );
        assert_eq!(r["device"]["total"], r["device_blocks"]);
        assert_eq!(r["device"]["gc_data"], r["data_blocks_moved"]);
        assert_eq!(r["device"]["gc_node"], r["node_blocks_moved"]);
        let u = num(r, "utilization");
        assert!(u > 0.5 && u < 1.0, "{r}");
        assert_eq!(r["setup"]["zones"], 96);
        assert_eq!(r["setup"]["zone_bytes"], 2 << 20);
        assert_eq!(r["setup"]["file_bytes"], 150 << 20);
        assert_eq!(r["geometry"]["reserved_segments"], 8);
        // The curve ends at the totals.
        let last = r["curve"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["user_blocks"], r["user_blocks"]);
        assert_eq!(last["device_blocks"], r["device_blocks"]);
        // Each policy is compared with greedy on its workload.
        let vs = num(r, "waf_vs_greedy");
        let greedy = recs
            .iter()
            .find(|g| g["policy"] == "greedy" && g["workload"] == r["workload"])
            .unwrap();
        assert!((vs - (waf / num(greedy, "waf") - 1.0)).abs() < 1e-9, "{r}");
    }
    assert_eq!(
        pairs,
        [
            "greedy/uniform",
            "prefer-data-v2/uniform",
            "greedy/multifile",
            "prefer-data-v2/multifile"
        ]
    );

    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(svg_text.starts_with("<svg"), "{}", &svg_text[..svg_text.len().min(100)]);
    for name in ["greedy", "prefer-data-v2", "uniform", "multifile", "polyline"] {
        assert!(svg_text.contains(name), "{name} not in the SVG");
    }
}

#[test]
fn same_figures_whatever_the_number_of_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.json");
    let two = dir.path().join("two.json");
    run_ok(&tiny(&[
        "--workload",
        "zipf",
        "--jobs",
        "1",
        "--json",
        one.to_str().unwrap(),
    ]));
    run_ok(&tiny(&[
        "--workload",
        "zipf",
        "--jobs",
        "2",
        "--json",
        two.to_str().unwrap(),
    ]));
    let strip = |mut v: Vec<Value>| -> Vec<Value> {
        for r in &mut v {
            let o = r.as_object_mut().unwrap();
            o.retain(|k, _| !k.contains("elapsed"));
        }
        v
    };
    assert_eq!(strip(records(&one)), strip(records(&two)));
}

#[test]
fn bad_options_are_one_line_and_exit_2() {
    for (args, want) in [
        (&["--zone-size", "3M"][..], "not a whole number of 2 MiB segments"),
        (&["--zone-size", "8X"], "unknown size suffix"),
        (&["--io-size", "5000"], "io size 5000 B"),
        (&["--policy", "fastest"], "known: greedy"),
        (&["--workload", "random"], "known: uniform"),
        (&["--jobs", "0"], "number of jobs"),
        (&["--conv-size", "1M"], "--conv-size 1 MiB is too small"),
        (&["--file-size", "100G"], "does not fit"),
        (&["--reserved-sections", "3"], "at least 8"),
        (&["--overprovision", "0"], "out of range"),
        (&["--preset", "large"], "known: small, seed"),
        (
            &["--json", "/nonexistent/dir/w.json"],
            "/nonexistent/dir is not a directory",
        ),
        (&["--plot", "/tmp"], "/tmp is a directory"),
    ] {
        // Refused before anything runs (the small preset would take a minute).
        let mut argv = vec!["bench", "waf"];
        argv.extend_from_slice(args);
        let out = uf2fs(&argv);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("uf2fs: ") && stderr.contains(want),
            "{args:?}: {stderr}"
        );
    }
    let out = uf2fs(&["--device", "/dev/null", "bench", "waf"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--device is not accepted"));
}

/// `scripts/kernel/gc-passes.py`, which sets Linux's traced GC passes beside the lab's
/// (docs/waf-lab.md), reads the lab's `gc_passes` as `--json` writes them and a kernel
/// trace as `scripts/kernel/waf-compare.sh --trace --kprobe` leaves it.
#[test]
fn gc_passes_script_reads_the_json_and_a_kernel_trace() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kernel/gc-passes.py");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("waf.json");
    run_ok(&tiny(&["--json", json.to_str().unwrap()]));
    let r = &records(&json)[0];
    let bins = r["gc_passes"].as_array().expect("gc_passes");
    assert!(!bins.is_empty(), "{r}");
    let passes: f64 = bins.iter().map(|b| num(b, "passes")).sum();
    assert_eq!(passes, num(r, "fg_gc_calls"), "{r}");
    // Passes in all of a record's list of bins `key`.
    let binned = |key: &str| -> f64 {
        let bins = r[key].as_array().unwrap_or_else(|| panic!("no {key} in {r}"));
        bins.iter().map(|b| num(b, "passes")).sum()
    };
    assert_eq!(binned("gc_pass_free"), passes, "{r}");
    assert_eq!(binned("gc_pass_dirty"), passes, "{r}");
    let victims: f64 = bins.iter().map(|b| num(b, "victims") * num(b, "passes")).sum();
    let checkpoints: f64 = bins.iter().map(|b| num(b, "checkpoints") * num(b, "passes")).sum();

    let res = dir.path().join("k.res");
    std::fs::write(
        &res,
        "mkfs Info: Segments per section = 4\n\
         trace fio-1 [000] ..... 0.9: gcin: (f2fs_gc+0x4/0x7b0 [f2fs]) dirty_data=160 warm_seg=391 warm_off=400 cold_seg=20 cold_off=0\n\
         trace fio-1 [000] ..... 1.0: f2fs_gc_begin: dev = (253,0), gc_type = Background GC, no_background_GC = 1, nr_free_secs = 1, nodes = 3, dents = 0, imeta = 0, free_sec:10, free_seg:52, rsv_seg:32, prefree_seg:4\n\
         trace fio-1 [000] ..... 1.1: f2fs_write_checkpoint: dev = (253,0), checkpoint for Sync, state = finish checkpoint\n\
         trace kworker/u4:3-48 [000] ..... 1.15: f2fs_gc_begin: dev = (253,0), gc_type = Background GC, no_background_GC = 1, nr_free_secs = 1, nodes = 3, dents = 0, imeta = 0, free_sec:9, free_seg:50, rsv_seg:32, prefree_seg:0\n\
         trace fio-1 [000] ..... 1.2: f2fs_get_victim: dev = (253,0), type = No TYPE, policy = (Foreground GC, LFS-mode, Greedy), victim = 52, cost = 2011, ofs_unit = 4, pre_victim_secno = 13, prefree = 0, free = 55\n\
         trace fio-1 [000] ..... 1.3: f2fs_gc_end: dev = (253,0), ret = 0, seg_freed = 4, sec_freed = 1, nodes = 3, dents = 0, imeta = 0, free_sec:10, free_seg:52, rsv_seg:32, prefree_seg:4\n\
         trace kworker/u4:3-48 [000] ..... 1.35: f2fs_gc_end: dev = (253,0), ret = -61, seg_freed = 0, sec_freed = 0, nodes = 3, dents = 0, imeta = 0, free_sec:9, free_seg:50, rsv_seg:32, prefree_seg:0\n\
         trace f2fs_gc-253:0-90 [000] ..... 2.0: f2fs_gc_begin: dev = (253,0), gc_type = Background GC, no_background_GC = 0, nr_free_secs = 0, nodes = 3, dents = 0, imeta = 0, free_sec:20, free_seg:90, rsv_seg:32, prefree_seg:0\n\
         trace f2fs_gc-253:0-90 [000] ..... 2.1: f2fs_gc_end: dev = (253,0), ret = -61, seg_freed = 0, sec_freed = 0, nodes = 3, dents = 0, imeta = 0, free_sec:20, free_seg:90, rsv_seg:32, prefree_seg:0\n\
         dirty 1.5  - datas: 160 in files: 0\n",
    )
    .unwrap();
    let text = python3_ok(&[&script, &json, &res]);
    let lab = format!("passes {passes}, victims {victims}, checkpoints {checkpoints}");
    assert!(text.contains(&lab), "want {lab:?}:\n{text}");
    let lab = format!("dirty data pages at the passes' starts ({passes}, bins of 64)");
    assert!(text.contains(&lab), "want {lab:?}:\n{text}");
    if num(r, "data_victims") > 0.0 {
        let cleaned = (num(r, "user_blocks") - num(&r["device"], "user_data")) / num(r, "data_victims");
        let lab = format!("user pages GC's moves wrote per data victim: {cleaned:.1}");
        assert!(text.contains(&lab), "want {lab:?}:\n{text}");
    }
    let warm = num(r, "gc_pass_warm_short");
    let lab = format!("begun with the warm data log's section short of them: {warm} (");
    assert!(text.contains(&lab), "want {lab:?}:\n{text}");
    for want in [
        "passes 2, victims 1, checkpoints 1",
        "by (victims, checkpoints): 1 (1, 1), 1 (0, 0)",
        "at the start: 1: 1 (50%), 2: 1 (50%)",
        "calls by who ran them: writer 1, flusher 1, gc thread 1",
        "valid blocks per victim: mean 2011",
        "dirty data pages (1 samples): p10 160, median 160, p90 160",
        // The kprobe at f2fs_gc: 112 blocks left in the warm log's section, 2048 in the
        // cold log's, against 160 dirty pages.
        "dirty data pages at the passes' starts (1): p10 160, median 160, p90 160",
        "begun with the warm data log's section short of them: 1 (100%)",
        "begun with the cold data log's section short of them: 0 (0%)",
    ] {
        assert!(text.contains(want), "want {want:?}:\n{text}");
    }

    // What a victim cleaned: the dirty count fell from 300 at the start of the pass
    // that took one victim to 270 at the next pass's start.
    let res = dir.path().join("k2.res");
    let gcin = |t: &str, dirty: u32| {
        format!("trace fio-1 [000] ..... {t}: gcin: (f2fs_gc+0x4/0x7b0 [f2fs]) dirty_data={dirty} warm_seg=0 warm_off=0 cold_seg=4 cold_off=0\n")
    };
    let pass = |t0: &str, t1: &str, victim: bool| {
        let mut p = format!("trace fio-1 [000] ..... {t0}: f2fs_gc_begin: dev = (253,0), gc_type = Background GC, no_background_GC = 1, nr_free_secs = 1, nodes = 3, dents = 0, imeta = 0, free_sec:10, free_seg:52, rsv_seg:32, prefree_seg:0\n");
        if victim {
            p += &format!("trace fio-1 [000] ..... {t0}: f2fs_get_victim: dev = (253,0), type = No TYPE, policy = (Foreground GC, LFS-mode, Greedy), victim = 52, cost = 2000, ofs_unit = 4, pre_victim_secno = 13, prefree = 0, free = 55\n");
        }
        p + &format!("trace fio-1 [000] ..... {t1}: f2fs_gc_end: dev = (253,0), ret = 0, seg_freed = 4, sec_freed = 1, nodes = 3, dents = 0, imeta = 0, free_sec:10, free_seg:52, rsv_seg:32, prefree_seg:0\n")
    };
    let trace = String::from("mkfs Info: Segments per section = 4\n")
        + &gcin("1.0", 300)
        + &pass("1.1", "1.2", true)
        + &gcin("2.0", 270)
        + &pass("2.1", "2.2", false);
    std::fs::write(&res, trace).unwrap();
    let text = python3_ok(&[&script, &res]);
    let want = "passes that took one victim (1): dirty data pages at their start mean 300 (median 300), down by 30.0 at the next pass's start";
    assert!(text.contains(want), "want {want:?}:\n{text}");
}
