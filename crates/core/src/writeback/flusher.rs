//! Flusher threads: one per writeback context, each writing the dirty pages of the
//! inodes its context owns, so that writers return once their pages are in the page
//! cache and several contexts write back in parallel (the 2025 parallel-writeback
//! seed: several writeback contexts per device, each inode affined to one).
//!
//! Owns the control block the writers and the threads share ([`FlushControl`], kept in
//! the read-write state): which contexts have work, whether threads run, and a
//! condition variable writers wait on for progress. The threads themselves belong to
//! [`Flushers`], started and stopped with a mount's other background work
//! ([`crate::background::Background`]).
//!
//! Rules ([`throttle`], applied by `Fs::balance_dirty_pages` in `file/mod.rs`): each
//! context's share of the 16 MiB limit is the limit over the contexts (at least 4 MiB);
//! a writer wakes the contexts past half their share (every context past
//! [`DIRTY_BACKGROUND_PAGES`] in all) and goes on; it waits while everything dirty is
//! past the limit, or while its own context is past its share (Linux's
//! `balance_dirty_pages` throttling, per writeback context). A context
//! writes an inode as any writeback does: under the inode's lock and `cp_lock` shared,
//! so never beside a checkpoint, and never the same inode as another context. Without
//! threads (the lab's single-threaded runs, tests, `uf2fs` commands) writers write back
//! themselves, as before.

use crate::{Fs, Result};
use std::io;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// Dirty pages past which writers wake the flusher threads (8 MiB: half the hard
/// limit, Linux's `dirty_background_ratio` against `dirty_ratio`).
pub const DIRTY_BACKGROUND_PAGES: usize = crate::pagecache::DIRTY_PAGES_MAX / 2;

/// What a writer does about the dirty pages (see [`throttle`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Throttle {
    /// Contexts to wake.
    pub wake: Vec<usize>,
    /// Whether the writer waits (for the contexts it wakes) before writing.
    pub wait: bool,
}

/// The dirty-page rules of a writer whose inode belongs to context `mine` (if its
/// inode has dirty pages yet), with `total` dirty pages, `loads` of them per context,
/// under a hard limit of `max` pages in all (Linux's `dirty_ratio` and per-writeback
/// share, `balance_dirty_pages`):
/// - each context's share of the limit is `max / contexts`, at least `floor`;
/// - a context past half its share is woken, and every context past half the limit;
/// - the writer waits while all contexts together are past `max`, or while its own
///   context is past its share (a writer flooding one context waits for it, not the
///   writers of other contexts).
pub fn throttle(total: usize, loads: &[u64], mine: Option<usize>, max: usize, floor: usize) -> Throttle {
    let n = loads.len().max(1);
    let share = (max / n).max(floor) as u64;
    let mut wake: Vec<usize> = if total > max / 2 {
        (0..loads.len()).collect()
    } else {
        (0..loads.len()).filter(|&c| loads[c] > share / 2).collect()
    };
    let own_over = mine.is_some_and(|c| loads.get(c).is_some_and(|&l| l > share));
    if let Some(c) = mine.filter(|_| own_over) {
        if !wake.contains(&c) {
            wake.push(c);
        }
    }
    Throttle {
        wake,
        wait: total > max || own_over,
    }
}

/// Longest a throttled writer waits before looking again (a flusher that failed or
/// stopped must not leave it asleep).
const THROTTLE_WAIT: Duration = Duration::from_millis(20);

#[derive(Debug, Default)]
struct State {
    /// Threads running (0: writers write back themselves).
    running: usize,
    /// Per context: woken with work to do.
    kicked: Vec<bool>,
    stop: bool,
    /// Rounds completed by all contexts (writers wait for it to move).
    rounds: u64,
}

/// What writers and flusher threads share (see the module notes).
#[derive(Debug, Default)]
pub struct FlushControl {
    state: Mutex<State>,
    /// Flushers wait here for work.
    work: Condvar,
    /// Writers wait here for progress.
    progress: Condvar,
}

impl FlushControl {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether flusher threads are running.
    pub fn running(&self) -> bool {
        self.lock().running > 0
    }

    /// Wakes every context.
    pub fn kick_all(&self) {
        let mut s = self.lock();
        s.kicked.iter_mut().for_each(|k| *k = true);
        self.work.notify_all();
    }

    /// Wakes context `c`.
    pub fn kick(&self, c: usize) {
        let mut s = self.lock();
        if let Some(k) = s.kicked.get_mut(c) {
            *k = true;
        }
        self.work.notify_all();
    }

    /// Waits for a flusher round to complete, at most 20 ms.
    pub fn wait_progress(&self) {
        let s = self.lock();
        let seen = s.rounds;
        let _ = self
            .progress
            .wait_timeout_while(s, THROTTLE_WAIT, |s| s.rounds == seen && s.running > 0)
            .unwrap_or_else(PoisonError::into_inner);
    }

    /// Context `c`'s thread: waits until woken (or `stop`), then takes the kick.
    /// Returns false when it must stop.
    fn wait_for_work(&self, c: usize) -> bool {
        let mut s = self.lock();
        loop {
            if s.stop {
                return false;
            }
            if s.kicked[c] {
                s.kicked[c] = false;
                return true;
            }
            s = self.work.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn round_done(&self) {
        let mut s = self.lock();
        s.rounds += 1;
        self.progress.notify_all();
    }
}

/// The flusher threads of one file system (see the module notes). Stopping (also on
/// drop) wakes and joins them; the dirty pages left are written by the next
/// checkpoint.
pub struct Flushers {
    fs: Arc<Fs>,
    threads: Vec<JoinHandle<()>>,
}

impl Flushers {
    /// Starts one thread per writeback context of `fs` (opened read-write).
    pub fn start(fs: &Arc<Fs>) -> io::Result<Flushers> {
        let rw = fs.rw().map_err(|e| io::Error::other(e.to_string()))?;
        let contexts = rw.pages().writeback().contexts();
        {
            let mut s = rw.flusher().lock();
            s.kicked = vec![false; contexts];
            s.stop = false;
            s.running = contexts;
        }
        let mut me = Flushers {
            fs: Arc::clone(fs),
            threads: Vec::with_capacity(contexts),
        };
        for c in 0..contexts {
            let fs = Arc::clone(fs);
            let t = std::thread::Builder::new()
                // Linux keeps 15 bytes of a thread's name: short enough to tell contexts apart
                // in `ps -L` and `top -H`.
                .name(format!("uf2fs-wb-{c}"))
                .spawn(move || flusher(&fs, c));
            match t {
                Ok(t) => me.threads.push(t),
                Err(e) => {
                    me.stop_and_join();
                    return Err(e);
                }
            }
        }
        Ok(me)
    }

    /// Stops and joins the threads.
    pub fn stop(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if let Ok(rw) = self.fs.rw() {
            let mut s = rw.flusher().lock();
            s.stop = true;
            s.running = 0;
            rw.flusher().work.notify_all();
            rw.flusher().progress.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Flushers {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Context `c`'s loop: each time it is woken, write back every inode it owns (oldest
/// dirtied first), then report a round. A failed writeback has failed the file
/// system: the thread says so once and ends.
fn flusher(fs: &Fs, c: usize) {
    let Ok(rw) = fs.rw() else { return };
    while rw.flusher().wait_for_work(c) {
        if let Err(e) = run_context(fs, c) {
            eprintln!("uf2fs: writeback context {c} failed: {e}; further changes will fail");
            rw.flusher().round_done();
            record_cpu(fs, c);
            return;
        }
        rw.flusher().round_done();
    }
    record_cpu(fs, c);
}

/// Stores the CPU time the calling thread (context `c`'s flusher, ending) used.
fn record_cpu(fs: &Fs, c: usize) {
    let (Ok(rw), Some(cpu)) = (fs.rw(), crate::clock::thread_cpu_time()) else {
        return;
    };
    if let Some(ctx) = rw.pages().writeback().contexts.get(c) {
        ctx.stats.lock().unwrap_or_else(PoisonError::into_inner).cpu_us = cpu.as_micros() as u64;
    }
}

/// One round of context `c`: its inodes' dirty pages written back.
fn run_context(fs: &Fs, c: usize) -> Result<()> {
    let rw = fs.rw()?;
    let started = std::time::Instant::now();
    for ino in rw.pages().dirty_inodes(c) {
        fs.writeback_inode(ino)?;
    }
    if let Some(ctx) = rw.pages().writeback().contexts.get(c) {
        let mut s = ctx.stats.lock().unwrap_or_else(PoisonError::into_inner);
        s.runs += 1;
        s.busy_us += started.elapsed().as_micros() as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::writeback::flusher::{throttle, Throttle};

    #[test]
    fn writers_wait_for_their_own_context_or_the_whole_limit() {
        // One context: its share is the limit; past half it is woken, past the
        // limit the writer waits.
        assert_eq!(
            throttle(100, &[100], Some(0), 4096, 1024),
            Throttle {
                wake: vec![],
                wait: false
            }
        );
        assert_eq!(
            throttle(3000, &[3000], Some(0), 4096, 1024),
            Throttle {
                wake: vec![0],
                wait: false
            }
        );
        assert_eq!(
            throttle(5000, &[5000], Some(0), 4096, 1024),
            Throttle {
                wake: vec![0],
                wait: true
            }
        );
        // Four contexts, shares of 1024: context 0 floods past its share (the total
        // still under half the limit). Its writer waits for it; a writer of context 1
        // goes on; only context 0 is woken.
        let loads = [1100, 100, 0, 0];
        assert_eq!(
            throttle(1200, &loads, Some(0), 4096, 1024),
            Throttle {
                wake: vec![0],
                wait: true
            }
        );
        assert_eq!(
            throttle(1200, &loads, Some(1), 4096, 1024),
            Throttle {
                wake: vec![0],
                wait: false
            }
        );
        // Two contexts: past half the limit in all, every context is woken; the
        // writer of the flooding context waits, the other does not.
        assert_eq!(
            throttle(2600, &[2500, 100], Some(0), 4096, 1024),
            Throttle {
                wake: vec![0, 1],
                wait: true
            }
        );
        assert_eq!(
            throttle(2600, &[2500, 100], Some(1), 4096, 1024),
            Throttle {
                wake: vec![0, 1],
                wait: false
            }
        );
        // Past the whole limit everyone waits and every context is woken.
        assert_eq!(
            throttle(4200, &[2100, 2100], Some(1), 4096, 1024),
            Throttle {
                wake: vec![0, 1],
                wait: true
            }
        );
        // A writer whose inode is clean yet only waits for the whole limit.
        assert_eq!(
            throttle(1200, &loads, None, 4096, 1024),
            Throttle {
                wake: vec![0],
                wait: false
            }
        );
        // Eight contexts: the share never drops below the floor.
        let loads = [1000, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(
            throttle(1000, &loads, Some(0), 4096, 1024),
            Throttle {
                wake: vec![0],
                wait: false
            }
        );
        assert!(throttle(1100, &[1100, 0, 0, 0, 0, 0, 0, 0], Some(0), 4096, 1024).wait);
    }
}
