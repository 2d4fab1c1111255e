//! The lab's simulated clock: it moves with the writes at a fixed rate, so that the
//! ages cost-benefit and ATGC read, and the background work of idle runs, are the same
//! on every machine and every run. Both the WAF runs ([`crate::run`], with their
//! pauses in [`crate::idle`]) and the latency runs ([`crate::latency`]) use it.

use std::time::Duration;

/// The lab's clock: one second per this many blocks written (256 MiB/s), so that the
/// ages cost-benefit and ATGC read are the same on every machine and every run.
pub const CLOCK_BLOCKS_PER_SEC: u64 = 65536;

/// The time the lab's writer takes for `blocks` blocks.
pub fn blocks_time(blocks: u64) -> Duration {
    let nanos = blocks as u128 * 1_000_000_000 / CLOCK_BLOCKS_PER_SEC as u128;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_writer_takes_a_second_per_clock_rate_of_blocks() {
        assert_eq!(
            super::blocks_time(super::CLOCK_BLOCKS_PER_SEC),
            std::time::Duration::from_secs(1)
        );
        assert_eq!(super::blocks_time(0), std::time::Duration::ZERO);
    }
}
