//! Fuzz targets for uf2fs. Each parser target runs one function of [`parsers`] (also
//! replayed by `crates/format/tests/regressions.rs` over `fuzz/regressions/`); the
//! `image` target runs [`image::run`], the `sparse` target [`sparse::run`], the `cluster` target [`cluster::run`],
//! the `recovery` target [`recovery::run`], the `write` target [`write::run`]. See
//! fuzz/README.md.

pub mod cluster;
pub mod image;
pub mod parsers;
pub mod recovery;
pub mod sparse;
pub mod write;
