//! Replays fuzz inputs through the checks the parser fuzz targets run
//! (`fuzz/src/parsers.rs`, included below), so `cargo test` keeps fixed bugs fixed
//! without cargo-fuzz or a nightly toolchain:
//! - every saved crash in `fuzz/regressions/<target>/`;
//! - every committed seed in `fuzz/corpus/<target>/` (real image blocks: the checks must
//!   hold on good data too).
//!
//! The targets that need uf2fs-core ([`CORE_TARGETS`]) are replayed by
//! `crates/core/tests/fuzz_replay.rs` (and `fuzz/run-all.sh`).

#[path = "../../../fuzz/src/parsers.rs"]
mod parsers;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// The fuzz targets whose inputs `crates/core/tests/fuzz_replay.rs` replays.
const CORE_TARGETS: &[&str] = &["image", "recovery", "write", "sparse", "cluster"];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Runs every file under `<fuzz>/<sub>/<target>/` through its target; returns how many
/// ran, and panics listing every input that failed.
fn replay(sub: &str) -> usize {
    let mut ran = 0;
    let mut failures = Vec::new();
    for (name, check) in parsers::TARGETS {
        let dir = fuzz_dir().join(sub).join(name);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| Some(e.ok()?.path()))
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        for path in files {
            let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            ran += 1;
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| check(&data))) {
                let msg = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!("{}: {msg}", path.display()));
            }
        }
    }
    assert!(failures.is_empty(), "fuzz inputs that panic:\n{}", failures.join("\n"));
    ran
}

#[test]
fn saved_fuzz_crashes_stay_fixed() {
    replay("regressions");
    // A directory named after no target would never be replayed.
    if let Ok(entries) = std::fs::read_dir(fuzz_dir().join("regressions")) {
        for e in entries.flatten().filter(|e| e.path().is_dir()) {
            let name = e.file_name().to_string_lossy().into_owned();
            assert!(
                CORE_TARGETS.contains(&name.as_str()) || parsers::TARGETS.iter().any(|(t, _)| *t == name),
                "fuzz/regressions/{name} is not a fuzz target"
            );
        }
    }
}

#[test]
fn seed_corpora_pass_the_fuzz_checks() {
    let ran = replay("corpus");
    assert!(ran > 100, "only {ran} seed files found under fuzz/corpus");
}

/// fuzz/regressions/superblock/log-sectors-per-block-overflow: log_sectorsize +
/// log_sectors_per_block overflowed u32 (a panic in debug builds; in release the sum
/// wrapped to 12 and the superblock was accepted).
#[test]
fn superblock_sector_size_sum_does_not_overflow() {
    use uf2fs_format::superblock::Superblock;
    let mut b = include_bytes!("../../../fuzz/fixtures/superblock.bin").to_vec();
    assert!(Superblock::decode(&b).is_ok());
    for log_sectors_per_block in [0xffff_fffb, u32::MAX, 0xffff_fff4] {
        b[12..16].copy_from_slice(&u32::to_le_bytes(log_sectors_per_block));
        let err = Superblock::decode(&b).unwrap_err().to_string();
        assert!(err.contains("sector size"), "{err}");
    }
}
