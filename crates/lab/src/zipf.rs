//! Zipf-distributed ranks in O(1) time and memory, whatever the number of elements
//! (the seed preset's file has eight million blocks): rejection-inversion sampling
//! (W. Hörmann and G. Derflinger, "Rejection-inversion to generate variates from
//! monotone discrete distributions", 1996).
//!
//! Rank `k` in `1..=n` has probability proportional to `k^-theta`. The continuous
//! hat `h(x) = x^-theta` is integrated (`H`) and inverted in closed form; a draw `x`
//! of the hat is rounded to the nearest rank and kept when it falls under the
//! histogram of the discrete weights, which almost every draw does.

use crate::rng::Rng;

/// Sampler of Zipf ranks `1..=n` with exponent `theta`.
#[derive(Debug, Clone)]
pub struct Zipf {
    n: u64,
    theta: f64,
    /// `H(1.5) - h(1)`: the top of the range a uniform draw is scaled into.
    h_top: f64,
    /// `H(n + 0.5)`: the bottom of that range.
    h_bottom: f64,
    /// Draws this close to their rank are accepted without evaluating `H`.
    squeeze: f64,
}

/// `ln(1 + x) / x`, continuous at 0.
fn log1p_over(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// `(e^x - 1) / x`, continuous at 0.
fn expm1_over(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

impl Zipf {
    /// A sampler over `1..=n` (`n` >= 1) with exponent `theta` (> 0; 1 is the classic
    /// Zipf law).
    pub fn new(n: u64, theta: f64) -> Result<Zipf, String> {
        if n == 0 {
            return Err("a Zipf distribution needs at least one element".into());
        }
        if !(theta > 0.0 && theta.is_finite()) {
            return Err(format!("Zipf exponent {theta} must be positive"));
        }
        let mut z = Zipf {
            n,
            theta,
            h_top: 0.0,
            h_bottom: 0.0,
            squeeze: 0.0,
        };
        z.h_top = z.big_h(1.5) - 1.0;
        z.h_bottom = z.big_h(n as f64 + 0.5);
        z.squeeze = 2.0 - z.big_h_inv(z.big_h(2.5) - z.h(2.0));
        Ok(z)
    }

    /// Number of ranks.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The hat: `x^-theta`.
    fn h(&self, x: f64) -> f64 {
        (-self.theta * x.ln()).exp()
    }

    /// An antiderivative of the hat: `(x^(1-theta) - 1) / (1 - theta)` (`ln x` at 1).
    fn big_h(&self, x: f64) -> f64 {
        let lx = x.ln();
        expm1_over((1.0 - self.theta) * lx) * lx
    }

    /// The inverse of [`Zipf::big_h`].
    fn big_h_inv(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.theta)).max(-1.0);
        (log1p_over(t) * y).exp()
    }

    /// One rank in `1..=n`.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_bottom + rng.unit() * (self.h_top - self.h_bottom);
            let x = self.big_h_inv(u);
            let k = ((x + 0.5).floor() as u64).clamp(1, self.n);
            let kf = k as f64;
            if kf - x <= self.squeeze || u >= self.big_h(kf + 0.5) - self.h(kf) {
                return k;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn harmonic(n: u64, theta: f64) -> f64 {
        (1..=n).map(|k| (k as f64).powf(-theta)).sum()
    }

    #[test]
    fn frequencies_follow_the_law() {
        for theta in [1.0, 0.8, 1.2] {
            let n = 1000;
            let z = Zipf::new(n, theta).unwrap();
            let mut rng = Rng::new(42, "zipf-test");
            let draws = 400_000;
            let mut counts = vec![0u64; n as usize + 1];
            for _ in 0..draws {
                let k = z.sample(&mut rng);
                assert!((1..=n).contains(&k));
                counts[k as usize] += 1;
            }
            let hn = harmonic(n, theta);
            for k in [1u64, 2, 3, 10, 100] {
                let expected = (k as f64).powf(-theta) / hn;
                let seen = counts[k as usize] as f64 / draws as f64;
                assert!(
                    (seen - expected).abs() < 0.05 * expected + 0.0005,
                    "theta {theta} rank {k}: {seen} vs {expected}"
                );
            }
            // The top tenth of the ranks takes H(100)/H(1000) of the draws.
            let top: u64 = counts[1..=100].iter().sum();
            let expected = harmonic(100, theta) / hn;
            let seen = top as f64 / draws as f64;
            assert!((seen - expected).abs() < 0.01, "theta {theta}: {seen} vs {expected}");
        }
    }

    #[test]
    fn one_element_and_huge_ranges() {
        let mut rng = Rng::new(1, "z");
        let one = Zipf::new(1, 1.0).unwrap();
        assert_eq!(one.sample(&mut rng), 1);
        let huge = Zipf::new(8_000_000, 1.0).unwrap();
        let mut top = 0;
        for _ in 0..10_000 {
            let k = huge.sample(&mut rng);
            assert!((1..=8_000_000).contains(&k));
            top += (k == 1) as u32;
        }
        // 1/H(8e6) is about 6%.
        assert!((450..750).contains(&top), "{top}");
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(Zipf::new(0, 1.0).is_err());
        assert!(Zipf::new(10, 0.0).is_err());
        assert!(Zipf::new(10, f64::NAN).is_err());
    }
}
