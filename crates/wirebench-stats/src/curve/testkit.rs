//! Synthetic curves with known answers and a seeded noise source, for the curve tests.

use super::ThroughputPoint;

/// t0 of the reference Hockney curve: 20 µs, in seconds.
pub const T0_S: f64 = 20e-6;
/// r_inf of the reference Hockney curve: 10 Gbit/s.
pub const R_BPS: f64 = 10e9;
/// n½ of the reference curve: t0 · r_inf, in bytes (25 000 B).
pub const N_HALF_BYTES: f64 = T0_S * R_BPS / 8.0;

/// The Hockney throughput at `size_bytes`: `8n / (t0 + 8n / r)` bits per second.
pub fn hockney_bps(size_bytes: u64, t0_s: f64, r_bps: f64) -> f64 {
    let bits = 8.0 * size_bytes as f64;
    bits / (t0_s + bits / r_bps)
}

/// The reference curve sampled at `sizes`.
pub fn hockney_curve(sizes: &[u64]) -> Vec<ThroughputPoint> {
    sizes
        .iter()
        .map(|&n| ThroughputPoint::new(n, hockney_bps(n, T0_S, R_BPS)))
        .collect()
}

/// SplitMix64: a tiny seeded generator, enough for reproducible jitter.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    pub fn gauss(&mut self) -> f64 {
        let (u1, u2) = (self.unit(), self.unit());
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// `x` with multiplicative gaussian jitter of relative standard deviation `rel`.
    pub fn jitter(&mut self, x: f64, rel: f64) -> f64 {
        (x * (1.0 + rel * self.gauss())).max(0.0)
    }
}
