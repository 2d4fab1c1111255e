//! The default policy's measure: how fast the live blocks of each segment type die
//! (are overwritten, rewritten elsewhere or deleted by the workload, not moved by GC),
//! and the per-type cost weights that follow from it.
//!
//! At each GC pass: deaths of type t since the last pass over its live blocks gives
//! the fraction that died; a moving average of it is the type's death rate. The type
//! whose blocks die more slowly gets weight 1, the other the ratio of the two rates
//! (at most [`MAX_WEIGHT`]). A section of a hot type left alone loses its valid blocks
//! soon by itself (node sections in the seed's workload: every overwrite dirties a
//! direct node, and each checkpoint rewrites them all), so moving them now is work
//! that is undone shortly after: the weight makes such sections wait until they are
//! nearly empty. When both types die at the same pace the weights are equal and the
//! policy is plain greedy.

/// Largest weight (the maintainers' example used 512 for nodes).
pub const MAX_WEIGHT: u32 = 4096;
/// Weight of the newest observation in the moving average.
const ALPHA: f64 = 0.05;

/// Death-rate estimate per type (0: data, 1: node).
#[derive(Debug, Clone, Default)]
pub struct Hotness {
    last_deaths: [u64; 2],
    rate: [f64; 2],
    started: bool,
}

impl Hotness {
    /// Takes the cumulative deaths and the live blocks of each type now; returns the
    /// weights (data, node).
    pub fn update(&mut self, deaths: [u64; 2], live: [u64; 2]) -> [u32; 2] {
        if !self.started {
            self.started = true;
            self.last_deaths = deaths;
            return [1, 1];
        }
        for t in 0..2 {
            let d = deaths[t].saturating_sub(self.last_deaths[t]) as f64;
            let frac = d / live[t].max(1) as f64;
            self.rate[t] = (1.0 - ALPHA) * self.rate[t] + ALPHA * frac;
        }
        self.last_deaths = deaths;
        weights(self.rate)
    }
}

/// Weights from death rates: the colder type 1, the hotter the ratio, capped.
fn weights(rate: [f64; 2]) -> [u32; 2] {
    let (d, n) = (rate[0], rate[1]);
    if d <= 0.0 && n <= 0.0 {
        return [1, 1];
    }
    let ratio = |hot: f64, cold: f64| -> u32 {
        if cold <= 0.0 {
            MAX_WEIGHT
        } else {
            (hot / cold).round().clamp(1.0, MAX_WEIGHT as f64) as u32
        }
    };
    if n >= d {
        [1, ratio(n, d)]
    } else {
        [ratio(d, n), 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hotter_type_gets_the_ratio_of_death_rates() {
        let mut h = Hotness::default();
        assert_eq!(h.update([0, 0], [1000, 10]), [1, 1]);
        let mut w = [1, 1];
        for k in 1..=200u64 {
            // Each pass: 1% of data dies, 50% of nodes.
            w = h.update([10 * k, 5 * k], [1000, 10]);
        }
        assert_eq!(w, [1, 50]);
        let mut h = Hotness::default();
        h.update([0, 0], [100, 100]);
        for k in 1..=200u64 {
            w = h.update([10 * k, 10 * k], [100, 100]);
        }
        assert_eq!(w, [1, 1], "equal rates: plain greedy");
        assert_eq!(weights([0.0, 0.3]), [1, MAX_WEIGHT]);
        assert_eq!(weights([0.4, 0.1]), [4, 1]);
    }
}
