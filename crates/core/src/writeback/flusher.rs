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
//! Rules (see `Fs::balance_dirty_pages` in `file/mod.rs`): past
//! [`DIRTY_BACKGROUND_PAGES`] dirty pages a writer wakes every context with work and
//! goes on; past `DIRTY_PAGES_MAX` (16 MiB, `pagecache.rs`) it waits until the contexts
//! bring the count back under it (Linux's `balance_dirty_pages` throttling). A context
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
        let contexts = rw.pages.writeback().contexts();
        {
            let mut s = rw.flush.lock();
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
                .name(format!("uf2fs-writeback-{c}"))
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
            let mut s = rw.flush.lock();
            s.stop = true;
            s.running = 0;
            rw.flush.work.notify_all();
            rw.flush.progress.notify_all();
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
    while rw.flush.wait_for_work(c) {
        if let Err(e) = run_context(fs, c) {
            eprintln!("uf2fs: writeback context {c} failed: {e}; further changes will fail");
            rw.flush.round_done();
            return;
        }
        rw.flush.round_done();
    }
}

/// One round of context `c`: its inodes' dirty pages written back.
fn run_context(fs: &Fs, c: usize) -> Result<()> {
    let rw = fs.rw()?;
    let started = std::time::Instant::now();
    for ino in rw.pages.dirty_inodes(c) {
        fs.writeback_inode(ino)?;
    }
    if let Some(ctx) = rw.pages.writeback().contexts.get(c) {
        let mut s = ctx.stats.lock().unwrap_or_else(PoisonError::into_inner);
        s.runs += 1;
        s.busy_us += started.elapsed().as_micros() as u64;
    }
    Ok(())
}
