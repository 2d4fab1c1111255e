//! The paced cleaner's engine (see [`super::pacer`] for the pacers): one wake-up takes
//! one step, a checkpoint of prefree sections, or nothing, and says how long to wait.
//!
//! Each wake-up holds `cp_lock` exclusively for its step only, as every GC pass does,
//! so operations run between steps. The victim in progress lives in `GcState`
//! (`PacerState::victim`) between wake-ups; any other pass (foreground, background,
//! `Fs::gc`) first finishes it without sleeping, so that two passes never share a
//! victim and a writer with no room waits only for what is left of it.

use super::pacer::{self, GcPacing, PacedVictim, PacingSettings, PacingStats, SleepInputs};
use super::policies::{self, GcKind, PassLoop};
use super::{Migration, GC_CHECKPOINT_SECS};
use crate::checkpoint::write::CheckpointWriter;
use crate::fs::ReadWrite;
use crate::node::DIRTY_NODES_MAX;
use crate::{Fs, Result};
use std::time::Duration;

/// What one wake-up of the paced cleaner did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacedOutcome {
    /// `gc_pacing=off`: nothing.
    Off,
    /// Enough free sections, or nothing to clean: nothing.
    Idle,
    /// A checkpoint turned prefree sections free.
    Checkpointed,
    /// A step moved this many blocks of the victim in progress.
    Stepped(u32),
    /// A step wrote this many dirty nodes ahead of the checkpoint that frees the
    /// emptied victims.
    Flushed(u32),
    /// The victim in progress had nothing left to move: done (emptied or not).
    Finished,
    /// This many sections freed by checkpoints were discarded (their zones reset).
    Discarded(u32),
    /// The checkpoint due waits for a gap in front I/O long enough to hold it.
    Deferred,
}

impl PacedOutcome {
    /// Whether the wake-up did no GC work (the cleaner polls again).
    fn idle(self) -> bool {
        matches!(self, PacedOutcome::Idle | PacedOutcome::Deferred)
    }
}

/// A wake-up's outcome and how long to wait before the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacedWake {
    /// What it did.
    pub outcome: PacedOutcome,
    /// The wait before the next wake-up.
    pub wait: Duration,
    /// Whether the wait is a sleep taken because front I/O is in flight.
    pub slept: bool,
}

/// How often a cleaner under `gc_pacing=off` looks whether the pacer changed.
pub const OFF_POLL: Duration = Duration::from_secs(1);

/// Under the batching default policy, sections before the writers' own checkpoint
/// rule (free sections down to the pending writes + [`GC_CHECKPOINT_SECS`]) at which
/// the paced cleaner checkpoints the emptied victims: early enough that it, not a
/// writer, takes that checkpoint (writing nodes ahead in steps and waiting for a gap
/// in front I/O first), late enough that as many victims share it as under `off`.
/// Checkpointing at the start margin instead took twice `off`'s checkpoints, and with
/// them the dirty nodes each one writes (WAF +19.8% on the small preset at 50% load,
/// docs/gc-pacing.md).
pub const BATCH_CHECKPOINT_LEAD: u32 = 1;

/// Dirty nodes over which `adaptive` (outside the batched loop) begins the checkpoint
/// of its emptied victims one section above the foreground threshold instead of at
/// it (a quarter of [`DIRTY_NODES_MAX`]). Before that checkpoint the cleaner writes
/// the dirty nodes ahead in steps; with thousands of them (the seed preset's file has
/// 7,852 nodes) writers reached their floor first, and one of them wrote the
/// checkpoint itself: 35 ms at 50% load. Volumes whose dirty nodes stay under it (the
/// small preset's file has 514) keep the later checkpoint, which batches more victims.
pub const MANY_DIRTY_NODES: usize = DIRTY_NODES_MAX / 4;

impl Fs {
    /// Chooses the GC pacer and its values (read-write only). Turning pacing off
    /// leaves a victim in progress to the next pass, which finishes it.
    pub fn set_gc_pacing(&self, settings: PacingSettings) -> Result<()> {
        self.gc_state_mut(|g| g.pacer.settings = settings)?;
        // Under a pacer the zone resets of freed sections leave the checkpoint for the
        // cleaner's idle time ([`Fs::paced_discard`]).
        self.segments()?.set_defer_discards(settings.pacing != GcPacing::Off);
        self.set_prefree_is_room(self.rw()?);
        Ok(())
    }

    /// The GC pacer and its values (read-write only).
    pub fn gc_pacing(&self) -> Result<PacingSettings> {
        Ok(self.rw()?.gc().pacer.settings)
    }

    /// The start margin in force (read-write only): the settings' own, or one chosen
    /// from the volume's spare sections ([`pacer::auto_start_margin`]).
    pub fn start_margin(&self, settings: PacingSettings) -> Result<u32> {
        Ok(match settings.start_margin {
            pacer::AUTO_START_MARGIN => pacer::auto_start_margin(self.segments()?.spare_sections()),
            m => m,
        })
    }

    /// The section paced cleaning is emptying, if any (read-write only).
    pub fn paced_victim(&self) -> Result<Option<u32>> {
        let rw = self.rw()?;
        let g = rw.gc();
        Ok(g.pacer.victim.as_ref().map(|v| v.migration.secno()))
    }

    /// What the pacer did since open, and the time spent in GC (read-write only).
    pub fn pacing_stats(&self) -> Result<PacingStats> {
        Ok(self.rw()?.gc().pacer.stats)
    }

    /// One wake-up of the paced cleaner (see the module notes); afterwards wait
    /// `wait`. Errors are the GC's (the file system is then failed).
    pub fn paced_gc_step(&self) -> Result<PacedWake> {
        let rw = self.rw()?;
        let (settings, clock) = {
            let g = rw.gc();
            (g.pacer.settings, g.clock.clone())
        };
        if settings.pacing == GcPacing::Off {
            return Ok(PacedWake {
                outcome: PacedOutcome::Off,
                wait: OFF_POLL,
                slept: false,
            });
        }
        let settings = PacingSettings {
            start_margin: self.start_margin(settings)?,
            ..settings
        };
        if let Some(wake) = self.paced_discard(rw, settings, clock.now())? {
            return Ok(wake);
        }
        // Nothing in progress and room to spare: idle, found without the exclusive
        // checkpoint lock (taking it stops every operation, and an idle cleaner wakes
        // often). The check is repeated under the lock before any step.
        let (in_progress, pass_loop) = {
            let g = rw.gc();
            (g.pacer.victim.is_some(), g.pass_loop)
        };
        let slack = self.room_slack(rw, pass_loop, settings.start_margin).0;
        if !in_progress && slack >= settings.start_margin && !self.nodes_near_bound() {
            let now = clock.now();
            let user = rw.user_blocks();
            let mut g = rw.gc();
            g.pacer.sample_rate(now, user);
            g.pacer.behind = false;
            drop(g);
            return Ok(PacedWake {
                outcome: PacedOutcome::Idle,
                wait: settings.idle_poll,
                slept: false,
            });
        }
        // A discard left for a gap goes before the next step: a step whose log enters
        // the queued section would discard it inside the step, where a front write can
        // wait for it. Not when free sections are at the foreground threshold.
        if settings.pacing == GcPacing::Adaptive && slack >= 1 && self.segments()?.has_queued_discards() {
            return Ok(self.deferred(rw, settings, clock.now()));
        }
        let mut first_start = None;
        let outcome = loop {
            let mut writer = rw.cp_exclusive();
            rw.check_failed()?;
            let now = clock.now();
            first_start.get_or_insert(now);
            {
                let user = rw.user_blocks();
                rw.gc().pacer.sample_rate(now, user);
            }
            let r = self.paced_step_locked(rw, &mut writer, settings, now);
            rw.fail_unless_no_space(&r);
            if let Some(outcome) = r? {
                break outcome;
            }
            // The checkpoint due wants the device flushed first: without the lock,
            // operations going on meanwhile (a flush only waits for blocks already
            // written); then the step is decided again.
            drop(writer);
            let r = self.device().flush();
            rw.fail_unless_no_space(&r);
            r?;
            rw.gc().pacer.stats.device_flushes += 1;
        };
        let start = first_start.unwrap_or_default();
        let end = clock.now();
        let discards_queued = self.segments()?.has_queued_discards();
        let mut g = rw.gc();
        if !outcome.idle() {
            g.pacer.stats.gc_time += end.saturating_sub(start);
        }
        let busy = g.last_op.is_some_and(|t| end.saturating_sub(t) <= settings.busy_window);
        let wake = |wait, slept| PacedWake { outcome, wait, slept };
        if outcome == PacedOutcome::Deferred {
            drop(g);
            return Ok(self.deferred(rw, settings, end));
        }
        if outcome.idle() {
            return Ok(wake(settings.idle_poll, false));
        }
        if !busy {
            return Ok(wake(Duration::ZERO, false));
        }
        let sleep = match settings.pacing {
            GcPacing::Off | GcPacing::Seed => pacer::SEED_SLEEP,
            GcPacing::Adaptive => {
                let p = &g.pacer;
                let cost = p.victim.as_ref().and_then(|v| p.cost_for(v.is_node));
                match (p.user_blocks_per_sec, cost, &p.victim) {
                    (Some(rate), Some(cost), Some(v)) => {
                        let pass_loop = g.pass_loop;
                        let step_blocks = v.step_blocks;
                        let work = v.work;
                        drop(g);
                        let (slack, capacity) = self.room_slack(rw, pass_loop, settings.start_margin + 2);
                        g = rw.gc();
                        pacer::adaptive_sleep(&SleepInputs {
                            step_blocks,
                            block_cost_ns: cost,
                            user_blocks_per_sec: rate,
                            work,
                            capacity,
                            slack_secs: slack,
                            start_margin: settings.start_margin,
                        })
                    }
                    // Between victims the cleaner only writes nodes ahead of the
                    // checkpoint or checkpoints, which it does when free sections are
                    // already short: no sleep.
                    (_, _, None) => Duration::ZERO,
                    // Nothing measured yet: the seed's sleep.
                    _ => pacer::SEED_SLEEP,
                }
            }
        };
        // A discard waiting for a gap begins at a gap's start ([`pacer::fits_gap`]):
        // the wake-up after a sleep comes no later than just after the next front
        // operation is due, not at a moment where it would wait for
        // [`pacer::GAP_PATIENCE`] intervals and then go ahead mid-gap.
        let sleep = if settings.pacing == GcPacing::Adaptive && discards_queued {
            sleep.min(pacer::until_next_op(
                end,
                g.op_on_schedule(),
                g.pacer.op_interval_ns,
                sleep,
            ))
        } else {
            sleep
        };
        g.pacer.stats.sleeps += 1;
        g.pacer.stats.slept += sleep;
        Ok(wake(sleep, true))
    }

    /// A wake-up that waits for a gap in front I/O: the next one comes just after the
    /// next front operation is due.
    fn deferred(&self, rw: &ReadWrite, settings: PacingSettings, now: Duration) -> PacedWake {
        let g = rw.gc();
        PacedWake {
            outcome: PacedOutcome::Deferred,
            wait: pacer::until_next_op(now, g.op_on_schedule(), g.pacer.op_interval_ns, settings.idle_poll),
            slept: false,
        }
    }

    /// One discard (zone reset) of a section a checkpoint freed, if one is queued and
    /// the device has time for it: under `adaptive` when it ends before the next front
    /// operation is due (at the measured interval between operations and cost of a
    /// discard), or when it has waited for such a gap [`pacer::GAP_PATIENCE`] intervals
    /// (front I/O leaves none); under `seed` when front I/O is not in flight. Needs no
    /// `cp_lock`: the segment manager discards a queued section itself before a log
    /// enters it.
    fn paced_discard(&self, rw: &ReadWrite, settings: PacingSettings, now: Duration) -> Result<Option<PacedWake>> {
        if !self.segments()?.has_queued_discards() {
            return Ok(None);
        }
        let fits = {
            let mut g = rw.gc();
            match settings.pacing {
                GcPacing::Adaptive => {
                    g.pacer.gap_overdue(now)
                        || pacer::fits_gap(now, g.op_on_schedule(), g.pacer.op_interval_ns, g.pacer.discard_ns)
                }
                _ => g.last_op.is_none_or(|t| now.saturating_sub(t) > settings.busy_window),
            }
        };
        if !fits {
            return Ok(None);
        }
        let t0 = self.now();
        let r = self.segments()?.discard_some(self.device(), 1);
        rw.fail_unless_no_space(&r);
        let n = r?;
        let took = self.now().saturating_sub(t0);
        let mut g = rw.gc();
        g.pacer.discard_cost(n, took);
        g.pacer.gap_waiting = None;
        g.pacer.stats.discards += n as u64;
        g.pacer.stats.gc_time += took;
        Ok(Some(PacedWake {
            outcome: PacedOutcome::Discarded(n as u32),
            wait: Duration::ZERO,
            slept: false,
        }))
    }

    /// Sections free beyond the foreground threshold, counted up to `upto` (the
    /// threshold: what `room_without_gc` asks, without its checkpoint rule), and a
    /// section's capacity in blocks.
    fn room_slack(&self, rw: &ReadWrite, pass_loop: PassLoop, upto: u32) -> (u32, u32) {
        self.room_slack_with(rw, pass_loop, upto, false)
    }

    /// [`Fs::room_slack`], the sections a checkpoint would free counted as free with
    /// `count_prefree` (they always are under the batching default).
    fn room_slack_with(&self, rw: &ReadWrite, pass_loop: PassLoop, upto: u32, count_prefree: bool) -> (u32, u32) {
        let batch = pass_loop == PassLoop::Batched;
        let need = if batch {
            super::pending_need(self, rw)
        } else {
            super::gc_need(self, rw)
        };
        let extra = if batch { rw.gc().batch_extra } else { 0 };
        let segs = rw.segs();
        let gain = if batch || count_prefree {
            segs.prefree_section_gain()
        } else {
            0
        };
        let capacity = segs.segs_per_sec() * uf2fs_format::consts::BLOCKS_PER_SEG;
        let slack = (0..=upto)
            .take_while(|m| segs.has_enough_free_secs(&need, gain, 1 + extra + m))
            .count() as u32;
        (slack, capacity)
    }

    /// One wake-up's work under the exclusive `cp_lock`; `None` when the checkpoint
    /// due wants the device flushed first, which the caller does without the lock.
    fn paced_step_locked(
        &self,
        rw: &ReadWrite,
        writer: &mut CheckpointWriter,
        settings: PacingSettings,
        now: Duration,
    ) -> Result<Option<PacedOutcome>> {
        let (policy, pass_loop, victim) = {
            let mut g = rw.gc();
            (g.policy, g.pass_loop, g.pacer.victim.take())
        };
        let batch = pass_loop == PassLoop::Batched;
        if self.nodes_near_bound() {
            rw.gc().pacer.victim = victim;
            let budget = self.node_writeout_budget(rw, settings);
            return self.paced_node_writeout(rw, writer, budget).map(Some);
        }
        // `adaptive` outside the batched loop checkpoints the emptied victims when
        // free sections reach the foreground threshold, not after each victim (as a
        // pass under `off` does): fewer checkpoints write each dirty node and SIT block
        // fewer times, and the sections waiting for it count as free meanwhile.
        let at_threshold = settings.pacing == GcPacing::Adaptive && !batch;
        let (slack, _) = self.room_slack(rw, pass_loop, settings.start_margin);
        let room = if at_threshold {
            self.room_slack_with(rw, pass_loop, settings.start_margin, true).0
        } else {
            slack
        };
        // A checkpoint with many dirty nodes to write ahead is begun a section early:
        // writing them takes many steps, and writers reach their floor meanwhile.
        let checkpoint_lead = u32::from(self.nodes().dirty_node_count() > MANY_DIRTY_NODES);
        // Room to spare (the checkpoint at the threshold aside): idle.
        if victim.is_none() && room >= settings.start_margin && !(at_threshold && slack <= checkpoint_lead) {
            rw.gc().pacer.behind = false;
            return Ok(Some(PacedOutcome::Idle));
        }
        // Prefree sections are free after a checkpoint: take them first, as a pass
        // does (the batching default just before its checkpoint is due,
        // [`BATCH_CHECKPOINT_LEAD`]).
        let cp_wanted = if batch {
            self.free_sections(rw) <= self.pending_sections(rw, true) + GC_CHECKPOINT_SECS + BATCH_CHECKPOINT_LEAD
        } else if at_threshold {
            slack <= checkpoint_lead
        } else {
            victim.is_none()
        };
        if cp_wanted && self.prefree_count(rw) > 0 {
            // A victim in progress waits for the checkpoint.
            let held = victim.is_some();
            if held {
                rw.gc().pacer.victim = victim;
            }
            let Some(outcome) = self.paced_checkpoint_step(rw, writer, settings, now)? else {
                return Ok(None);
            };
            // Still short: the next victim starts now (its first step at the next
            // wake-up), so that writers see the cleaner at work in between and keep to
            // the floor ([`Fs::writer_room`]).
            if outcome == PacedOutcome::Checkpointed
                && !held
                && self.room_slack(rw, pass_loop, settings.start_margin).0 < settings.start_margin
            {
                let next = self.start_paced_victim(rw, settings, (policy, batch), now)?;
                rw.gc().pacer.victim = next;
            }
            return Ok(Some(outcome));
        }
        let mut victim = match victim {
            Some(v) => v,
            None => {
                let Some(v) = self.start_paced_victim(rw, settings, (policy, batch), now)? else {
                    return Ok(Some(PacedOutcome::Idle));
                };
                v
            }
        };
        if settings.pacing == GcPacing::Adaptive {
            let cost = rw.gc().pacer.cost_for(victim.is_node);
            victim.step_blocks = pacer::adaptive_step(cost, settings.latency_target);
        }
        let cp_ver = writer.last().node_version();
        let before = victim.migration.moved();
        let t0 = self.now();
        let stepped = victim
            .migration
            .step_at_most(&self.tree(rw), cp_ver, victim.step_blocks)?;
        let took = self.now().saturating_sub(t0);
        let after = victim.migration.moved();
        let mut g = rw.gc();
        g.stats.data_blocks_moved += after.data - before.data;
        g.stats.node_blocks_moved += after.node - before.node;
        g.stats.data_owner_nodes += after.data_owners - before.data_owners;
        g.stats.data_pages_cleaned += after.data_from_pages - before.data_from_pages;
        match stepped {
            Some(n) => {
                g.pacer.step_cost(n, took, victim.is_node);
                g.pacer.stats.steps += 1;
                g.pacer.stats.step_blocks += n as u64;
                g.pacer.victim = Some(victim);
                Ok(Some(PacedOutcome::Stepped(n)))
            }
            None => {
                drop(g);
                self.end_paced_victim(rw, victim, false);
                Ok(Some(PacedOutcome::Finished))
            }
        }
    }

    /// The checkpoint that frees emptied victims, paced: a step of dirty nodes written
    /// ahead of it, a flush of the device ahead of it (`None`: the caller flushes
    /// without the lock), a wait for a gap in front I/O (`adaptive`), or the
    /// checkpoint.
    fn paced_checkpoint_step(
        &self,
        rw: &ReadWrite,
        writer: &mut CheckpointWriter,
        settings: PacingSettings,
        now: Duration,
    ) -> Result<Option<PacedOutcome>> {
        // The checkpoint writes every dirty node, most of them dirtied by
        // the victims' data moves: write them out ahead in steps, so that
        // the checkpoint itself, which no operation can share, is small.
        let budget = self.node_writeout_budget(rw, settings);
        if self.nodes().dirty_node_count() > budget as usize {
            return self.paced_node_writeout(rw, writer, budget).map(Some);
        }
        // The checkpoint begins with a flush of everything written since the last
        // one; on a file-backed image that is the host writing out the image's dirty
        // pages, tens of milliseconds while no operation runs. So the wake-up
        // flushes first, without the lock (`None`: [`Fs::paced_gc_step`]), and then
        // decides again.
        {
            let last = writer.last().cp.checkpoint_ver;
            let mut g = rw.gc();
            if g.pacer.flushed_ahead_of != Some(last) {
                g.pacer.flushed_ahead_of = Some(last);
                return Ok(None);
            }
        }
        // No operation runs during the checkpoint: under `adaptive` it
        // waits for a gap in front I/O that holds it, for a few front
        // operations at most (a writer that finds no room meanwhile
        // writes it itself).
        if settings.pacing == GcPacing::Adaptive {
            let mut g = rw.gc();
            let cost = g.pacer.checkpoint_ns.map(|c| c * pacer::GAP_MARGIN);
            let last_op = g.op_on_schedule();
            if !g.pacer.gap_overdue(now) && !pacer::fits_gap(now, last_op, g.pacer.op_interval_ns, cost) {
                return Ok(Some(PacedOutcome::Deferred));
            }
        }
        let t0 = self.now();
        self.gc_checkpoint(rw, writer)?;
        let took = self.now().saturating_sub(t0);
        {
            let mut g = rw.gc();
            g.pacer.checkpoint_cost(took);
            g.pacer.gap_waiting = None;
            g.pacer.stats.checkpoints += 1;
        }
        Ok(Some(PacedOutcome::Checkpointed))
    }

    /// Dirty nodes a node write-out step writes: what half the latency target holds
    /// at the measured cost of a node write (`adaptive`), the seed's rescaled step
    /// (`seed`).
    fn node_writeout_budget(&self, rw: &ReadWrite, settings: PacingSettings) -> u32 {
        let g = rw.gc();
        match settings.pacing {
            GcPacing::Adaptive => {
                pacer::adaptive_flush(g.pacer.node_write_ns.or(g.pacer.block_cost_ns), settings.latency_target)
            }
            _ => pacer::seed_step(self.nodes().dirty_node_count() as u32, g.pacer.avg_victim_interval),
        }
    }

    /// A step that writes at most `budget` dirty nodes, as the kernel's node writeback
    /// writes them between checkpoints.
    fn paced_node_writeout(&self, rw: &ReadWrite, writer: &CheckpointWriter, budget: u32) -> Result<PacedOutcome> {
        let t0 = self.now();
        let t = self.tree(rw);
        let n = t
            .nodes
            .write_some_dirty_nodes(t.dev, t.sb, t.segs, writer.last().node_version(), budget as usize)?;
        let took = self.now().saturating_sub(t0);
        let mut g = rw.gc();
        g.pacer.node_write_cost(n as u32, took);
        g.pacer.stats.flush_steps += 1;
        g.pacer.stats.flushed_nodes += n as u64;
        Ok(PacedOutcome::Flushed(n as u32))
    }

    /// Whether dirty nodes are past half of [`DIRTY_NODES_MAX`], where an operation
    /// writes them all out itself (4096 node writes: 82 ms in the lab's device model):
    /// the paced cleaner writes some ahead in a step first.
    fn nodes_near_bound(&self) -> bool {
        self.nodes().dirty_node_count() > DIRTY_NODES_MAX / 2
    }

    /// Picks the paced cleaner's next victim (by the policy, as a foreground pass
    /// would) and records its start; `None` when there is none, or none whose move fits
    /// (left to the foreground pass).
    fn start_paced_victim(
        &self,
        rw: &ReadWrite,
        settings: PacingSettings,
        (policy, batch): (super::GcPolicy, bool),
        now: Duration,
    ) -> Result<Option<PacedVictim>> {
        // Ahead of need: cost-benefit on the logical age; else the policy's foreground
        // choice, as a writer's pass would make it.
        let (victims, kind) = if self.paced_ahead(rw, settings.start_margin) {
            (policies::for_policy(super::GcPolicy::Default), GcKind::Background)
        } else {
            (policies::for_policy(policy), GcKind::Foreground)
        };
        let Some(v) = self.select_victim(rw, victims.as_ref(), kind)? else {
            return Ok(None);
        };
        let v = if self.victim_fits(rw, &v, batch) {
            v
        } else {
            match self.cheapest_victim(rw).filter(|c| self.victim_fits(rw, c, batch)) {
                Some(c) => c,
                // Moving no victim fits: leave it to the foreground pass.
                None => return Ok(None),
            }
        };
        let migration = Migration::new(&self.tree(rw), v.secno);
        let mut g = rw.gc();
        g.pacer.victim_started(now);
        g.pacer.stats.victims += 1;
        g.stats.count_victim(v.is_node);
        let step_blocks = match settings.pacing {
            GcPacing::Adaptive => pacer::adaptive_step(g.pacer.cost_for(v.is_node), settings.latency_target),
            _ => pacer::seed_step(v.valid_blocks, g.pacer.avg_victim_interval),
        };
        Ok(Some(PacedVictim {
            migration,
            work: v.valid_blocks,
            step_blocks,
            is_node: v.is_node,
            started: now,
        }))
    }

    /// Whether the paced cleaner's next victim is picked ahead of need, with start
    /// margin `margin`: while free sections are at least `margin - 2` above the
    /// foreground threshold, or while the cleaner is behind (`PacerState::behind`:
    /// writers clean for themselves, greedily, and take the cheap sections). Ahead of
    /// need it picks by cost-benefit on the logical age (uf2fs's `default` cost: old,
    /// cold sections, and node sections once their nodes have mostly been rewritten);
    /// else, within two sections of the threshold where a writer is about to need the
    /// section, by the policy's foreground choice (F2FS's background GC turns to
    /// foreground GC when free sections run short too). Not the policy's own background
    /// choice: under greedy that is the kernel's cost-benefit on ages in seconds, and a
    /// burst of writes that lasts seconds leaves those without a signal (WAF +7 to +16%
    /// on the mount, docs/gc-pacing.md). A margin under 3 leaves no room: never ahead.
    fn paced_ahead(&self, rw: &ReadWrite, margin: u32) -> bool {
        let Some(ahead) = margin.checked_sub(2).filter(|a| *a >= 1) else {
            return false;
        };
        let (pass_loop, behind) = {
            let g = rw.gc();
            (g.pass_loop, g.pacer.behind)
        };
        behind || self.room_slack(rw, pass_loop, ahead).0 >= ahead
    }

    /// Records the end of a paced victim whose migration has nothing left.
    fn end_paced_victim(&self, rw: &ReadWrite, v: PacedVictim, by_writer: bool) {
        let moved = v.migration.finish(&self.tree(rw));
        let now = self.now();
        let mut g = rw.gc();
        if moved.emptied {
            g.stats.sections_freed += 1;
            g.pacer.stats.sections_freed += 1;
        }
        if by_writer {
            g.pacer.stats.writer_finishes += 1;
        }
        g.pacer.stats.victim_timed(now.saturating_sub(v.started), v.is_node);
    }

    /// Finishes the paced victim in progress, if any, without sleeping (before any
    /// other pass, and for a writer that found no room). Returns whether there was one.
    pub(super) fn finish_paced_victim(
        &self,
        rw: &ReadWrite,
        writer: &CheckpointWriter,
        by_writer: bool,
    ) -> Result<bool> {
        let Some(mut v) = rw.gc().pacer.victim.take() else {
            return Ok(false);
        };
        let cp_ver = writer.last().node_version();
        let before = v.migration.moved();
        while !v.migration.step(&self.tree(rw), cp_ver)? {}
        let after = v.migration.moved();
        {
            let mut g = rw.gc();
            g.stats.data_blocks_moved += after.data - before.data;
            g.stats.node_blocks_moved += after.node - before.node;
            g.stats.data_owner_nodes += after.data_owners - before.data_owners;
            g.stats.data_pages_cleaned += after.data_from_pages - before.data_from_pages;
        }
        self.end_paced_victim(rw, v, by_writer);
        Ok(true)
    }
}

impl Fs {
    /// Free sections and the reserved ones, now (read-write only): what paced GC keeps
    /// above zero.
    pub fn free_sections_now(&self) -> Result<(u32, u32)> {
        let rw = self.rw()?;
        let segs = rw.segs();
        Ok((segs.free_section_count(), segs.reserved_sections()))
    }
}

#[cfg(test)]
mod tests {
    use super::PacedOutcome;
    use crate::clock::{Clock, ManualClock};
    use crate::device::probe::FlushProbe;
    use crate::gc::pacer::{GcPacing, PacingSettings};
    use crate::mkfs::{mem_fs, MkfsOptions};
    use crate::node::DIRTY_NODES_MAX;
    use std::sync::Arc;
    use std::time::Duration;

    /// The paced cleaner flushes the device ahead of its checkpoint without `cp_lock`:
    /// on an image file that flush writes out the host's dirty pages of the image, tens
    /// of milliseconds that operations should not wait for. Before that, the first
    /// flush of a paced checkpoint ran under the exclusive lock and the probe's
    /// operation waited for it.
    #[test]
    fn the_paced_cleaner_flushes_ahead_of_its_checkpoint_while_operations_run() {
        let probe = FlushProbe::fs(128 << 20);
        let fs = &probe.fs;
        let clock = Arc::new(ManualClock::new());
        fs.set_clock(clock.clone()).unwrap();
        fs.set_gc_pacing(PacingSettings {
            pacing: GcPacing::Adaptive,
            ..PacingSettings::default()
        })
        .unwrap();
        let root = fs.root();
        let ino = fs.create(root, b"f", 0o644, 0, 0).unwrap().ino;
        let blocks = fs.statfs().unwrap().blocks_avail * 3 / 4;
        let payload = vec![5u8; 4096];
        for i in 0..blocks {
            fs.write(ino, i * 4096, &payload).unwrap();
        }
        fs.write_checkpoint().unwrap();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next_wake = clock.now();
        for _ in 0..blocks * 3 {
            clock.advance(Duration::from_micros(500));
            while next_wake <= clock.now() {
                probe.arm(true);
                let w = fs.paced_gc_step().unwrap();
                probe.arm(false);
                if let Some(ran) = probe.ran() {
                    assert!(
                        ran,
                        "an operation waited for the paced cleaner's flush ({:?})",
                        w.outcome
                    );
                    assert_eq!(fs.pacing_stats().unwrap().device_flushes, 1);
                    fs.lookup(root, FlushProbe::NAME).unwrap();
                    return;
                }
                next_wake = clock.now() + w.wait;
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            fs.write(ino, (x % blocks) * 4096, &payload).unwrap();
        }
        panic!(
            "no paced checkpoint in {} overwrites: {:?}",
            blocks * 3,
            fs.pacing_stats().unwrap()
        );
    }

    /// Past half the dirty-node bound the paced cleaner writes nodes out in steps, with
    /// room to spare and no victim, so that no writer reaches the bound and writes
    /// thousands of them while a front operation waits.
    #[test]
    fn the_paced_cleaner_writes_dirty_nodes_before_a_writer_must() {
        let bytes = 128u64 << 20;
        let fs = mem_fs(&MkfsOptions::default(), bytes);
        fs.set_gc_pacing(PacingSettings {
            pacing: GcPacing::Adaptive,
            ..PacingSettings::default()
        })
        .unwrap();
        let root = fs.root();
        for i in 0..DIRTY_NODES_MAX / 2 + 64 {
            fs.create(root, format!("f{i}").as_bytes(), 0o644, 0, 0).unwrap();
        }
        assert!(fs.nodes().dirty_node_count() > DIRTY_NODES_MAX / 2);
        let mut flushed = 0;
        for _ in 0..10_000 {
            match fs.paced_gc_step().unwrap().outcome {
                PacedOutcome::Flushed(n) => flushed += n as usize,
                PacedOutcome::Idle => break,
                other => panic!("unexpected {other:?} with room to spare"),
            }
        }
        assert!(flushed > 0, "no node write-out step");
        assert!(fs.nodes().dirty_node_count() <= DIRTY_NODES_MAX / 2);
        assert_eq!(fs.pacing_stats().unwrap().flushed_nodes, flushed as u64);
        fs.write_checkpoint().unwrap();
        for i in [0, DIRTY_NODES_MAX / 2 + 63] {
            fs.lookup(root, format!("f{i}").as_bytes()).unwrap();
        }
    }
}
