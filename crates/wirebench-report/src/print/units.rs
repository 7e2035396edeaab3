//! Human units: byte counts in binary multiples (KiB, MiB, GiB: 1024^n, as the command line's
//! sizes), rates in decimal bits or bytes per second (kbit/s = 10^3 bit/s, as iperf3 and
//! netperf print them), in the unit that fits or in one the user forces (`-f`).

use std::str::FromStr;

/// The unit rates are printed in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RateUnit {
    /// The bit unit that fits the value (kbit/s, Mbit/s, Gbit/s, Tbit/s).
    #[default]
    AutoBits,
    /// The byte unit that fits the value (kB/s, MB/s, GB/s).
    AutoBytes,
    /// 10^3 bit/s.
    Kbit,
    /// 10^6 bit/s.
    Mbit,
    /// 10^9 bit/s.
    Gbit,
    /// 10^3 bytes/s.
    KByte,
    /// 10^6 bytes/s.
    MByte,
    /// 10^9 bytes/s.
    GByte,
}

/// A `-f` letter that is not one of `a A k m g K M G`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "rate unit '{0}' must be one of k m g (bits), K M G (bytes), a (auto bits), A (auto bytes)"
)]
pub struct UnknownRateUnit(pub String);

impl FromStr for RateUnit {
    type Err = UnknownRateUnit;

    /// iperf3's `-f` letters: `k m g` bits, `K M G` bytes; `a`/`A` chooses.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "a" => RateUnit::AutoBits,
            "A" => RateUnit::AutoBytes,
            "k" => RateUnit::Kbit,
            "m" => RateUnit::Mbit,
            "g" => RateUnit::Gbit,
            "K" => RateUnit::KByte,
            "M" => RateUnit::MByte,
            "G" => RateUnit::GByte,
            _ => return Err(UnknownRateUnit(s.to_string())),
        })
    }
}

impl RateUnit {
    /// The divisor and label for `bps` bits per second.
    fn scale(self, bps: f64) -> (f64, &'static str) {
        let bits = [
            (1e12, "Tbit/s"),
            (1e9, "Gbit/s"),
            (1e6, "Mbit/s"),
            (1e3, "kbit/s"),
        ];
        let bytes = [(8e9, "GB/s"), (8e6, "MB/s"), (8e3, "kB/s")];
        match self {
            RateUnit::AutoBits => bits
                .into_iter()
                .find(|(d, _)| bps.abs() >= *d)
                .unwrap_or((1.0, "bit/s")),
            RateUnit::AutoBytes => bytes
                .into_iter()
                .find(|(d, _)| bps.abs() >= *d)
                .unwrap_or((8.0, "B/s")),
            RateUnit::Kbit => (1e3, "kbit/s"),
            RateUnit::Mbit => (1e6, "Mbit/s"),
            RateUnit::Gbit => (1e9, "Gbit/s"),
            RateUnit::KByte => (8e3, "kB/s"),
            RateUnit::MByte => (8e6, "MB/s"),
            RateUnit::GByte => (8e9, "GB/s"),
        }
    }

    /// The fixed unit this choice gives for values around `bps` (itself when not automatic),
    /// so that a table can print every row in one unit.
    pub fn fixed(self, bps: f64) -> RateUnit {
        match self {
            RateUnit::AutoBits if bps >= 1e9 => RateUnit::Gbit,
            RateUnit::AutoBits if bps >= 1e6 => RateUnit::Mbit,
            RateUnit::AutoBits => RateUnit::Kbit,
            RateUnit::AutoBytes if bps >= 8e9 => RateUnit::GByte,
            RateUnit::AutoBytes if bps >= 8e6 => RateUnit::MByte,
            RateUnit::AutoBytes => RateUnit::KByte,
            other => other,
        }
    }

    /// `bps` as `12.35 Gbit/s` (4 significant digits at most, 2 decimals at least below 100).
    pub fn rate(self, bps: f64) -> String {
        let (d, unit) = self.scale(bps);
        format!("{} {unit}", number(bps / d))
    }

    /// The unit label this choice gives for a value of `bps` (for column headers).
    pub fn label(self, bps: f64) -> &'static str {
        self.scale(bps).1
    }

    /// `bps` in the unit [`RateUnit::label`] names, without the label.
    pub fn value(self, bps: f64) -> String {
        number(bps / self.scale(bps).0)
    }
}

/// A number with about 4 significant digits: `1234`, `123.4`, `12.35`, `1.235`, `0.123`.
pub fn number(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 10.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// `bytes` in the binary unit that fits: `512 B`, `1.50 KiB`, `12.3 MiB`, `1.25 GiB`.
pub fn bytes(n: u64) -> String {
    bytes_f(n as f64)
}

/// [`bytes`] for a size that may be fractional (an interpolated crossing): below 1 KiB it is
/// rounded to whole bytes.
pub fn bytes_f(b: f64) -> String {
    const UNITS: [(f64, &str); 4] = [
        (1_099_511_627_776.0, "TiB"),
        (1_073_741_824.0, "GiB"),
        (1_048_576.0, "MiB"),
        (1024.0, "KiB"),
    ];
    match UNITS.iter().find(|(d, _)| b >= *d) {
        Some((d, unit)) => format!("{} {unit}", number(b / d)),
        None => format!("{b:.0} B"),
    }
}

/// A size as the command line writes it: `1M`, `128K`, `1400` (exact multiples only).
pub fn size(n: u64) -> String {
    for (d, s) in [(1u64 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")] {
        if n >= d && n.is_multiple_of(d) {
            return format!("{}{s}", n / d);
        }
    }
    n.to_string()
}

/// `ns` as a time in the unit that fits: `850 ns`, `12.3 µs`, `2.275 ms`, `1.500 s`.
pub fn duration_ns(ns: f64) -> String {
    let a = ns.abs();
    if a >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if a >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if a >= 1e3 {
        format!("{} µs", number(ns / 1e3))
    } else {
        format!("{ns:.0} ns")
    }
}
