//! The emulated path (three namespaces, two veth pairs) and the link (the two forwarders
//! attached to interfaces of a middle namespace).

use std::io;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use wirebench_sys::packet::{self, PacketSocket};

use super::forward::{lock, Forwarder, SOCK_BUF};
use super::impair::{Direction, EmuConfig, EmuCounters, PathCounters};
use super::{IF_MA, IF_MB};
use crate::builder::Layout;
use crate::named::{LabSpec, OffloadSetting};
use crate::{LabError, Side, Testbed};

/// How an [`EmulatedPath`] is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathOptions {
    /// MTU of all four veth ends.
    pub mtu: u32,
    /// Give A and B permanent neighbour entries for each other, so no ARP crosses the
    /// forwarder (default `true`).
    pub static_neighbors: bool,
    /// Disable IPv6 in all three namespaces, so no ND/MLD/DAD frames cross the forwarder
    /// (default `true`).
    pub disable_ipv6: bool,
}

impl Default for PathOptions {
    fn default() -> Self {
        PathOptions {
            mtu: 1500,
            static_neighbors: true,
            disable_ipv6: true,
        }
    }
}

/// Namespaces A and B joined through namespace M, where two forwarder threads emulate the
/// link; built by the crate's one builder as a lab with the emulator is (the test layout,
/// with the lab's static neighbours and IPv6 off by default). Stops the forwarders and
/// deletes all three namespaces on drop.
#[derive(Debug)]
pub struct EmulatedPath {
    // Field order is drop order: threads first, then the namespaces.
    link: EmuLink,
    testbed: Testbed,
}

impl EmulatedPath {
    /// Builds the path with `mtu` and default [`PathOptions`] otherwise.
    pub fn new(mtu: u32, a_to_b: EmuConfig, b_to_a: EmuConfig) -> Result<EmulatedPath, LabError> {
        Self::with_options(
            PathOptions {
                mtu,
                ..PathOptions::default()
            },
            a_to_b,
            b_to_a,
        )
    }

    /// Builds the path. On error, whatever was created is removed.
    pub fn with_options(
        opts: PathOptions,
        a_to_b: EmuConfig,
        b_to_a: EmuConfig,
    ) -> Result<EmulatedPath, LabError> {
        a_to_b.validate()?;
        b_to_a.validate()?;
        let mut layout = Layout::test(&Testbed::unique_prefix(), true);
        layout.static_neighbors = opts.static_neighbors;
        layout.kernel_ipv6 = !opts.disable_ipv6;
        // The emulator's offloads (TSO, GSO, transmit checksum off on the endpoints, all of
        // them and GRO on the middle ends), and GRO off on the endpoints too, so that each
        // frame an endpoint counts is one the forwarder counted.
        let spec = LabSpec {
            mtu: opts.mtu,
            emulate: true,
            offloads: vec![OffloadSetting {
                name: "gro".into(),
                on: false,
            }],
            ..LabSpec::default()
        };
        let testbed = Testbed::build(layout, &spec)?;
        let link = EmuLink::attach(testbed.middle_ns(), IF_MA, IF_MB, a_to_b, b_to_a)?;
        Ok(EmulatedPath { link, testbed })
    }

    /// The underlying testbed of sides A and B (namespaces, addresses, `exec`, interface
    /// and protocol counters, offloads, rate limits). Its interfaces face the middle
    /// namespace instead of each other.
    pub fn testbed(&self) -> &Testbed {
        &self.testbed
    }

    /// Namespace name of side A or B.
    pub fn ns(&self, side: Side) -> String {
        self.testbed.ns(side)
    }

    /// Name of the middle namespace (where the forwarders' sockets live).
    pub fn middle_ns(&self) -> &str {
        self.testbed.middle_ns()
    }

    /// A `Command` that runs `program` inside a side's namespace.
    pub fn command(&self, side: Side, program: &str) -> Command {
        self.testbed.command(side, program)
    }

    /// Runs a command inside a side's namespace and returns its stdout.
    pub fn exec(&self, side: Side, args: &[&str]) -> Result<String, LabError> {
        self.testbed.exec(side, args)
    }

    /// Runs `f` on a thread inside a side's namespace (see [`Testbed::run_in`]).
    pub fn run_in<T, F>(&self, side: Side, f: F) -> Result<T, LabError>
    where
        T: Send,
        F: FnOnce() -> T + Send,
    {
        self.testbed.run_in(side, f)
    }

    /// Starts `f` on a thread inside a side's namespace (see [`Testbed::spawn_in`]).
    pub fn spawn_in<T, F>(&self, side: Side, f: F) -> JoinHandle<Result<T, LabError>>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.testbed.spawn_in(side, f)
    }

    /// The running forwarders (configuration, counters, health).
    pub fn link(&self) -> &EmuLink {
        &self.link
    }

    /// The configuration of one direction.
    pub fn config(&self, dir: Direction) -> EmuConfig {
        self.link.config(dir)
    }

    /// Changes the configuration of one direction while it runs (see
    /// [`EmuLink::set_config`]).
    pub fn set_config(&self, dir: Direction, cfg: EmuConfig) -> Result<(), LabError> {
        self.link.set_config(dir, cfg)
    }

    /// The counters of one direction, now.
    pub fn counters(&self, dir: Direction) -> EmuCounters {
        self.link.counters(dir)
    }

    /// The counters of both directions, now.
    pub fn all_counters(&self) -> PathCounters {
        self.link.all_counters()
    }

    /// Waits up to `timeout` until both queues are empty and no counter moved for 20 ms.
    /// Returns whether that happened.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        self.link.wait_idle(timeout)
    }

    /// `Err` if a forwarder thread stopped on an I/O error or panicked (that direction then
    /// forwards nothing).
    pub fn check(&self) -> Result<(), LabError> {
        self.link.check()
    }

    /// Stops both forwarders (frames still queued are discarded and stay counted in
    /// `queued`) and returns the final counters. The namespaces remain until drop; no
    /// frame crosses between A and B any more. Idempotent.
    pub fn shutdown(&mut self) -> PathCounters {
        self.link.shutdown()
    }
}

/// The two forwarder threads of a path, attached to two existing interfaces of a middle
/// namespace (frames read on `if_a` go out of `if_b` and vice versa). [`EmulatedPath`]
/// owns one; a long-lived emulator process (see [`crate::named`]) runs one on its own.
/// The threads stop on drop.
#[derive(Debug)]
pub struct EmuLink {
    forwarders: Vec<Forwarder>,
}

impl EmuLink {
    /// Opens the packet sockets in namespace `middle_ns` (on `if_a`, facing A, and `if_b`,
    /// facing B) and starts the forwarders. The interfaces should have the offloads the
    /// module docs require switched off.
    pub fn attach(
        middle_ns: &str,
        if_a: &str,
        if_b: &str,
        a_to_b: EmuConfig,
        b_to_a: EmuConfig,
    ) -> Result<EmuLink, LabError> {
        a_to_b.validate()?;
        b_to_a.validate()?;
        let m = middle_ns;
        let sockets = wirebench_sys::netns::run_in(m, || -> io::Result<_> {
            let ia = packet::ifindex(if_a)?;
            let ib = packet::ifindex(if_b)?;
            let ingress = |idx: u32| -> io::Result<PacketSocket> {
                let s = PacketSocket::open(idx)?;
                s.set_ignore_outgoing(true)?;
                s.set_promiscuous()?;
                s.set_recv_buffer(SOCK_BUF)?;
                s.set_timestamps(true)?;
                Ok(s)
            };
            let egress = |idx: u32| -> io::Result<PacketSocket> {
                let s = PacketSocket::open_send_only(idx)?;
                s.set_send_buffer(SOCK_BUF)?;
                Ok(s)
            };
            Ok([(ingress(ia)?, egress(ib)?), (ingress(ib)?, egress(ia)?)])
        })
        .and_then(|r| r)
        .map_err(|source| LabError::Io {
            what: format!("opening packet sockets in namespace {m}"),
            source,
        })?;
        let mut forwarders = Vec::with_capacity(2);
        for ((rx, tx), (dir, cfg)) in sockets
            .into_iter()
            .zip([(Direction::AToB, a_to_b), (Direction::BToA, b_to_a)])
        {
            forwarders.push(Forwarder::spawn(dir, rx, tx, cfg)?);
        }
        Ok(EmuLink { forwarders })
    }

    fn forwarder(&self, dir: Direction) -> Option<&Forwarder> {
        self.forwarders.get(dir.index())
    }

    /// The configuration of one direction.
    pub fn config(&self, dir: Direction) -> EmuConfig {
        self.forwarder(dir)
            .map(|f| lock(&f.shared.config).clone())
            .unwrap_or_default()
    }

    /// Changes the configuration of one direction while it runs. It applies to frames
    /// received from the next forwarder wake-up on (within 5 ms); frames already queued
    /// keep their release times. The random stream restarts only if the seed changes.
    pub fn set_config(&self, dir: Direction, cfg: EmuConfig) -> Result<(), LabError> {
        cfg.validate()?;
        if let Some(f) = self.forwarder(dir) {
            *lock(&f.shared.config) = cfg;
            f.shared.generation.fetch_add(1, Ordering::AcqRel);
        }
        Ok(())
    }

    /// The counters of one direction, now.
    pub fn counters(&self, dir: Direction) -> EmuCounters {
        self.forwarder(dir)
            .map(|f| f.shared.counters.snapshot())
            .unwrap_or_default()
    }

    /// The counters of both directions, now.
    pub fn all_counters(&self) -> PathCounters {
        PathCounters {
            a_to_b: self.counters(Direction::AToB),
            b_to_a: self.counters(Direction::BToA),
        }
    }

    /// Waits up to `timeout` until both queues are empty and no counter moved for 20 ms.
    /// Returns whether that happened.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut prev = self.all_counters();
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let now = self.all_counters();
            if now == prev && now.a_to_b.queued == 0 && now.b_to_a.queued == 0 {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            prev = now;
        }
    }

    /// `Err` if a forwarder thread stopped on an I/O error or panicked (that direction then
    /// forwards nothing).
    pub fn check(&self) -> Result<(), LabError> {
        for (f, dir) in self
            .forwarders
            .iter()
            .zip([Direction::AToB, Direction::BToA])
        {
            if let Some(detail) = lock(&f.shared.failure).clone() {
                return Err(LabError::Forwarder {
                    direction: dir.to_string(),
                    detail,
                });
            }
            let ended = f.thread.as_ref().is_some_and(|t| t.is_finished());
            if ended && !f.shared.stop.load(Ordering::Acquire) {
                return Err(LabError::Forwarder {
                    direction: dir.to_string(),
                    detail: "thread ended unexpectedly (panic)".into(),
                });
            }
        }
        Ok(())
    }

    /// Stops both forwarders (frames still queued are discarded and stay counted in
    /// `queued`) and returns the final counters. No frame crosses between A and B any
    /// more. Idempotent.
    pub fn shutdown(&mut self) -> PathCounters {
        for f in &mut self.forwarders {
            f.stop();
        }
        self.all_counters()
    }
}
