//! Test support for uf2fs's end-to-end tests. Dev-only: nothing here ships.
//!
//! The oracle is f2fs-tools: [`image::build`] writes a seeded [`tree::Tree`] into a
//! directory, formats an image with `mkfs.f2fs` and fills it with `sload.f2fs`. What the
//! image must then contain is [`tree::Tree::expected`]: the source tree as sload stores
//! it (see the notes on [`image::SloadFacts`] for what sload keeps and drops). The
//! [`compare`] module checks an extracted or mounted tree against that expectation,
//! [`run`] runs the `uf2fs` binary with a timeout, and [`corrupt`] knows where an image
//! keeps its metadata so tests can damage it on purpose.

pub mod compare;
pub mod corrupt;
pub mod image;
pub mod lsfmt;
pub mod rng;
pub mod run;
pub mod tree;

pub use image::{build, Image, Variant, VARIANTS};
pub use rng::Rng;
pub use tree::{Expected, ExpectedKind, FileData, Tree};
