//! The analytical write amplification of greedy cleaning under uniform random
//! overwrites: the lab's yardstick for `uniform`, and the data-move half of the model
//! by which the default policy sizes its checkpoint batches (`gc::batching`):
//! `WA = a / (a + W0(-a e^-a))` with `a = 1/u` for a volume whose live data fill a
//! share `u` of the space (P. Desnoyers, "Analytic modeling of SSD write performance",
//! SYSTOR 2012). About 12.1 at u = 0.958. It counts data moves only: no nodes, no
//! metadata, and all free space usable by the cleaner.

/// The principal branch of Lambert's W on `[-1/e, 0]`: the `w >= -1` with
/// `w e^w = x`. `None` outside that range.
pub fn lambert_w0(x: f64) -> Option<f64> {
    let branch = -(-1.0f64).exp();
    if !(branch..=0.0).contains(&x) {
        return None;
    }
    if x == 0.0 {
        return Some(0.0);
    }
    // Series at the branch point for a start, then Halley's iteration.
    let p = (2.0 * (std::f64::consts::E * x + 1.0)).max(0.0).sqrt();
    let mut w = -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p * p * p;
    for _ in 0..50 {
        let ew = w.exp();
        let f = w * ew - x;
        if w <= -1.0 || f == 0.0 {
            break;
        }
        let step = f / (ew * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0));
        let next = (w - step).max(-1.0);
        if (next - w).abs() <= 1e-15 * w.abs().max(1e-300) {
            w = next;
            break;
        }
        w = next;
    }
    Some(w)
}

/// Greedy's write amplification at utilisation `u` (0 < u < 1); `None` outside.
pub fn greedy_limit(u: f64) -> Option<f64> {
    if !(u > 0.0 && u < 1.0) {
        return None;
    }
    let a = 1.0 / u;
    let w = lambert_w0(-a * (-a).exp())?;
    let d = a + w;
    (d > 0.0).then(|| a / d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w0_inverts_x_e_to_the_x() {
        for w in [-1.0, -0.999, -0.9, -0.5, -0.1, 0.0] {
            let x = w * f64::exp(w);
            let got = lambert_w0(x).unwrap();
            assert!((got - w).abs() < 1e-6, "{w}: {got}");
        }
        assert!(lambert_w0(-0.5).is_none());
        assert!(lambert_w0(0.1).is_none());
    }

    #[test]
    fn greedy_limit_matches_the_issue_and_grows_with_u() {
        let wa = greedy_limit(0.958).unwrap();
        assert!((wa - 12.1).abs() < 0.15, "{wa}");
        // Half full: a quarter more than the user writes.
        let half = greedy_limit(0.5).unwrap();
        assert!((half - 1.255).abs() < 0.001, "{half}");
        let mut last = 1.0;
        for u in [0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99] {
            let wa = greedy_limit(u).unwrap();
            assert!(wa > last, "{u}: {wa}");
            last = wa;
        }
        assert!(greedy_limit(1.0).is_none() && greedy_limit(0.0).is_none());
    }
}
