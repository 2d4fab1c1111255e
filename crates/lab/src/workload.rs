//! The lab's workloads: what is written, where, in which order. A [`Generator`] is a
//! pure function of the workload, the sizes and the seed — it never looks at the file
//! system — so every policy of one invocation replays the identical operations.
//!
//! Each workload has two phases: a *fill* (written sequentially, 1 MiB per write), then
//! the *overwrite* phase of 4 KiB writes totalling exactly `io_blocks` blocks (whole
//! files written by `multifile` count in that total too). WAF is measured over the
//! second phase only, as the seed's fio job measures only its random writes.
//!
//! - `uniform`: the seed's fio job — one file, 4 KiB overwrites at uniformly random
//!   blocks, with replacement (fio's `--norandommap`).
//! - `zipf`: one file, block ranks drawn from a Zipf law of exponent
//!   [`ZIPF_THETA`]; rank `r` is written at block `p(r)` of a keyed bijection `p`, so
//!   the hot blocks are scattered over the whole file.
//! - `hotcold`: one file, [`HOT_WRITE_SHARE`] of the writes on [`HOT_BLOCK_SHARE`] of
//!   its blocks, uniform within each set; the hot set is scattered by the same kind
//!   of bijection (so that every node block holds hot and cold pointers alike and the
//!   workload differs from `uniform` by temperature only, not by locality).
//! - `multifile`: files of mixed sizes (log-uniform from 4 KiB to
//!   [`Generator::largest_file_blocks`]) filling the same space as the single file;
//!   then half of the blocks written go to 4 KiB overwrites of uniformly random live
//!   blocks, half to new files, for which randomly chosen old files are deleted first,
//!   as many as needed to stay within the footprint (so the volume stays within one
//!   largest file of the fill's utilisation).

use crate::permute::Permutation;
use crate::rng::Rng;
use crate::zipf::Zipf;
use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;

/// Exponent of the `zipf` workload.
pub const ZIPF_THETA: f64 = 1.0;
/// Share of the `hotcold` writes that go to the hot set.
pub const HOT_WRITE_SHARE: f64 = 0.8;
/// Share of the file's blocks in the `hotcold` hot set.
pub const HOT_BLOCK_SHARE: f64 = 0.2;
/// Blocks per write of the fill and of new `multifile` files (1 MiB).
pub const CHUNK_BLOCKS: u32 = 256;

/// A workload of the lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Workload {
    /// The seed's job: uniform random 4 KiB overwrites of one file.
    Uniform,
    /// Zipf-skewed overwrites of one file, hot blocks scattered.
    Zipf,
    /// 80% of the overwrites on 20% of one file's blocks, scattered.
    HotCold,
    /// Many files of mixed sizes, overwritten, deleted and created.
    Multifile,
}

impl Workload {
    /// Every workload name, for help texts.
    pub const NAMES: &'static str = "uniform, zipf, hotcold, multifile";

    /// Every workload.
    pub const ALL: [Workload; 4] = [
        Workload::Uniform,
        Workload::Zipf,
        Workload::HotCold,
        Workload::Multifile,
    ];

    /// Whether the workload keeps one file (the seed's shape).
    pub fn single_file(self) -> bool {
        self != Workload::Multifile
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Workload::Uniform => "uniform",
            Workload::Zipf => "zipf",
            Workload::HotCold => "hotcold",
            Workload::Multifile => "multifile",
        })
    }
}

impl FromStr for Workload {
    type Err = String;

    fn from_str(s: &str) -> Result<Workload, String> {
        Workload::ALL
            .into_iter()
            .find(|w| w.to_string() == s)
            .ok_or_else(|| format!("unknown workload '{s}' (known: {})", Workload::NAMES))
    }
}

/// One operation on the volume. Files are named by number; every write is of zeros
/// (the lab's device keeps no data payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Create file `file`, empty, in the root directory.
    Create {
        /// File number.
        file: u32,
    },
    /// Write `blocks` blocks at block `block` of file `file`.
    Write {
        /// File number.
        file: u32,
        /// First block.
        block: u64,
        /// Number of blocks (1 to [`CHUNK_BLOCKS`]).
        blocks: u32,
    },
    /// Delete file `file`.
    Delete {
        /// File number.
        file: u32,
    },
}

impl Op {
    /// User blocks the operation writes.
    pub fn user_blocks(&self) -> u64 {
        match *self {
            Op::Write { blocks, .. } => blocks as u64,
            _ => 0,
        }
    }
}

/// The two phases of a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Writing the data set for the first time.
    Fill,
    /// The measured phase.
    Overwrite,
}

/// How big a workload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Blocks of the single file; the footprint (data and inode blocks) `multifile`
    /// keeps to.
    pub file_blocks: u64,
    /// Blocks written in the overwrite phase.
    pub io_blocks: u64,
    /// The seed of every random choice.
    pub seed: u64,
}

/// Where the single-file workloads write.
#[derive(Debug, Clone)]
enum Pick {
    Uniform,
    Zipf { zipf: Zipf, perm: Permutation },
    HotCold { hot: u64, perm: Permutation },
}

/// The operations of one workload, in order (see the module notes).
#[derive(Debug, Clone)]
pub struct Generator {
    workload: Workload,
    shape: Shape,
    rng: Rng,
    phase: Phase,
    /// Operations decided but not yet handed out.
    queue: VecDeque<Op>,
    /// Overwrite-phase blocks not yet decided.
    io_left: u64,
    fill_blocks: u64,
    single: Option<Pick>,
    multi: Option<Files>,
    /// Multifile sizes of the fill, in creation order (consumed as created).
    fill_plan: VecDeque<u64>,
}

impl Generator {
    /// The generator of `workload` at `shape`.
    pub fn new(workload: Workload, shape: Shape) -> Result<Generator, String> {
        if shape.file_blocks == 0 {
            return Err("the file size must be at least one block".into());
        }
        let mut rng = Rng::new(shape.seed, &workload.to_string());
        let key = rng.next_u64();
        let f = shape.file_blocks;
        let mut single = None;
        let mut multi = None;
        let mut fill_plan = VecDeque::new();
        let mut queue = VecDeque::new();
        let fill_blocks = match workload {
            Workload::Uniform | Workload::Zipf | Workload::HotCold => {
                single = Some(match workload {
                    Workload::Uniform => Pick::Uniform,
                    Workload::Zipf => Pick::Zipf {
                        zipf: Zipf::new(f, ZIPF_THETA)?,
                        perm: Permutation::new(f, key),
                    },
                    _ => Pick::HotCold {
                        hot: ((f as f64 * HOT_BLOCK_SHARE) as u64).clamp(1, f),
                        perm: Permutation::new(f, key),
                    },
                });
                queue.push_back(Op::Create { file: 0 });
                let mut b = 0;
                while b < f {
                    let n = (f - b).min(CHUNK_BLOCKS as u64) as u32;
                    queue.push_back(Op::Write {
                        file: 0,
                        block: b,
                        blocks: n,
                    });
                    b += n as u64;
                }
                f
            }
            Workload::Multifile => {
                let files = Files::new(f);
                let mut footprint = 0;
                let mut total = 0;
                while footprint + 2 <= f {
                    let s = files.sample_size(&mut rng).min(f - footprint - 1);
                    fill_plan.push_back(s);
                    footprint += s + 1;
                    total += s;
                }
                multi = Some(files);
                total
            }
        };
        Ok(Generator {
            workload,
            shape,
            rng,
            phase: Phase::Fill,
            queue,
            io_left: shape.io_blocks,
            fill_blocks,
            single,
            multi,
            fill_plan,
        })
    }

    /// The workload.
    pub fn workload(&self) -> Workload {
        self.workload
    }

    /// Blocks the fill writes.
    pub fn fill_blocks(&self) -> u64 {
        self.fill_blocks
    }

    /// The largest `multifile` file, in blocks: a 128th of the footprint, at least 64 KiB
    /// and at most 256 MiB.
    pub fn largest_file_blocks(file_blocks: u64) -> u64 {
        (file_blocks / 128).clamp(16, 65_536)
    }

    /// The next operation and its phase; `None` once the overwrite phase has written
    /// its `io_blocks`.
    pub fn next_op(&mut self) -> Option<(Phase, Op)> {
        loop {
            if let Some(op) = self.queue.pop_front() {
                return Some((self.phase, op));
            }
            if self.phase == Phase::Fill {
                if let Some(s) = self.fill_plan.pop_front() {
                    let files = self.multi.as_mut().expect("multifile state");
                    let (file, ops) = files.create(s);
                    debug_assert!(file < u32::MAX);
                    self.queue.extend(ops);
                    continue;
                }
                self.phase = Phase::Overwrite;
            }
            if self.io_left == 0 {
                return None;
            }
            self.decide();
        }
    }

    /// Queues the next step of the overwrite phase.
    fn decide(&mut self) {
        let f = self.shape.file_blocks;
        if let Some(pick) = &self.single {
            let rank = match pick {
                Pick::Uniform => self.rng.below(f),
                Pick::Zipf { zipf, perm } => perm.apply(zipf.sample(&mut self.rng) - 1),
                Pick::HotCold { hot, perm } => {
                    let rank = if *hot == f || self.rng.chance(HOT_WRITE_SHARE) {
                        self.rng.below(*hot)
                    } else {
                        hot + self.rng.below(f - hot)
                    };
                    perm.apply(rank)
                }
            };
            self.io_left -= 1;
            self.queue.push_back(Op::Write {
                file: 0,
                block: rank,
                blocks: 1,
            });
            return;
        }
        let files = self.multi.as_mut().expect("multifile state");
        if files.churned <= files.overwritten && files.live_blocks() > 0 || files.live_blocks() == 0 {
            // Replace: delete random files until the new one fits, then write it.
            let s = files.sample_size(&mut self.rng).min(self.io_left);
            while files.live_files() > 0 && files.footprint() + s + 1 > f {
                let file = files.delete_random(&mut self.rng);
                self.queue.push_back(Op::Delete { file });
            }
            let (_, ops) = files.create(s);
            files.churned += s;
            self.io_left -= s;
            self.queue.extend(ops);
        } else {
            let (file, block) = files.random_block(&mut self.rng);
            files.overwritten += 1;
            self.io_left -= 1;
            self.queue.push_back(Op::Write { file, block, blocks: 1 });
        }
    }
}

/// The live files of `multifile`, with sampling by block (a Fenwick tree over slots)
/// and by file.
#[derive(Debug, Clone)]
struct Files {
    largest: u64,
    /// Slot → (file number, blocks); `None`: free slot.
    slots: Vec<Option<(u32, u64)>>,
    free_slots: Vec<usize>,
    /// Occupied slots, in any order, and where each one is in this list.
    occupied: Vec<usize>,
    position: Vec<usize>,
    /// Fenwick tree of the slots' block counts.
    tree: Vec<u64>,
    live_blocks: u64,
    next_file: u32,
    /// Blocks of the overwrite phase written as new files / as 4 KiB overwrites.
    churned: u64,
    overwritten: u64,
}

impl Files {
    fn new(file_blocks: u64) -> Files {
        Files {
            largest: Generator::largest_file_blocks(file_blocks),
            slots: Vec::new(),
            free_slots: Vec::new(),
            occupied: Vec::new(),
            position: Vec::new(),
            tree: vec![0],
            live_blocks: 0,
            next_file: 0,
            churned: 0,
            overwritten: 0,
        }
    }

    /// A file size in blocks, log-uniform over `1..=largest`.
    fn sample_size(&self, rng: &mut Rng) -> u64 {
        let x = (rng.unit() * ((self.largest + 1) as f64).ln()).exp();
        (x as u64).clamp(1, self.largest)
    }

    fn live_blocks(&self) -> u64 {
        self.live_blocks
    }

    fn live_files(&self) -> u64 {
        self.occupied.len() as u64
    }

    /// Data blocks plus one inode block per file.
    fn footprint(&self) -> u64 {
        self.live_blocks + self.live_files()
    }

    fn tree_add(&mut self, slot: usize, delta: i64) {
        let mut i = slot + 1;
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// The slot holding the `r`-th live block (`r` < live blocks) and `r`'s offset in it.
    fn tree_find(&self, mut r: u64) -> (usize, u64) {
        let mut pos = 0;
        let mut step = (self.tree.len() - 1).next_power_of_two();
        while step > 0 {
            let next = pos + step;
            if next < self.tree.len() && self.tree[next] <= r {
                pos = next;
                r -= self.tree[next];
            }
            step >>= 1;
        }
        (pos, r)
    }

    /// Takes a slot for a new file of `blocks` blocks; returns its number and the
    /// operations that make it.
    fn create(&mut self, blocks: u64) -> (u32, Vec<Op>) {
        let file = self.next_file;
        self.next_file += 1;
        let slot = match self.free_slots.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.position.push(0);
                let n = self.slots.len();
                if n >= self.tree.len() {
                    // Rebuild the tree twice as large.
                    let mut tree = vec![0u64; 2 * n + 1];
                    for (s, entry) in self.slots.iter().enumerate() {
                        let mut i = s + 1;
                        let v = entry.map_or(0, |(_, b)| b);
                        while i < tree.len() {
                            tree[i] += v;
                            i += i & i.wrapping_neg();
                        }
                    }
                    self.tree = tree;
                }
                n - 1
            }
        };
        self.slots[slot] = Some((file, blocks));
        self.position[slot] = self.occupied.len();
        self.occupied.push(slot);
        self.tree_add(slot, blocks as i64);
        self.live_blocks += blocks;
        let mut ops = vec![Op::Create { file }];
        let mut b = 0;
        while b < blocks {
            let n = (blocks - b).min(CHUNK_BLOCKS as u64) as u32;
            ops.push(Op::Write {
                file,
                block: b,
                blocks: n,
            });
            b += n as u64;
        }
        (file, ops)
    }

    /// Deletes a uniformly chosen live file; returns its number.
    fn delete_random(&mut self, rng: &mut Rng) -> u32 {
        let i = rng.below(self.occupied.len() as u64) as usize;
        let slot = self.occupied.swap_remove(i);
        if let Some(&moved) = self.occupied.get(i) {
            self.position[moved] = i;
        }
        let (file, blocks) = self.slots[slot].take().expect("occupied slot");
        self.tree_add(slot, -(blocks as i64));
        self.live_blocks -= blocks;
        self.free_slots.push(slot);
        file
    }

    /// A uniformly chosen live block: (file, block in the file).
    fn random_block(&mut self, rng: &mut Rng) -> (u32, u64) {
        let r = rng.below(self.live_blocks);
        let (slot, offset) = self.tree_find(r);
        let (file, _) = self.slots[slot].expect("a slot with blocks is occupied");
        (file, offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn shape(file_blocks: u64, io_blocks: u64) -> Shape {
        Shape {
            file_blocks,
            io_blocks,
            seed: 7,
        }
    }

    fn all_ops(w: Workload, s: Shape) -> Vec<(Phase, Op)> {
        let mut g = Generator::new(w, s).unwrap();
        std::iter::from_fn(|| g.next_op()).collect()
    }

    /// Overwrite-phase writes per block of file 0.
    fn histogram(w: Workload, s: Shape) -> Vec<u64> {
        let mut h = vec![0u64; s.file_blocks as usize];
        for (phase, op) in all_ops(w, s) {
            if let (Phase::Overwrite, Op::Write { file: 0, block, blocks }) = (phase, op) {
                assert_eq!(blocks, 1);
                h[block as usize] += 1;
            }
        }
        h
    }

    #[test]
    fn names_round_trip_and_bad_ones_list_the_known() {
        for w in Workload::ALL {
            assert_eq!(w.to_string().parse::<Workload>(), Ok(w));
        }
        let e = "Uniform".parse::<Workload>().unwrap_err();
        assert!(e.contains("known: uniform, zipf, hotcold, multifile"), "{e}");
    }

    #[test]
    fn same_seed_same_operations_other_seed_other_ones() {
        for w in Workload::ALL {
            let a = all_ops(w, shape(5000, 20_000));
            assert_eq!(a, all_ops(w, shape(5000, 20_000)), "{w}");
            let other = all_ops(
                w,
                Shape {
                    seed: 8,
                    ..shape(5000, 20_000)
                },
            );
            assert_ne!(a, other, "{w}");
        }
    }

    #[test]
    fn phases_write_exactly_their_blocks() {
        for w in Workload::ALL {
            let s = shape(3000, 12_345);
            let g = Generator::new(w, s).unwrap();
            let fill = g.fill_blocks();
            let ops = all_ops(w, s);
            let sum = |p: Phase| -> u64 { ops.iter().filter(|(q, _)| *q == p).map(|(_, o)| o.user_blocks()).sum() };
            assert_eq!(sum(Phase::Fill), fill, "{w}");
            assert_eq!(sum(Phase::Overwrite), 12_345, "{w}");
            // Fill first, then overwrites only.
            let first = ops.iter().position(|(p, _)| *p == Phase::Overwrite).unwrap();
            assert!(ops[first..].iter().all(|(p, _)| *p == Phase::Overwrite));
            if w.single_file() {
                assert_eq!(fill, 3000);
                assert_eq!(ops[0].1, Op::Create { file: 0 });
            }
        }
    }

    #[test]
    fn uniform_is_flat() {
        let s = shape(1000, 200_000);
        let h = histogram(Workload::Uniform, s);
        assert!(h.iter().all(|&c| (120..290).contains(&c)), "{:?}", h.iter().max());
    }

    #[test]
    fn zipf_is_skewed_and_scattered() {
        let s = shape(10_000, 200_000);
        let mut h = histogram(Workload::Zipf, s);
        // The hottest block takes about 1/H(10000) = 10% of the writes...
        let hottest = h.iter().enumerate().max_by_key(|(_, &c)| c).unwrap().0;
        let top = h[hottest] as f64 / 200_000.0;
        assert!((0.09..0.12).contains(&top), "{top}");
        // ... and is not at the start of the file: ranks are permuted.
        assert_ne!(hottest, 0);
        // The busiest tenth of the blocks takes H(1000)/H(10000) = 76% of the writes.
        h.sort_unstable_by(|a, b| b.cmp(a));
        let tenth: u64 = h[..1000].iter().sum();
        let share = tenth as f64 / 200_000.0;
        assert!((0.73..0.79).contains(&share), "{share}");
    }

    #[test]
    fn hotcold_puts_four_fifths_on_one_fifth_scattered() {
        let s = shape(10_000, 200_000);
        let mut h = histogram(Workload::HotCold, s);
        // The hot blocks are spread: every tenth of the file holds about 200 of them.
        let hot_per_tenth: Vec<usize> = h.chunks(1000).map(|c| c.iter().filter(|&&n| n >= 40).count()).collect();
        assert!(
            hot_per_tenth.iter().all(|&n| (140..260).contains(&n)),
            "{hot_per_tenth:?}"
        );
        h.sort_unstable_by(|a, b| b.cmp(a));
        let hot: u64 = h[..2000].iter().sum();
        let share = hot as f64 / 200_000.0;
        assert!((0.79..0.81).contains(&share), "{share}");
    }

    #[test]
    fn multifile_keeps_its_footprint_and_mixes_sizes() {
        let f = 50_000;
        let s = shape(f, 400_000);
        let mut sizes: HashMap<u32, u64> = HashMap::new();
        let mut created_sizes = Vec::new();
        let (mut overwrites, mut churn) = (0u64, 0u64);
        for (phase, op) in all_ops(Workload::Multifile, s) {
            match op {
                Op::Create { file } => {
                    assert!(sizes.insert(file, 0).is_none(), "file {file} made twice");
                }
                Op::Delete { file } => {
                    created_sizes.push(sizes.remove(&file).expect("deleted file exists"));
                }
                Op::Write { file, block, blocks } => {
                    let size = sizes.get_mut(&file).expect("written file exists");
                    if blocks == 1 && block < *size && phase == Phase::Overwrite {
                        overwrites += 1;
                    } else {
                        // Files are written once, in order, then only overwritten.
                        assert_eq!(block, *size);
                        *size += blocks as u64;
                        if phase == Phase::Overwrite {
                            churn += blocks as u64;
                        }
                    }
                }
            }
            let footprint: u64 = sizes.values().map(|s| s + 1).sum();
            assert!(footprint <= f, "footprint {footprint}");
        }
        assert_eq!(overwrites + churn, 400_000);
        // Half and half, give or take one file.
        let largest = Generator::largest_file_blocks(f);
        assert!(overwrites.abs_diff(churn) <= largest, "{overwrites} vs {churn}");
        // Sizes are mixed: small and large ones.
        assert!(created_sizes.len() > 100, "{}", created_sizes.len());
        assert!(created_sizes.iter().any(|&s| s <= 4));
        assert!(created_sizes.iter().any(|&s| s >= largest / 2));
        // The volume stays about as full as after the fill.
        let footprint: u64 = sizes.values().map(|s| s + 1).sum();
        assert!(footprint >= f - largest - 1, "{footprint}");
    }
}
