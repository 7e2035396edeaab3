//! A testbed of Linux network namespaces joined by veth pairs, for tests and studies.
//!
//! One builder (the crate-private `builder` module) builds every testbed from a
//! [`named::LabSpec`]: namespaces, veth pairs, addresses, MTU, offloads, congestion-control
//! routes, rate limits and the emulator's middle namespace, and removes them. Its three
//! front doors:
//!
//! * [`Testbed::pair`] builds two namespaces `<prefix>-a` and `<prefix>-b` (a prefix unique
//!   to the test process) joined by one veth pair (`wba` in a, `wbb` in b) with private
//!   test addresses, loopback up, and a chosen MTU. Knobs: [`Testbed::set_offload`]
//!   (`ethtool -K`), [`Testbed::rate_limit`] (a `tc tbf` token bucket on one side's
//!   egress), [`Testbed::set_congestion`], interface counters. Everything is torn down on
//!   drop, also when a test fails or panics; nothing is recorded on disk.
//! * [`emu::EmulatedPath`] puts a third namespace between a and b, where our own forwarder
//!   emulates delay, jitter, loss, duplication and reordering (this kernel has no `netem`).
//! * [`named`] builds *named, persistent* labs (`wbl-<name>-c`/`-s`, optionally `-m` with an
//!   emulator process) that outlive the process that built them: created, read back from
//!   the kernel, used and removed by name (`wirebench lab up|show|exec|down`, the studies'
//!   cells).
//!
//! Needs root and the `ip`, `tc` and `ethtool` commands. Traffic only ever flows between
//! the namespaces this crate created.

mod builder;
pub mod emu;
pub mod named;

use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::JoinHandle;

use thiserror::Error;

use builder::{Built, Layout};
use named::sys::{self as tools, BatchLine};
use named::{LabSpec, NamedError, OffloadSetting};

/// Address of side a (in namespace `<prefix>-a`).
pub const ADDR_A: &str = "10.203.0.1";
/// Address of side b.
pub const ADDR_B: &str = "10.203.0.2";
/// Interface name of side a.
pub const IF_A: &str = "wba";
/// Interface name of side b.
pub const IF_B: &str = "wbb";

/// Testbed failures.
#[derive(Debug, Error)]
pub enum LabError {
    /// A command could not be started.
    #[error("cannot run {cmd}: {source}")]
    Spawn {
        /// The command line.
        cmd: String,
        /// Why.
        source: std::io::Error,
    },
    /// A command exited non-zero.
    #[error("{cmd} failed: {stderr}")]
    Failed {
        /// The command line.
        cmd: String,
        /// Its stderr.
        stderr: String,
    },
    /// Output that could not be parsed.
    #[error("unexpected output from {cmd}: {detail}")]
    Parse {
        /// The command line.
        cmd: String,
        /// What was wrong.
        detail: String,
    },
    /// A system call failed (entering a namespace, packet sockets, threads).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// A link-emulator configuration out of range.
    #[error("invalid emulator config: {0}")]
    InvalidConfig(String),
    /// A link-emulator forwarder thread stopped on an error.
    #[error("forwarder {direction} failed: {detail}")]
    Forwarder {
        /// `a->b` or `b->a`.
        direction: String,
        /// The error.
        detail: String,
    },
    /// A thread started in a namespace panicked.
    #[error("thread in namespace {ns} panicked")]
    Panicked {
        /// The namespace.
        ns: String,
    },
    /// The builder refused a setting or could not build (see [`NamedError`]).
    #[error(transparent)]
    Build(Box<NamedError>),
}

impl From<NamedError> for LabError {
    fn from(e: NamedError) -> LabError {
        match e {
            NamedError::Lab(e) => e,
            NamedError::Command { cmd, stderr } => LabError::Failed { cmd, stderr },
            NamedError::Io { what, source } => LabError::Io { what, source },
            other => LabError::Build(Box::new(other)),
        }
    }
}

fn run(args: &[&str]) -> Result<Output, LabError> {
    let cmd = args.join(" ");
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|source| LabError::Spawn {
            cmd: cmd.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(LabError::Failed {
            cmd,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out)
}

/// Which end of the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Namespace `<prefix>-a`, interface `wba`, address [`ADDR_A`].
    A,
    /// Namespace `<prefix>-b`, interface `wbb`, address [`ADDR_B`].
    B,
}

/// Interface counters (from `/sys/class/net/<if>/statistics`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IfCounters {
    /// Bytes received, link-layer headers included.
    pub rx_bytes: u64,
    /// Packets (skbs) received.
    pub rx_packets: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets sent.
    pub tx_packets: u64,
}

/// Two namespaces joined by a veth pair, or a single namespace, built by the crate's one
/// builder as named labs are (with the test layout: its names, addresses, ARP and the
/// kernel's IPv6). Removed on drop, also when a panic unwinds through its owner; nothing is
/// recorded on disk.
#[derive(Debug)]
pub struct Testbed {
    layout: Layout,
    /// The namespaces, deleted when this drops.
    built: Built,
}

/// The subnet of the veth pair.
pub const SUBNET: &str = "10.203.0.0/24";

static SEQ: AtomicU32 = AtomicU32::new(0);

impl Testbed {
    /// A fresh, unique prefix for this process (`wbt<pid>x<n>`).
    pub fn unique_prefix() -> String {
        format!(
            "wbt{}x{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// Build the pair with the given MTU. On error, whatever was created is removed.
    pub fn pair(mtu: u32) -> Result<Testbed, LabError> {
        let spec = LabSpec {
            mtu,
            ..LabSpec::default()
        };
        Ok(Self::build(
            Layout::test(&Self::unique_prefix(), true),
            &spec,
        )?)
    }

    /// A single namespace (only side A), loopback up: an isolated `lo` whose counters see
    /// only this test's traffic.
    pub fn single() -> Result<Testbed, LabError> {
        Ok(Self::build(
            Layout::test(&Self::unique_prefix(), false),
            &LabSpec::default(),
        )?)
    }

    /// Builds `spec` as `layout` says (the spec's name is not used).
    pub(crate) fn build(layout: Layout, spec: &LabSpec) -> Result<Testbed, NamedError> {
        let built = builder::create(&layout, spec)?;
        Ok(Testbed { layout, built })
    }

    /// Names of this testbed's namespaces (side A, side B unless single, an
    /// [`emu::EmulatedPath`]'s middle one); all are deleted on drop.
    pub fn namespaces(&self) -> &[String] {
        self.built.namespaces()
    }

    /// The middle namespace's name (it exists only in an [`emu::EmulatedPath`]).
    pub(crate) fn middle_ns(&self) -> &str {
        &self.layout.middle_ns
    }

    /// Namespace name of a side.
    pub fn ns(&self, side: Side) -> String {
        match side {
            Side::A => self.layout.a.ns.clone(),
            Side::B => self.layout.b.ns.clone(),
        }
    }

    /// Address of a side.
    pub fn addr(side: Side) -> &'static str {
        match side {
            Side::A => ADDR_A,
            Side::B => ADDR_B,
        }
    }

    /// Interface name of a side.
    pub fn ifname(side: Side) -> &'static str {
        match side {
            Side::A => IF_A,
            Side::B => IF_B,
        }
    }

    /// A `Command` that runs `program` inside a side's namespace.
    pub fn command(&self, side: Side, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(side), program]);
        c
    }

    /// Run a command inside a namespace and return its stdout.
    pub fn exec(&self, side: Side, args: &[&str]) -> Result<String, LabError> {
        let ns = self.ns(side);
        let mut full = vec!["ip", "netns", "exec", ns.as_str()];
        full.extend_from_slice(args);
        let out = run(&full)?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Runs `f` on a new thread that entered a side's namespace and waits for its result.
    /// Sockets `f` creates belong to that namespace; the caller's namespace is untouched.
    pub fn run_in<T, F>(&self, side: Side, f: F) -> Result<T, LabError>
    where
        T: Send,
        F: FnOnce() -> T + Send,
    {
        let ns = self.ns(side);
        std::thread::scope(|s| {
            s.spawn(|| {
                wirebench_sys::netns::enter(&ns).map_err(|source| LabError::Io {
                    what: format!("entering namespace {ns}"),
                    source,
                })?;
                Ok(f())
            })
            .join()
            .map_err(|_| LabError::Panicked { ns: ns.clone() })?
        })
    }

    /// Starts `f` on a new thread that enters a side's namespace first; join the handle
    /// for its result (`Err` if entering failed; the join itself fails if `f` panicked).
    pub fn spawn_in<T, F>(&self, side: Side, f: F) -> JoinHandle<Result<T, LabError>>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let ns = self.ns(side);
        std::thread::spawn(move || {
            wirebench_sys::netns::enter(&ns).map_err(|source| LabError::Io {
                what: format!("entering namespace {ns}"),
                source,
            })?;
            Ok(f())
        })
    }

    /// MAC address of a side's veth (`aa:bb:cc:dd:ee:ff`).
    pub fn mac(&self, side: Side) -> Result<String, LabError> {
        let path = format!("/sys/class/net/{}/address", Self::ifname(side));
        let s = self.exec(side, &["cat", &path])?;
        let mac = s.trim();
        if mac.len() != 17 || mac.split(':').count() != 6 {
            return Err(LabError::Parse {
                cmd: format!("cat {path}"),
                detail: s.clone(),
            });
        }
        Ok(mac.to_string())
    }

    /// A protocol counter of a side's namespace from `/proc/net/snmp` or
    /// `/proc/net/netstat`, e.g. `("Icmp", "InEchos")`, `("Udp", "InDatagrams")`,
    /// `("TcpExt", "TCPOFOQueue")`.
    pub fn proto_counter(&self, side: Side, group: &str, name: &str) -> Result<u64, LabError> {
        let text = self.exec(side, &["cat", "/proc/net/snmp", "/proc/net/netstat"])?;
        parse_proto_counter(&text, group, name).ok_or_else(|| LabError::Parse {
            cmd: "cat /proc/net/snmp /proc/net/netstat".into(),
            detail: format!("no counter {group}:{name}"),
        })
    }

    /// Set a sysctl inside a side's namespace (e.g. `net.ipv4.tcp_congestion_control`).
    pub fn sysctl(&self, side: Side, key: &str, value: &str) -> Result<(), LabError> {
        self.exec(side, &["sysctl", "-q", "-w", &format!("{key}={value}")])
            .map(|_| ())
    }

    /// Make every TCP connection of this testbed use congestion control `algo`, without
    /// touching the host: the routes inside the namespaces carry `congctl <algo>` (the
    /// per-namespace sysctl is not writable from a child namespace on every kernel).
    pub fn set_congestion(&self, algo: &str) -> Result<(), LabError> {
        for end in self.layout.ends() {
            let mut lines: Vec<BatchLine> = ["127.0.0.0/8", "127.0.0.1"]
                .iter()
                .map(|dst| {
                    BatchLine::plain(format!(
                        "route replace local {dst} dev lo table local proto kernel scope host \
                         src 127.0.0.1 congctl {algo}"
                    ))
                })
                .collect();
            if self.layout.paired {
                lines.extend(builder::cc_route_lines(&self.layout, end, algo, false));
            }
            tools::ip_batch(Some(&end.ns), &[], &lines)?;
        }
        Ok(())
    }

    /// Runs `f` on a thread inside a side's namespace (for the builder's functions).
    fn in_side<T: Send>(
        &self,
        side: Side,
        f: impl FnOnce() -> Result<T, NamedError> + Send,
    ) -> Result<T, LabError> {
        Ok(tools::in_ns(&self.ns(side), f)?)
    }

    /// `ethtool -K <if> <feature> on|off` on a side's veth (a group such as `tso` with its
    /// sub-features, as named labs switch offloads).
    pub fn set_offload(&self, side: Side, feature: &str, on: bool) -> Result<(), LabError> {
        let asked = [OffloadSetting {
            name: feature.to_string(),
            on,
        }];
        self.in_side(side, || builder::set_offloads(Self::ifname(side), &asked))
    }

    /// Limit a side's egress to `rate_bits_per_s` with a `tc tbf` token bucket.
    /// tbf counts link-layer bytes (Ethernet header included) of every segment.
    pub fn rate_limit(&self, side: Side, rate_bits_per_s: u64) -> Result<(), LabError> {
        // Burst must hold at least one GSO super-packet; the queue ~ a few ms at the rate.
        let burst = (rate_bits_per_s / 8 / 250).max(256 * 1024);
        let limit = (rate_bits_per_s / 8 / 100).max(2 * burst);
        self.in_side(side, || {
            builder::set_rate(Self::ifname(side), rate_bits_per_s, burst, limit)
        })
    }

    /// Interface counters of a side's veth (or of `lo` with `ifname = "lo"`).
    pub fn counters(&self, side: Side, ifname: &str) -> Result<IfCounters, LabError> {
        let read = |f: &str| -> Result<u64, LabError> {
            let path = format!("/sys/class/net/{ifname}/statistics/{f}");
            let s = self.exec(side, &["cat", &path])?;
            s.trim().parse().map_err(|_| LabError::Parse {
                cmd: format!("cat {path}"),
                detail: s.clone(),
            })
        };
        Ok(IfCounters {
            rx_bytes: read("rx_bytes")?,
            rx_packets: read("rx_packets")?,
            tx_bytes: read("tx_bytes")?,
            tx_packets: read("tx_packets")?,
        })
    }
}

/// Finds `group: name` in the two-line (header, values) format of `/proc/net/snmp`.
fn parse_proto_counter(text: &str, group: &str, name: &str) -> Option<u64> {
    let prefix = format!("{group}:");
    let mut lines = text.lines().filter(|l| l.starts_with(&prefix));
    while let (Some(header), Some(values)) = (lines.next(), lines.next()) {
        let pos = header.split_whitespace().skip(1).position(|h| h == name);
        if let Some(pos) = pos {
            return values.split_whitespace().skip(1).nth(pos)?.parse().ok();
        }
    }
    None
}

/// True if this process can build namespaces (root and `ip` present).
pub fn available() -> bool {
    Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
        && std::fs::metadata("/proc/self/ns/net").is_ok()
        && is_root()
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proto_counter_parsing() {
        let text = "Ip: Forwarding DefaultTTL\nIp: 2 64\nIcmp: InMsgs InEchos\nIcmp: 7 5\n\
                    TcpExt: SyncookiesSent TCPOFOQueue\nTcpExt: 0 12\n";
        assert_eq!(parse_proto_counter(text, "Icmp", "InEchos"), Some(5));
        assert_eq!(parse_proto_counter(text, "TcpExt", "TCPOFOQueue"), Some(12));
        assert_eq!(parse_proto_counter(text, "Ip", "DefaultTTL"), Some(64));
        assert_eq!(parse_proto_counter(text, "Icmp", "Nope"), None);
        assert_eq!(parse_proto_counter(text, "Udp", "InDatagrams"), None);
    }
}
