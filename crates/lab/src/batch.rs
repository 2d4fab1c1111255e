//! Many runs side by side: every (policy, workload) pair on its own device, on up to
//! `jobs` threads.

use crate::run::{run, RunResult};
use crate::setup::Setup;
use crate::workload::{Generator, Shape, Workload};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use uf2fs_core::GcPolicy;

/// One (policy, workload) pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    /// GC policy.
    pub policy: GcPolicy,
    /// Workload.
    pub workload: Workload,
}

/// Every pair, workload by workload (so that parallel runs of one workload finish
/// together).
pub fn pairs(policies: &[GcPolicy], workloads: &[Workload]) -> Vec<Pair> {
    workloads
        .iter()
        .flat_map(|&workload| policies.iter().map(move |&policy| Pair { policy, workload }))
        .collect()
}

/// User blocks a pair writes (fill and overwrites), for progress bars.
pub fn blocks_of(setup: &Setup, workload: Workload) -> u64 {
    let shape = Shape {
        file_blocks: setup.file_blocks(),
        io_blocks: setup.io_blocks(),
        seed: setup.seed,
    };
    Generator::new(workload, shape).map_or(0, |g| g.fill_blocks()) + setup.io_blocks()
}

/// What a batch tells its observer.
#[derive(Debug)]
pub enum Event<'a> {
    /// Pair `index` started.
    Started {
        /// Index in the pair list.
        index: usize,
        /// The pair.
        pair: Pair,
    },
    /// User blocks were written (by any pair).
    Advanced {
        /// How many.
        blocks: u64,
    },
    /// Pair `index` ended.
    Finished {
        /// Index in the pair list.
        index: usize,
        /// The pair.
        pair: Pair,
        /// Its outcome.
        result: &'a Result<RunResult, String>,
    },
}

/// Runs every pair on up to `jobs` threads (at least one); results in the pairs'
/// order.
pub fn run_all(
    setup: &Setup,
    pairs: &[Pair],
    jobs: usize,
    observe: &(dyn Fn(Event<'_>) + Sync),
) -> Vec<Result<RunResult, String>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<RunResult, String>>>> = Mutex::new(vec![None; pairs.len()]);
    let workers = jobs.clamp(1, pairs.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(&pair) = pairs.get(index) else {
                    break;
                };
                observe(Event::Started { index, pair });
                let advance = |blocks: u64| observe(Event::Advanced { blocks });
                // A panic in one run (a bug) fails that run only.
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run(setup, pair.policy, pair.workload, &advance)
                }))
                .unwrap_or_else(|panic| {
                    let why = panic
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| panic.downcast_ref::<&str>().copied())
                        .unwrap_or("no message");
                    Err(format!("{} on {}: panicked: {why}", pair.policy, pair.workload))
                });
                observe(Event::Finished {
                    index,
                    pair,
                    result: &result,
                });
                results.lock().unwrap_or_else(|p| p.into_inner())[index] = Some(result);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("the run did not finish".into())))
        .collect()
}
