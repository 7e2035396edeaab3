//! What a named lab should look like ([`LabSpec`]) and the parsers for its settings as a
//! user writes them (`100mbit`, `5ms`, `1%`, `tx-checksum=off,tso=off`,
//! `client:net.ipv4.tcp_rmem=4096 131072 6291456`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::NamedError;
use crate::emu::EmuConfig;

/// Longest lab name (namespace names are `wbl-<name>-c`, interface names are fixed).
pub const MAX_NAME_LEN: usize = 12;

/// Which endpoint namespaces a setting applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sides {
    /// The client namespace only.
    Client,
    /// The server namespace only.
    Server,
    /// Both endpoint namespaces.
    Both,
}

impl Sides {
    /// Whether the setting applies to the client (`true`) or server (`false`) side.
    pub fn includes(self, client: bool) -> bool {
        match self {
            Sides::Both => true,
            Sides::Client => client,
            Sides::Server => !client,
        }
    }
}

/// One offload switch, applied with `ethtool -K` to the veth end of **both** endpoints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffloadSetting {
    /// The name as the user gave it: an alias (`tx-checksum`, `rx-checksum`, `sg`, `tso`,
    /// `gso`, `gro`, `lro`) or any feature name `ethtool -k` lists (`tx-udp-segmentation`).
    pub name: String,
    /// Wanted state.
    pub on: bool,
}

impl OffloadSetting {
    /// The `ethtool -K` argument and the `ethtool -k` line this setting is read back from.
    pub fn ethtool_names(&self) -> (&str, &str) {
        match self.name.as_str() {
            "tx-checksum" | "tx" | "tx-checksumming" => ("tx", "tx-checksumming"),
            "rx-checksum" | "rx" | "rx-checksumming" => ("rx", "rx-checksumming"),
            "sg" | "scatter-gather" => ("sg", "scatter-gather"),
            "tso" | "tcp-segmentation-offload" => ("tso", "tcp-segmentation-offload"),
            "gso" | "generic-segmentation-offload" => ("gso", "generic-segmentation-offload"),
            "gro" | "generic-receive-offload" => ("gro", "generic-receive-offload"),
            "lro" | "large-receive-offload" => ("lro", "large-receive-offload"),
            other => (other, other),
        }
    }

    /// `name=on|off`.
    pub fn to_arg(&self) -> String {
        format!("{}={}", self.name, on_off(self.on))
    }
}

/// `"on"` or `"off"`.
pub fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

/// A `net.*` sysctl written inside the lab's namespaces (`/proc/sys/...` of that
/// namespace; the host's values are untouched).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SysctlSetting {
    /// Where it is written.
    pub sides: Sides,
    /// Dotted key, e.g. `net.ipv4.tcp_rmem`.
    pub key: String,
    /// Value as written (whitespace-separated fields compare field by field on read-back).
    pub value: String,
}

impl SysctlSetting {
    /// The path under `/proc/sys`.
    pub fn proc_path(&self) -> String {
        format!("/proc/sys/{}", self.key.replace('.', "/"))
    }

    /// `[client:|server:]key=value`.
    pub fn to_arg(&self) -> String {
        let side = match self.sides {
            Sides::Both => "",
            Sides::Client => "client:",
            Sides::Server => "server:",
        };
        format!("{side}{}={}", self.key, self.value)
    }
}

/// Link impairments, emulated in the middle namespace by a background emulator process
/// (the kernel has no `netem`). They apply to **each direction** independently: a delay of
/// 5 ms gives a round-trip time of 10 ms, a loss of 1 % drops 1 % of the frames of each
/// direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Impairments {
    /// Added one-way delay.
    pub delay_ns: u64,
    /// Uniform delay variation, `delay ± jitter` (never reorders).
    pub jitter_ns: u64,
    /// Frames dropped, percent.
    pub loss_pct: f64,
    /// Frames held back by `reorder_gap_ns` so that later ones overtake them, percent.
    pub reorder_pct: f64,
    /// Frames sent twice, percent.
    pub duplicate_pct: f64,
    /// Hold-back of a reordered frame.
    pub reorder_gap_ns: u64,
    /// Seed of the emulator's random draws.
    pub seed: u64,
}

impl Default for Impairments {
    fn default() -> Self {
        let d = EmuConfig::default();
        Impairments {
            delay_ns: 0,
            jitter_ns: 0,
            loss_pct: 0.0,
            reorder_pct: 0.0,
            duplicate_pct: 0.0,
            reorder_gap_ns: d.reorder_gap.as_nanos() as u64,
            seed: d.seed,
        }
    }
}

impl Impairments {
    /// True if any impairment is set (the lab then needs the emulator).
    pub fn is_active(&self) -> bool {
        self.delay_ns > 0
            || self.jitter_ns > 0
            || self.loss_pct > 0.0
            || self.reorder_pct > 0.0
            || self.duplicate_pct > 0.0
    }

    /// The emulator configuration of one direction.
    pub fn emu_config(&self) -> EmuConfig {
        EmuConfig {
            delay: Duration::from_nanos(self.delay_ns),
            jitter: Duration::from_nanos(self.jitter_ns),
            loss: self.loss_pct / 100.0,
            dup: self.duplicate_pct / 100.0,
            reorder: self.reorder_pct / 100.0,
            reorder_gap: Duration::from_nanos(self.reorder_gap_ns),
            seed: self.seed,
            ..EmuConfig::default()
        }
    }
}

/// Everything a named lab is built from. `LabSpec::new(name)` is a plain veth pair with
/// MTU 1500 and the kernel's defaults otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LabSpec {
    /// Lab name: 1 to [`MAX_NAME_LEN`] characters of `[a-z0-9-]`, starting with a letter or
    /// digit and not ending with `-`.
    pub name: String,
    /// MTU of every veth end of the lab.
    pub mtu: u32,
    /// Offload switches, applied to both endpoints' veth ends in this order.
    pub offloads: Vec<OffloadSetting>,
    /// Rate limit (a `tc tbf` token bucket counting link-layer bytes) on the client's veth
    /// egress, i.e. the client→server direction.
    pub rate_bps: Option<u64>,
    /// Also limit the server→client direction (a second tbf on the server's veth egress).
    pub rate_both: bool,
    /// Impairments (through the emulator when any is set).
    pub impair: Impairments,
    /// Route the link through the emulator even without impairments (a transparent
    /// forwarder, e.g. to count frames).
    pub emulate: bool,
    /// TCP congestion control of the lab's connections (`congctl` on the lab's routes in
    /// both endpoints, plus the namespace default where the kernel allows it).
    pub cc: Option<String>,
    /// Give the endpoints IPv6 ULA addresses ([`super::CLIENT_IPV6`], [`super::SERVER_IPV6`]);
    /// without it IPv6 is disabled in the lab's namespaces (no background ND/MLD frames).
    pub ipv6: bool,
    /// `net.*` sysctls written in the endpoint namespaces.
    pub sysctls: Vec<SysctlSetting>,
    /// RPS CPU mask (hex, as in `/sys/class/net/*/queues/rx-0/rps_cpus`) of both endpoints.
    pub rps_cpus: Option<String>,
    /// RPS CPU mask of the server's veth end only (overrides `rps_cpus` there): receive
    /// processing of each "host" on its own CPU, as on two machines.
    pub server_rps_cpus: Option<String>,
    /// XPS CPU mask (hex, `queues/tx-0/xps_cpus`) of both endpoints.
    pub xps_cpus: Option<String>,
}

impl Default for LabSpec {
    fn default() -> Self {
        LabSpec {
            name: String::new(),
            mtu: 1500,
            offloads: Vec::new(),
            rate_bps: None,
            rate_both: false,
            impair: Impairments::default(),
            emulate: false,
            cc: None,
            ipv6: false,
            sysctls: Vec::new(),
            rps_cpus: None,
            server_rps_cpus: None,
            xps_cpus: None,
        }
    }
}

/// Offloads that must stay off on the endpoints when frames cross the emulator (see the
/// [`crate::emu`] docs): transmit checksum offload leaves partial checksums nobody
/// completes, TSO/GSO hand the forwarder super-frames larger than the MTU.
const EMU_FORBIDDEN_ON: &[&str] = &[
    "tx",
    "tx-checksum-ip-generic",
    "tx-checksum-ipv4",
    "tx-checksum-ipv6",
    "tso",
    "tx-tcp-segmentation",
    "tx-tcp6-segmentation",
    "gso",
    "tx-generic-segmentation",
];

impl LabSpec {
    /// The RPS mask of an endpoint's veth end.
    pub fn rps_of(&self, server: bool) -> Option<&String> {
        if server {
            self.server_rps_cpus.as_ref().or(self.rps_cpus.as_ref())
        } else {
            self.rps_cpus.as_ref()
        }
    }

    /// A plain veth pair named `name`, MTU 1500.
    pub fn new(name: &str) -> Self {
        LabSpec {
            name: name.to_string(),
            ..LabSpec::default()
        }
    }

    /// True if the lab runs through the emulator's middle namespace.
    pub fn uses_emulator(&self) -> bool {
        self.emulate || self.impair.is_active()
    }

    /// Checks everything that can be checked without the kernel. Values only the kernel
    /// can judge (an MTU above the device maximum, an offload the device cannot change, a
    /// congestion control that is not available) are refused by [`super::LabManager::up`].
    pub fn validate(&self) -> Result<(), NamedError> {
        validate_name(&self.name)?;
        self.validate_settings()
    }

    /// [`validate`](Self::validate) without the name (which only a named lab has).
    pub(crate) fn validate_settings(&self) -> Result<(), NamedError> {
        if self.mtu == 0 {
            return Err(invalid("mtu", "0", "must be positive"));
        }
        for o in &self.offloads {
            if !is_word(&o.name, |c| c == '-' || c == '_') {
                return Err(invalid("offload", &o.to_arg(), "not a feature name"));
            }
            if self.uses_emulator() && o.on && EMU_FORBIDDEN_ON.contains(&o.ethtool_names().0) {
                return Err(invalid(
                    "offload",
                    &o.to_arg(),
                    "must stay off when the link runs through the emulator \
                     (delay/jitter/loss/reorder/duplicate)",
                ));
            }
        }
        if self.rate_bps == Some(0) {
            return Err(invalid("rate", "0", "must be positive"));
        }
        if self.rate_both && self.rate_bps.is_none() {
            return Err(invalid("rate-both", "true", "needs a rate"));
        }
        let i = &self.impair;
        for (flag, pct) in [
            ("loss", i.loss_pct),
            ("reorder", i.reorder_pct),
            ("duplicate", i.duplicate_pct),
        ] {
            if !(0.0..=100.0).contains(&pct) {
                return Err(invalid(flag, &format!("{pct}%"), "must be in [0, 100] %"));
            }
        }
        i.emu_config()
            .validate()
            .map_err(|e| invalid("impairment", "", &e.to_string()))?;
        if let Some(cc) = &self.cc {
            if !is_word(cc, |c| c == '_' || c == '-') {
                return Err(invalid("cc", cc, "not an algorithm name"));
            }
        }
        for s in &self.sysctls {
            validate_sysctl(s)?;
        }
        for (flag, mask) in [
            ("rps", &self.rps_cpus),
            ("server-rps", &self.server_rps_cpus),
            ("xps", &self.xps_cpus),
        ] {
            if let Some(m) = mask {
                if m.is_empty() || !m.chars().all(|c| c.is_ascii_hexdigit() || c == ',') {
                    return Err(invalid(flag, m, "not a hex CPU mask"));
                }
            }
        }
        Ok(())
    }
}

fn invalid(setting: &str, value: &str, reason: &str) -> NamedError {
    NamedError::InvalidSetting {
        setting: setting.to_string(),
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

fn is_word(s: &str, extra: impl Fn(char) -> bool) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || extra(c))
}

fn validate_sysctl(s: &SysctlSetting) -> Result<(), NamedError> {
    let arg = s.to_arg();
    if !s.key.starts_with("net.") {
        return Err(invalid(
            "sysctl",
            &arg,
            "only net.* keys are per namespace (others would change the host)",
        ));
    }
    let key_ok = s.key.split('.').all(|part| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    });
    if !key_ok {
        return Err(invalid("sysctl", &arg, "not a sysctl key"));
    }
    if s.value.trim().is_empty() || s.value.contains(['\n', '\0']) {
        return Err(invalid("sysctl", &arg, "empty or multi-line value"));
    }
    Ok(())
}

/// Checks a lab name (see [`LabSpec::name`]).
pub fn validate_name(name: &str) -> Result<(), NamedError> {
    let reason = if name.is_empty() {
        Some("empty")
    } else if name.len() > MAX_NAME_LEN {
        Some("longer than 12 characters")
    } else if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        Some("only a-z, 0-9 and - are allowed")
    } else if name.starts_with('-') || name.ends_with('-') {
        Some("must not start or end with -")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(NamedError::InvalidName {
            name: name.to_string(),
            reason: reason.to_string(),
        }),
        None => Ok(()),
    }
}

/// Splits `s` into its number and its (lower-cased) unit suffix.
fn split_unit(s: &str) -> (&str, String) {
    let s = s.trim();
    let at = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (&s[..at], s[at..].trim().to_ascii_lowercase())
}

fn number(flag: &str, value: &str, num: &str) -> Result<f64, NamedError> {
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(invalid(flag, value, "not a non-negative number")),
    }
}

/// A rate in bits per second: `100mbit`, `100m`, `2.5gbit`, `500k`, `1000000` (plain bits
/// per second). Prefixes are decimal (as in `tc`). Byte units (`mbps`, `MB`) are refused
/// because `tc` reads `mbps` as megabytes.
pub fn parse_rate_bps(s: &str) -> Result<u64, NamedError> {
    let (num, unit) = split_unit(s);
    let v = number("rate", s, num)?;
    let mult = match unit.as_str() {
        "" | "bit" => 1e0,
        "k" | "kbit" => 1e3,
        "m" | "mbit" => 1e6,
        "g" | "gbit" => 1e9,
        "t" | "tbit" => 1e12,
        _ => {
            return Err(invalid(
                "rate",
                s,
                "unit must be one of bit, kbit, mbit, gbit, tbit (k, m, g, t)",
            ))
        }
    };
    let bps = (v * mult).round();
    if !(1.0..9.0e18).contains(&bps) {
        return Err(invalid("rate", s, "out of range"));
    }
    Ok(bps as u64)
}

/// A duration in nanoseconds for `flag`: `5ms`, `250us`, `1.5s`, `800ns`, `0`.
pub fn parse_duration_ns(flag: &str, s: &str) -> Result<u64, NamedError> {
    let (num, unit) = split_unit(s);
    let v = number(flag, s, num)?;
    let mult = match unit.as_str() {
        "ns" => 1e0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" if v == 0.0 => 0.0,
        _ => return Err(invalid(flag, s, "needs a unit: ns, us, ms or s")),
    };
    let ns = (v * mult).round();
    if ns > 3.6e12 {
        return Err(invalid(flag, s, "longer than an hour"));
    }
    Ok(ns as u64)
}

/// A percentage for `flag`: `1%`, `0.5`, `100%`.
pub fn parse_pct(flag: &str, s: &str) -> Result<f64, NamedError> {
    let t = s.trim();
    let num = t.strip_suffix('%').unwrap_or(t).trim();
    let v = number(flag, s, num)?;
    if v > 100.0 {
        return Err(invalid(flag, s, "must be in [0, 100] %"));
    }
    Ok(v)
}

/// A comma-separated list of `feature=on|off`, e.g. `tx-checksum=off,tso=off`.
pub fn parse_offloads(s: &str) -> Result<Vec<OffloadSetting>, NamedError> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some((name, val)) = item.split_once('=') else {
            return Err(invalid("offload", item, "expected feature=on|off"));
        };
        let on = match val.trim() {
            "on" => true,
            "off" => false,
            _ => return Err(invalid("offload", item, "value must be on or off")),
        };
        out.push(OffloadSetting {
            name: name.trim().to_string(),
            on,
        });
    }
    if out.is_empty() {
        return Err(invalid("offload", s, "empty list"));
    }
    Ok(out)
}

/// `[client:|server:]net.key=value`, e.g. `server:net.ipv4.tcp_rmem=4096 131072 6291456`.
pub fn parse_sysctl(s: &str) -> Result<SysctlSetting, NamedError> {
    let (sides, rest) = if let Some(r) = s.strip_prefix("client:") {
        (Sides::Client, r)
    } else if let Some(r) = s.strip_prefix("server:") {
        (Sides::Server, r)
    } else {
        (Sides::Both, s)
    };
    let Some((key, value)) = rest.split_once('=') else {
        return Err(invalid("sysctl", s, "expected key=value"));
    };
    let setting = SysctlSetting {
        sides,
        key: key.trim().to_string(),
        value: value.trim().to_string(),
    };
    validate_sysctl(&setting)?;
    Ok(setting)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["a", "lab1", "x-y", "abcdefghijkl"] {
            assert!(validate_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "A",
            "a_b",
            "a.b",
            "abcdefghijklm",
            "a/b",
            "ä",
        ] {
            assert!(
                matches!(validate_name(bad), Err(NamedError::InvalidName { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate_bps("100mbit").unwrap(), 100_000_000);
        assert_eq!(parse_rate_bps("100M").unwrap(), 100_000_000);
        assert_eq!(parse_rate_bps("2.5gbit").unwrap(), 2_500_000_000);
        assert_eq!(parse_rate_bps("500k").unwrap(), 500_000);
        assert_eq!(parse_rate_bps("1234").unwrap(), 1234);
        for bad in ["", "0", "10mbps", "-5m", "fast", "1e3m", "5MB"] {
            let e = parse_rate_bps(bad).unwrap_err();
            assert!(e.to_string().contains("--rate"), "{bad}: {e}");
        }
    }

    #[test]
    fn durations_and_percentages() {
        assert_eq!(parse_duration_ns("delay", "5ms").unwrap(), 5_000_000);
        assert_eq!(parse_duration_ns("delay", "1.5ms").unwrap(), 1_500_000);
        assert_eq!(parse_duration_ns("delay", "250us").unwrap(), 250_000);
        assert_eq!(parse_duration_ns("delay", "2s").unwrap(), 2_000_000_000);
        assert_eq!(parse_duration_ns("delay", "0").unwrap(), 0);
        for bad in ["5", "5 parsecs", "-1ms", "2h"] {
            assert!(parse_duration_ns("jitter", bad).is_err(), "{bad}");
        }
        assert_eq!(parse_pct("loss", "1%").unwrap(), 1.0);
        assert_eq!(parse_pct("loss", "0.5").unwrap(), 0.5);
        assert!(parse_pct("loss", "101%").is_err());
        assert!(parse_pct("loss", "x").is_err());
    }

    #[test]
    fn offload_lists() {
        let l = parse_offloads("tx-checksum=off, tso=on,gro=off").unwrap();
        assert_eq!(l.len(), 3);
        assert_eq!(l[0].ethtool_names(), ("tx", "tx-checksumming"));
        assert!(l[1].on);
        assert_eq!(l[2].to_arg(), "gro=off");
        for bad in ["tso", "tso=maybe", "", ","] {
            assert!(parse_offloads(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sysctls() {
        let s = parse_sysctl("server:net.ipv4.tcp_rmem=4096 131072 6291456").unwrap();
        assert_eq!(s.sides, Sides::Server);
        assert_eq!(s.proc_path(), "/proc/sys/net/ipv4/tcp_rmem");
        assert_eq!(s.value, "4096 131072 6291456");
        assert_eq!(
            parse_sysctl("net.core.somaxconn=64").unwrap().sides,
            Sides::Both
        );
        for bad in [
            "kernel.pid_max=5",
            "net.ipv4.tcp_rmem",
            "net..x=1",
            "net/x=1",
        ] {
            assert!(parse_sysctl(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn spec_checks() {
        let mut s = LabSpec::new("t1");
        assert!(s.validate().is_ok());
        s.offloads = parse_offloads("tso=on").unwrap();
        assert!(s.validate().is_ok());
        s.impair.delay_ns = 1_000_000;
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("tso=on") && e.contains("emulator"), "{e}");
        s.offloads.clear();
        s.impair.loss_pct = 150.0;
        assert!(s.validate().unwrap_err().to_string().contains("--loss"));
        let mut s = LabSpec::new("t1");
        s.rate_both = true;
        assert!(s.validate().is_err());
        s.rate_bps = Some(1000);
        assert!(s.validate().is_ok());
        s.cc = Some("Cubic!".into());
        assert!(s.validate().unwrap_err().to_string().contains("--cc"));
    }
}
