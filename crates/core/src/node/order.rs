//! The node logs' write sequence: node write-outs reach the device in the order they
//! took their blocks, though each writes with no lock held that other operations need.
//!
//! A write-out takes its blocks and a ticket under the segment manager's mutex (so
//! tickets follow allocation order), releases every lock, then waits for its turn
//! ([`WriteOrder::turn`]) and writes. Only node write-outs wait here, and the holder of
//! the turn needs no lock to finish, so no cycle can form. The order matters for:
//!
//! - zoned devices: a zone takes writes only at its write pointer, so the blocks of a
//!   node log must be written in the order they were allocated;
//! - roll-forward recovery, which follows the warm node log's chain only as far as
//!   every block landed: an fsync's inode block must not land before the node blocks
//!   allocated before it;
//! - a block freed while its write is still waiting (a node written again, or freed)
//!   may be handed out again by SSR to a later write-out: the later write lands last;
//! - a checkpoint: [`WriteOrder::drain`] returns once every write-out issued before it
//!   is on the device, so the NAT it records points at written blocks.
//!
//! A write that fails stops the sequence: every later turn (and drain) fails with an
//! I/O error naming the first failure, and the volume stops writing (the callers fail
//! it, as for any I/O error during a write-out).

use crate::{Error, Result};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// The sequence's state: tickets handed out and written, and the first failure.
#[derive(Default)]
struct Sequence {
    /// The next ticket to hand out.
    next: u64,
    /// The ticket whose write-out may write now.
    serving: u64,
    /// The first failed write-out, if any.
    failed: Option<String>,
    /// Tickets dropped unused before their turn: skipped when it comes.
    abandoned: std::collections::BTreeSet<u64>,
}

/// See the module notes.
#[derive(Default)]
pub(super) struct WriteOrder {
    seq: Mutex<Sequence>,
    turn_changed: Condvar,
}

/// A write-out's place in the sequence (taken with [`WriteOrder::ticket`]).
#[must_use = "a ticket not used blocks every later write-out"]
pub(super) struct Ticket<'a> {
    order: &'a WriteOrder,
    number: u64,
    /// Whether the turn was taken (then the turn's guard passes it on).
    used: bool,
}

/// The turn of one write-out: it writes while this is held; dropping it lets the next
/// ticket write.
pub(super) struct Turn<'a> {
    order: &'a WriteOrder,
}

impl WriteOrder {
    fn lock(&self) -> MutexGuard<'_, Sequence> {
        self.seq.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the next place in the sequence. The caller holds the segment manager's
    /// mutex, under which it allocated the blocks this ticket writes.
    pub(super) fn ticket(&self) -> Ticket<'_> {
        let mut s = self.lock();
        let number = s.next;
        s.next += 1;
        Ticket {
            order: self,
            number,
            used: false,
        }
    }

    /// Waits until every write-out that took a ticket before now is on the device (or
    /// failed: then an error). The caller must hold neither the dirty-node map nor the
    /// segment manager's mutex (see [`Ticket::turn`]).
    pub(super) fn drain(&self) -> Result<()> {
        self.ticket().turn().map(drop)
    }

    /// Records that the write-out holding the turn failed with `what`.
    fn fail(&self, what: String) {
        let mut s = self.lock();
        s.failed.get_or_insert(what);
    }

    /// Passes the turn to the next ticket (past those abandoned).
    fn pass(&self) {
        let mut s = self.lock();
        s.serving += 1;
        let seq = &mut *s;
        while seq.abandoned.remove(&seq.serving) {
            seq.serving += 1;
        }
        drop(s);
        self.turn_changed.notify_all();
    }
}

impl<'a> Ticket<'a> {
    /// Waits for this ticket's turn: every earlier write-out is then on the device.
    /// An error (and no turn) when an earlier one failed. The caller must hold no lock
    /// that a write-out takes before its ticket (the dirty-node map, the segment
    /// manager's mutex): checked in debug builds.
    pub(super) fn turn(mut self) -> Result<Turn<'a>> {
        crate::lockrank::assert_none_held(crate::lockrank::Rank::Nodes, "waiting for the node write sequence");
        self.used = true;
        let order = self.order;
        let mut s = order.lock();
        while s.serving != self.number {
            s = order.turn_changed.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        if let Some(first) = &s.failed {
            let e = Error::eio(format!("node write-out refused: an earlier one failed ({first})"));
            drop(s);
            order.pass();
            return Err(e);
        }
        Ok(Turn { order })
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.used {
            // Never waited for (a write-out given up before it wrote): its place
            // passes now or, when earlier ones still write, once its turn comes.
            let mut s = self.order.lock();
            if s.serving == self.number {
                drop(s);
                self.order.pass();
            } else {
                s.abandoned.insert(self.number);
            }
        }
    }
}

impl Turn<'_> {
    /// Ends the turn after a failed write: `what` fails every later turn.
    pub(super) fn failed(self, what: String) {
        self.order.fail(what);
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.order.pass();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn turns_follow_tickets_and_a_failure_stops_the_rest() {
        let order = Arc::new(WriteOrder::default());
        let log = Arc::new(Mutex::new(Vec::new()));
        let first = order.ticket();
        let second = order.ticket();
        // The second waits in another thread until the first is done.
        let t = {
            let (order, log) = (Arc::clone(&order), Arc::clone(&log));
            let n = second.number;
            std::mem::forget(second);
            std::thread::spawn(move || {
                let ticket = Ticket {
                    order: &order,
                    number: n,
                    used: false,
                };
                let _turn = ticket.turn().unwrap();
                log.lock().unwrap().push(2);
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(30));
        let turn = first.turn().unwrap();
        log.lock().unwrap().push(1);
        drop(turn);
        t.join().unwrap();
        assert_eq!(*log.lock().unwrap(), [1, 2]);
        order.drain().unwrap();
        // A ticket dropped unused passes its turn on.
        drop(order.ticket());
        order.ticket().turn().unwrap().failed("device gone".into());
        let e = order.drain().unwrap_err().to_string();
        assert!(e.contains("device gone"), "{e}");
        assert!(order.drain().is_err(), "the failure stays");
    }
}
