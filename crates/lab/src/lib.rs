//! uf2fs-lab: the WAF lab behind `uf2fs bench waf`.
//!
//! Runs F2FS garbage-collection policies side by side, in process, on emulated zoned
//! devices held in memory: each (policy, workload) pair formats its own volume, fills
//! it, overwrites it, and reports the write amplification the seed defined (every
//! device block written over the user blocks written), with the device writes by kind
//! and the GC counters. See docs/waf-lab.md.

pub mod batch;
pub mod clock;
pub mod idle;
pub mod latency;
pub mod permute;
pub mod plot;
pub mod report;
pub mod reserve;
pub mod rng;
pub mod run;
pub mod setup;
pub mod size;
pub mod volume;
pub mod workload;
pub mod writeback;
pub mod zipf;

pub use batch::{pairs, run_all, Event, Pair};
pub use run::{DirtyBin, FreeBin, PassBin, RunResult, Sample};
pub use setup::{Idle, Preset, Setup};
pub use workload::Workload;
