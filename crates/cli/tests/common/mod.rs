//! Shared set-up of the end-to-end tests: the binary under test and the images, built
//! once per test binary (and cached across runs under the target directory).
#![allow(dead_code)] // each test binary uses its own part of this module

pub mod data;
pub mod fsck;
pub mod mount;
pub mod tool;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use uf2fs_testkit::run::Uf2fs;
use uf2fs_testkit::tree::{Expected, Tree};
use uf2fs_testkit::{Image, Variant, VARIANTS};

/// Seed of the full tree (all variants share it; boundary sizes follow each geometry).
pub const FULL_SEED: u64 = 0xf2f5_2010;
/// Seed of the small tree used by the corruption tests.
pub const SMALL_SEED: u64 = 0x5eed_0bad;

/// The binary under test.
pub fn uf2fs() -> Uf2fs {
    Uf2fs::new(env!("CARGO_BIN_EXE_uf2fs"))
}

/// Where images and scratch directories go: `$TMPDIR` when it is set (the test command,
/// scripts/test.sh, points it at a tmpfs), else Cargo's per-target temporary directory.
pub fn work_dir() -> PathBuf {
    match std::env::var_os("TMPDIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
    }
}

/// A fresh scratch directory under [`scratch_root`], removed when dropped.
pub fn scratch(prefix: &str) -> tempfile::TempDir {
    let root = scratch_root();
    std::fs::create_dir_all(&root).expect("scratch root");
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&root)
        .expect("scratch dir")
}

/// Where scratch directories go: [`work_dir`], unless a directory above it is closed to
/// other users (a clone in root's home, mode 0700). Some mount tests run commands as
/// `nobody` on files under their scratch directory, so then the system's temporary
/// directory is used instead.
pub fn scratch_root() -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = work_dir();
    let closed = dir
        .ancestors()
        .filter_map(|a| std::fs::metadata(a).ok())
        .any(|m| m.permissions().mode() & 0o001 == 0);
    if closed {
        std::env::temp_dir().join("uf2fs-tests")
    } else {
        dir
    }
}

/// An image and what it must contain.
pub struct Fixture {
    /// The image.
    pub image: Image,
    /// Expected contents by relative path ("" is the root).
    pub expected: BTreeMap<Vec<u8>, Expected>,
}

impl Fixture {
    /// The image path.
    pub fn img(&self) -> &Path {
        &self.image.path
    }

    /// The variant.
    pub fn variant(&self) -> &Variant {
        &self.image.variant
    }
}

fn fixture(label: &str, variant: &Variant, tree: Tree) -> Fixture {
    let image = uf2fs_testkit::build(&work_dir(), label, variant, tree);
    let mut expected = image.tree.expected(variant.sload, image.root_owner);
    if variant.sload.preserve_owner && !uf2fs_testkit::tree::is_root() {
        // Without root the generator cannot chown, so every source file is ours and
        // sload -P stores that.
        for x in expected.values_mut() {
            (x.uid, x.gid) = image.root_owner;
        }
    }
    Fixture { image, expected }
}

/// A fixture, or why building it failed (kept so that the other tests of the binary
/// fail at once with the same message instead of building it again).
type Built = Result<Fixture, String>;

static FULL: [OnceLock<Built>; VARIANTS.len()] = [const { OnceLock::new() }; VARIANTS.len()];
static SMALL: [OnceLock<Built>; VARIANTS.len()] = [const { OnceLock::new() }; VARIANTS.len()];

fn index_of(variant: &str) -> usize {
    VARIANTS
        .iter()
        .position(|v| v.name == variant)
        .unwrap_or_else(|| panic!("no variant {variant}"))
}

fn get(cell: &'static OnceLock<Built>, make: impl FnOnce() -> Fixture + std::panic::UnwindSafe) -> &'static Fixture {
    let built = cell.get_or_init(|| {
        std::panic::catch_unwind(make).map_err(|e| {
            let msg = e.downcast_ref::<String>().cloned();
            msg.or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        })
    });
    match built {
        Ok(f) => f,
        Err(msg) => panic!("building the test image failed: {msg}"),
    }
}

/// The full tree's image for `variant`, built on first use.
pub fn full(variant: &str) -> &'static Fixture {
    let i = index_of(variant);
    get(&FULL[i], move || {
        let v = &VARIANTS[i];
        fixture("full", v, Tree::full(FULL_SEED, v.geometry()))
    })
}

/// The small tree's image for `variant`.
pub fn small(variant: &str) -> &'static Fixture {
    let i = index_of(variant);
    get(&SMALL[i], move || {
        fixture("small", &VARIANTS[i], Tree::small(SMALL_SEED))
    })
}

/// Panics with the problem list unless it is empty.
pub fn assert_no_problems(what: &str, problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{}",
        uf2fs_testkit::compare::report(what, problems)
    );
}
