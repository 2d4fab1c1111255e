//! Replays the committed fuzz inputs of the targets that need uf2fs-core (`image`,
//! `recovery`, `write`, `sparse`, `cluster`) through the same checks the cargo-fuzz
//! targets run: the target code in `fuzz/src/` is included below with `#[path]`, so
//! `cargo test` keeps fixed bugs fixed, and the fuzz targets' code building, without
//! cargo-fuzz, a nightly toolchain or libFuzzer:
//! - every saved crash in `fuzz/regressions/<target>/`;
//! - every committed seed in `fuzz/corpus/<target>/` (each reaches a part of the open,
//!   the walk, recovery or the write path that a random input seldom does).
//!
//! The parser targets' inputs are replayed by `crates/format/tests/regressions.rs`.
//! CI also runs this file under the ci-debug profile (debug assertions and overflow
//! checks on, as `fuzz/run-all.sh` builds the targets). New fuzzing, with libFuzzer's
//! time and allocation limits, is `fuzz/run-all.sh SECONDS` (fuzz/README.md).

#[allow(dead_code)]
#[path = "../../../fuzz/src/cluster.rs"]
mod cluster;
#[allow(dead_code)]
#[path = "../../../fuzz/src/image.rs"]
mod image;
#[allow(dead_code)]
#[path = "../../../fuzz/src/recovery.rs"]
mod recovery;
#[allow(dead_code)]
#[path = "../../../fuzz/src/sparse.rs"]
mod sparse;
#[allow(dead_code)]
#[path = "../../../fuzz/src/write.rs"]
mod write;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files under `fuzz/<sub>/<target>/`, sorted (none when the directory is missing).
fn inputs(sub: &str, target: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(fuzz_dir().join(sub).join(target)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs every regression and seed of `target` through `check`; returns how many seeds
/// ran, and panics listing every input that panicked.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let regressions = inputs("regressions", target);
    let seeds = inputs("corpus", target);
    let mut failures = Vec::new();
    for path in regressions.iter().chain(&seeds) {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| check(&data))) {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(format!("{}: {msg}", path.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "fuzz inputs of `{target}` that panic:\n{}",
        failures.join("\n")
    );
    seeds.len()
}

#[test]
fn image_inputs_pass() {
    assert!(replay("image", image::run) >= 5);
}

#[test]
fn recovery_inputs_pass() {
    assert!(replay("recovery", recovery::run) >= 40);
}

#[test]
fn write_inputs_pass() {
    assert!(
        replay("write", |data| {
            write::run(data);
        }) >= 5
    );
}

/// The write target's `damage-*` seeds damage a block the session reads: the volume
/// reports it, stops, and refuses the changes that follow (and the target's device
/// wrapper sees no write after it). A seed can drift when the core changes what a
/// session reads (fsync writing a checkpoint on the sload base moved the late seed's
/// GC victim): then pick another damaged block that the same ops reach, as the
/// message's `first_damage` shows.
#[test]
fn write_seeds_reach_a_stopped_volume() {
    let seeds: Vec<PathBuf> = inputs("corpus", "write")
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("damage-"))
        })
        .collect();
    assert!(seeds.len() >= 2, "the damage-* seeds are missing");
    for path in seeds {
        let data = std::fs::read(&path).unwrap();
        let o = write::run(&data);
        assert!(
            o.opened && o.damage_reported && o.refused >= 3,
            "{}: {o:?}",
            path.display()
        );
        // A `-late` seed's damage is found by the GC pass, after changes went through;
        // the others' by the session's first read.
        let late = path.to_string_lossy().ends_with("-late");
        let expected = if late { "gc" } else { "read_dir /" };
        assert_eq!(o.first_damage, Some(expected), "{}: {o:?}", path.display());
    }
}

#[test]
fn sparse_inputs_pass() {
    assert!(replay("sparse", sparse::run) >= 4);
}

#[test]
fn cluster_inputs_pass() {
    assert!(replay("cluster", cluster::run) >= 2);
}
