//! Test support for uf2fs's end-to-end tests. Dev-only: nothing here ships.
//!
//! The oracle is f2fs-tools: [`image::build`] writes a seeded [`tree::Tree`] into a
//! directory, formats an image with `mkfs.f2fs` and fills it with `sload.f2fs`. What the
//! image must then contain is [`tree::Tree::expected`]: the source tree as sload stores
//! it (see [`tree::SloadOptions`] for what sload keeps and drops). The
//! [`compare`] module checks an extracted or mounted tree against that expectation,
//! [`run`] runs the `uf2fs` binary with a timeout, and [`corrupt`] knows where an image
//! keeps its metadata so tests can damage it on purpose. For tests that write through a
//! mount, [`mirror`] makes every change on a host copy too (which
//! [`compare::compare_dirs`] then holds the mount to) and [`fsck`] judges the image.

pub mod compare;
pub mod corrupt;
pub mod data;
pub mod fsck;
pub mod image;
pub mod lsfmt;
pub mod mirror;
pub mod rng;
pub mod run;
pub mod tree;

pub use image::{build, Image, Variant, VARIANTS};
pub use rng::Rng;
pub use tree::{Expected, ExpectedKind, FileData, Tree};
