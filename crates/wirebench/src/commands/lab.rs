//! `wirebench lab ...`: named, persistent testbeds of network namespaces (see
//! [`wirebench_lab::named`]) that a user creates, inspects, uses and removes by name.
//!
//! ```text
//! wirebench lab up NAME [--mtu N] [--offload LIST] [--rate R [--rate-both]]
//!                       [--delay D --jitter J --loss P --reorder P --duplicate P]
//!                       [--cc ALGO] [--ipv6] [--sysctl [client:|server:]K=V ...] [--json]
//! wirebench lab show [NAME] [--json]
//! wirebench lab exec NAME client|server -- CMD...
//! wirebench lab down NAME | --all | --stale
//! ```
//!
//! `lab _emulate NAME` (hidden) is the background emulator process `lab up` starts when
//! the link has impairments. Errors are one line naming the flag and value at fault; exit
//! codes are those of the crate ([`crate::EXIT_USAGE`] for a bad or refused setting).

use std::fmt::Write as _;

use clap::{Args, Subcommand, ValueEnum};
use wirebench_lab::named::{
    self, EndpointReport, LabManager, LabReport, LabSpec, NamedError, Phase,
};

use crate::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// `wirebench lab`.
#[derive(Debug, Args)]
pub struct LabArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: LabCommand,
}

/// `wirebench lab` subcommands.
#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Build a named lab: namespaces wbl-NAME-c (client, 198.18.0.1) and wbl-NAME-s
    /// (server, 198.18.0.2) joined by a veth pair; with impairments through a middle
    /// namespace wbl-NAME-m and a background emulator. Every setting is read back.
    Up(Box<UpArgs>),
    /// Show one lab (read back from the kernel) or list all.
    Show(ShowArgs),
    /// Run a command inside the client or server namespace of a lab.
    Exec(ExecArgs),
    /// Remove a lab (its emulator, namespaces and state), all labs, or the stale ones.
    Down(DownArgs),
    /// The emulator process of a lab (started by `lab up`).
    #[command(name = "_emulate", hide = true)]
    Emulate(EmulateArgs),
}

/// `wirebench lab up`.
#[derive(Debug, Args)]
pub struct UpArgs {
    /// Lab name: up to 12 characters of a-z, 0-9 and -.
    pub name: String,
    /// MTU of every veth end.
    #[arg(long, default_value_t = 1500)]
    pub mtu: u32,
    /// Offloads of both endpoints, `feature=on|off,...` (tx-checksum, rx-checksum, sg,
    /// tso, gso, gro, lro, or any `ethtool -k` feature name). Repeatable.
    #[arg(long, value_name = "LIST")]
    pub offload: Vec<String>,
    /// Rate limit of the client→server direction (tc tbf on the client's egress), bits/s:
    /// 100mbit, 1g, 500k.
    #[arg(long, value_name = "RATE")]
    pub rate: Option<String>,
    /// Apply --rate to the server→client direction too.
    #[arg(long, requires = "rate")]
    pub rate_both: bool,
    /// One-way delay added in each direction (5ms, 250us); runs the link through the
    /// emulator.
    #[arg(long, value_name = "DURATION")]
    pub delay: Option<String>,
    /// Uniform delay variation, delay ± jitter (never reorders).
    #[arg(long, value_name = "DURATION")]
    pub jitter: Option<String>,
    /// Frames lost in each direction, percent (1%, 0.5).
    #[arg(long, value_name = "PCT")]
    pub loss: Option<String>,
    /// Frames held back so that later ones overtake them, percent.
    #[arg(long, value_name = "PCT")]
    pub reorder: Option<String>,
    /// How long a reordered frame is held back (default 10ms).
    #[arg(long, value_name = "DURATION")]
    pub reorder_gap: Option<String>,
    /// Frames sent twice, percent.
    #[arg(long, value_name = "PCT")]
    pub duplicate: Option<String>,
    /// Seed of the emulator's random draws.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run the link through the emulator even without impairments.
    #[arg(long)]
    pub emulate: bool,
    /// TCP congestion control of the lab (congctl on its routes; the host is untouched).
    #[arg(long, value_name = "ALGO")]
    pub cc: Option<String>,
    /// Also give the endpoints IPv6 addresses (fd77:6c62:6c00::1 and ::2).
    #[arg(long)]
    pub ipv6: bool,
    /// A net.* sysctl in the endpoint namespaces, `[client:|server:]KEY=VALUE`. Repeatable.
    #[arg(long, value_name = "K=V")]
    pub sysctl: Vec<String>,
    /// RPS CPU mask (hex) of both endpoints' receive queue.
    #[arg(long, value_name = "MASK")]
    pub rps: Option<String>,
    /// XPS CPU mask (hex) of both endpoints' transmit queue.
    #[arg(long, value_name = "MASK")]
    pub xps: Option<String>,
    /// Print the read-back as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `wirebench lab show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The lab (default: list all).
    pub name: Option<String>,
    /// JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Which endpoint `lab exec` runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SideArg {
    /// The client namespace (198.18.0.1).
    Client,
    /// The server namespace (198.18.0.2).
    Server,
}

/// `wirebench lab exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The lab.
    pub name: String,
    /// Where to run.
    pub side: SideArg,
    /// The command and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub cmd: Vec<String>,
}

/// `wirebench lab down`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["name", "all", "stale"])))]
pub struct DownArgs {
    /// The lab.
    pub name: Option<String>,
    /// Remove every lab.
    #[arg(long)]
    pub all: bool,
    /// Remove the labs whose building, owning or emulator process is gone.
    #[arg(long)]
    pub stale: bool,
}

/// `wirebench lab _emulate`.
#[derive(Debug, Args)]
pub struct EmulateArgs {
    /// The lab.
    pub name: String,
}

/// Runs `wirebench lab ...`; returns the exit code.
pub fn run(args: LabArgs) -> i32 {
    let mgr = LabManager::new();
    let (what, result) = match args.command {
        LabCommand::Up(a) => ("up", up(&mgr, &a)),
        LabCommand::Show(a) => ("show", show(&mgr, &a)),
        LabCommand::Exec(a) => ("exec", exec(&mgr, &a)),
        LabCommand::Down(a) => ("down", down(&mgr, &a)),
        LabCommand::Emulate(a) => ("_emulate", named::run_emulator(&a.name).map(|_| EXIT_OK)),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("wirebench lab {what}: {e}");
            match e {
                NamedError::InvalidName { .. }
                | NamedError::InvalidSetting { .. }
                | NamedError::Refused { .. } => EXIT_USAGE,
                _ => EXIT_FAILED,
            }
        }
    }
}

/// The spec `lab up` asks for.
pub fn spec_from(a: &UpArgs) -> Result<LabSpec, NamedError> {
    let mut s = LabSpec::new(&a.name);
    s.mtu = a.mtu;
    for list in &a.offload {
        s.offloads.extend(named::parse_offloads(list)?);
    }
    s.rate_bps = a.rate.as_deref().map(named::parse_rate_bps).transpose()?;
    s.rate_both = a.rate_both;
    let dur = |flag: &str, v: &Option<String>| -> Result<Option<u64>, NamedError> {
        v.as_deref()
            .map(|v| named::parse_duration_ns(flag, v))
            .transpose()
    };
    let pct = |flag: &str, v: &Option<String>| -> Result<f64, NamedError> {
        Ok(v.as_deref()
            .map(|v| named::parse_pct(flag, v))
            .transpose()?
            .unwrap_or(0.0))
    };
    s.impair.delay_ns = dur("delay", &a.delay)?.unwrap_or(0);
    s.impair.jitter_ns = dur("jitter", &a.jitter)?.unwrap_or(0);
    if let Some(gap) = dur("reorder-gap", &a.reorder_gap)? {
        s.impair.reorder_gap_ns = gap;
    }
    s.impair.loss_pct = pct("loss", &a.loss)?;
    s.impair.reorder_pct = pct("reorder", &a.reorder)?;
    s.impair.duplicate_pct = pct("duplicate", &a.duplicate)?;
    if let Some(seed) = a.seed {
        s.impair.seed = seed;
    }
    s.emulate = a.emulate;
    s.cc = a.cc.clone();
    s.ipv6 = a.ipv6;
    s.sysctls = a
        .sysctl
        .iter()
        .map(|k| named::parse_sysctl(k))
        .collect::<Result<_, _>>()?;
    s.rps_cpus = a.rps.clone();
    s.xps_cpus = a.xps.clone();
    s.validate()?;
    Ok(s)
}

fn print_json(json: Result<String, serde_json::Error>) -> Result<i32, NamedError> {
    let text = json.map_err(|e| NamedError::State {
        path: "stdout".into(),
        detail: e.to_string(),
    })?;
    println!("{text}");
    Ok(EXIT_OK)
}

fn up(mgr: &LabManager, a: &UpArgs) -> Result<i32, NamedError> {
    let report = mgr.up(&spec_from(a)?)?;
    if a.json {
        return print_json(serde_json::to_string_pretty(&report));
    }
    print!("{}", render(&report));
    Ok(EXIT_OK)
}

fn show(mgr: &LabManager, a: &ShowArgs) -> Result<i32, NamedError> {
    if let Some(name) = &a.name {
        let report = mgr.show(name)?;
        if a.json {
            return print_json(serde_json::to_string_pretty(&report));
        }
        print!("{}", render(&report));
        return Ok(EXIT_OK);
    }
    mgr.check_state_dir()?;
    let reports = mgr
        .list()
        .iter()
        .map(|n| mgr.show(n))
        .collect::<Result<Vec<_>, _>>()?;
    let foreign = foreign_lines(mgr);
    if a.json {
        // The JSON array holds wirebench's labs; the others are said on stderr.
        for l in &foreign {
            eprintln!("{l}");
        }
        return print_json(serde_json::to_string_pretty(&reports));
    }
    print!("{}", render_list(&reports));
    for l in &foreign {
        println!("{l}");
    }
    Ok(EXIT_OK)
}

/// One line per lab name that only foreign namespaces carry (no state file): listed, never
/// touched.
fn foreign_lines(mgr: &LabManager) -> Vec<String> {
    mgr.foreign()
        .iter()
        .map(|n| {
            format!(
                "foreign: {n} (namespaces named like a lab's, without a state file in {}: not \
                 created by wirebench, left alone)",
                mgr.state_dir().display()
            )
        })
        .collect()
}

fn exec(mgr: &LabManager, a: &ExecArgs) -> Result<i32, NamedError> {
    let side = match a.side {
        SideArg::Client => named::Endpoint::Client,
        SideArg::Server => named::Endpoint::Server,
    };
    let Some((program, args)) = a.cmd.split_first() else {
        // Refused with the library's message (clap requires a command already).
        return mgr
            .exec(&a.name, side, &a.cmd)
            .map(crate::forward::exit_code);
    };
    let mut c = mgr.command(&a.name, side, program)?;
    c.args(args);
    let status = crate::forward::spawn_and_wait(&mut c).map_err(|source| NamedError::Io {
        what: format!("running {}", a.cmd.join(" ")),
        source,
    })?;
    Ok(crate::forward::exit_code(status))
}

fn down(mgr: &LabManager, a: &DownArgs) -> Result<i32, NamedError> {
    mgr.check_state_dir()?;
    if a.all || a.stale {
        for l in foreign_lines(mgr) {
            println!("{l}");
        }
    }
    let done = if a.all {
        mgr.down_all()?
    } else if a.stale {
        for s in mgr.stale() {
            println!("stale: {} ({})", s.name, s.reasons.join("; "));
        }
        mgr.down_stale()?
    } else {
        let name = a.name.as_deref().unwrap_or_default();
        vec![mgr.down(name)?]
    };
    if done.is_empty() {
        println!("nothing to remove");
    }
    for d in done {
        let emu = d
            .emulator_pid
            .map(|p| format!(", emulator pid {p} stopped"))
            .unwrap_or_default();
        println!("removed lab {} ({}{emu})", d.name, d.namespaces.join(" "));
    }
    Ok(EXIT_OK)
}

/// `100 Mbit/s`, `2.5 Gbit/s`.
pub fn fmt_rate(bps: u64) -> String {
    let b = bps as f64;
    let (v, unit) = match bps {
        0..=999 => return format!("{bps} bit/s"),
        1_000..=999_999 => (b / 1e3, "kbit/s"),
        1_000_000..=999_999_999 => (b / 1e6, "Mbit/s"),
        _ => (b / 1e9, "Gbit/s"),
    };
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} {unit}")
}

/// `5 ms`, `250 us`, `800 ns`.
pub fn fmt_ns(ns: u64) -> String {
    match ns {
        0 => "0".into(),
        n if n % 1_000_000 == 0 => format!("{} ms", n / 1_000_000),
        n if n >= 1_000_000 => format!("{:.3} ms", n as f64 / 1e6),
        n if n % 1_000 == 0 => format!("{} us", n / 1_000),
        n => format!("{n} ns"),
    }
}

fn status_of(r: &LabReport) -> String {
    if !r.stale.is_empty() {
        return format!("stale: {}", r.stale.join("; "));
    }
    match r.phase {
        Some(Phase::Up) => "up".into(),
        Some(Phase::Building) => "building".into(),
        None => "orphan".into(),
    }
}

fn emulator_summary(spec: &LabSpec) -> String {
    if !spec.uses_emulator() {
        return "-".into();
    }
    let i = &spec.impair;
    let mut parts = vec![format!("delay {}", fmt_ns(i.delay_ns))];
    if i.jitter_ns > 0 {
        parts.push(format!("±{}", fmt_ns(i.jitter_ns)));
    }
    for (what, p) in [
        ("loss", i.loss_pct),
        ("reorder", i.reorder_pct),
        ("dup", i.duplicate_pct),
    ] {
        if p > 0.0 {
            parts.push(format!("{what} {p}%"));
        }
    }
    parts.join(" ")
}

/// One line per lab.
pub fn render_list(reports: &[LabReport]) -> String {
    if reports.is_empty() {
        return "no labs\n".into();
    }
    let rows: Vec<[String; 6]> = reports
        .iter()
        .map(|r| {
            let spec = r.spec.clone().unwrap_or_default();
            let mtu = r.client.as_ref().map_or("-".into(), |c| c.mtu.to_string());
            let rate = spec.rate_bps.map_or("-".into(), fmt_rate);
            let cc = spec.cc.clone().unwrap_or_else(|| "-".into());
            [
                r.name.clone(),
                status_of(r),
                mtu,
                rate,
                emulator_summary(&spec),
                cc,
            ]
        })
        .collect();
    table(
        &[["NAME", "STATUS", "MTU", "RATE", "EMULATOR", "CC"].map(String::from)],
        &rows,
    )
}

fn table<const N: usize>(head: &[[String; N]], rows: &[[String; N]]) -> String {
    let mut width = [0usize; N];
    for r in head.iter().chain(rows) {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in head.iter().chain(rows) {
        let mut line = String::new();
        for (i, (c, w)) in r.iter().zip(width).enumerate() {
            if i + 1 == N {
                line.push_str(c);
            } else {
                let _ = write!(line, "{c:<w$}  ");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn endpoint_rows(c: Option<&EndpointReport>, s: Option<&EndpointReport>) -> Vec<[String; 3]> {
    let col = |e: Option<&EndpointReport>, f: &dyn Fn(&EndpointReport) -> String| {
        e.map_or_else(|| "(missing)".to_string(), f)
    };
    let row = |label: &str, f: &dyn Fn(&EndpointReport) -> String| {
        [label.to_string(), col(c, f), col(s, f)]
    };
    let mut rows = vec![
        row("namespace", &|e| format!("{} ({})", e.namespace, e.ifname)),
        row("addresses", &|e| {
            let a: Vec<&str> = e
                .addresses
                .iter()
                .map(String::as_str)
                .filter(|a| !a.starts_with("fe80"))
                .collect();
            a.join(" ")
        }),
        row("mtu / state", &|e| format!("{} {}", e.mtu, e.operstate)),
    ];
    let offload_names: Vec<String> = c
        .or(s)
        .map(|e| e.offloads.iter().map(|o| o.feature.clone()).collect())
        .unwrap_or_default();
    for name in offload_names {
        let label = format!("  {name}");
        rows.push(row(&label, &|e| {
            e.offloads
                .iter()
                .find(|o| o.feature == name)
                .map_or("-".into(), |o| {
                    let mut v = o.state.clone();
                    if o.fixed {
                        v.push_str(" [fixed]");
                    }
                    if let Some(asked) = o.asked {
                        let _ = write!(v, " (asked {})", named::on_off(asked));
                    }
                    v
                })
        }));
    }
    rows.push(row("qdisc", &|e| {
        let q: Vec<String> = e
            .qdiscs
            .iter()
            .filter(|q| q.root)
            .map(|q| match q.rate_bps {
                Some(r) => format!(
                    "{} {} burst {} B, sent {} B, drops {}",
                    q.kind,
                    fmt_rate(r),
                    q.burst_bytes.unwrap_or(0),
                    q.sent_bytes,
                    q.drops
                ),
                None => q.kind.clone(),
            })
            .collect();
        if q.is_empty() {
            "-".into()
        } else {
            q.join(", ")
        }
    }));
    rows.push(row("congestion", &|e| {
        let routes: Vec<String> = e
            .routes
            .iter()
            .filter_map(|r| {
                r.congctl
                    .as_ref()
                    .map(|c| format!("{} via route {}", c, r.dst))
            })
            .collect();
        let mut v = format!("default {}", e.cc_default);
        if !routes.is_empty() {
            let _ = write!(v, "; {}", routes.join(", "));
        }
        v
    }));
    rows.push(row("sysctls", &|e| {
        let s: Vec<String> = e
            .sysctls
            .iter()
            .map(|s| {
                format!(
                    "{}={}",
                    s.key,
                    s.value.split_whitespace().collect::<Vec<_>>().join(" ")
                )
            })
            .collect();
        if s.is_empty() {
            "-".into()
        } else {
            s.join(", ")
        }
    }));
    rows.push(row("rps / xps", &|e| {
        format!(
            "{} / {}",
            e.rps_cpus.as_deref().unwrap_or("-"),
            e.xps_cpus.as_deref().unwrap_or("-")
        )
    }));
    rows.push(row("rx / tx packets", &|e| {
        format!("{} / {}", e.rx_packets, e.tx_packets)
    }));
    rows
}

/// Why a lab with the link emulator has TSO, GSO and transmit checksum offload off.
pub const EMULATOR_OFFLOADS_NOTE: &str = "\
offloads: TSO, GSO and transmit checksum offload are off on both endpoints and the middle,
  because the link emulator (--delay, --jitter, --loss, --reorder, --duplicate) forwards each
  frame through a user-space socket: it cannot complete a partial checksum (the frame would be
  dropped) nor split a 64 KiB TSO/GSO frame into MTU-sized ones; tests through it run without
  those offloads
";

/// The human view of one lab: a two-column (client, server) table, the kernel's notes on
/// offloads it did not apply as requested, and the emulator.
pub fn render(r: &LabReport) -> String {
    let mut out = format!("lab {}: {}\n", r.name, status_of(r));
    let head = [["".to_string(), "client".to_string(), "server".to_string()]];
    out.push_str(&table(
        &head,
        &endpoint_rows(r.client.as_ref(), r.server.as_ref()),
    ));
    for e in [&r.client, &r.server].into_iter().flatten() {
        for o in &e.offloads {
            for l in o.lines.iter().filter(|l| l.contains("[requested")) {
                let _ = writeln!(out, "  kernel ({}): {l}", e.ifname);
            }
        }
    }
    if let Some(m) = &r.middle {
        let _ = writeln!(
            out,
            "middle: {} (mtu {} / {})",
            m.namespace, m.mtu_client_side, m.mtu_server_side
        );
    }
    if r.spec.as_ref().is_some_and(LabSpec::uses_emulator) {
        out.push_str(EMULATOR_OFFLOADS_NOTE);
    }
    if let Some(e) = &r.emulator {
        let spec = r.spec.clone().unwrap_or_default();
        let _ = writeln!(
            out,
            "emulator: pid {} {}, {}",
            e.pid,
            if e.alive { "running" } else { "GONE" },
            emulator_summary(&spec)
        );
        if let Some(st) = &e.status {
            for (dir, c) in [
                ("client->server", &st.client_to_server),
                ("server->client", &st.server_to_client),
            ] {
                let _ = writeln!(
                    out,
                    "  {dir}: received {} forwarded {} dropped {} duplicated {} reordered {} queued {} send-errors {}",
                    c.received, c.forwarded, c.dropped, c.duplicated, c.reordered, c.queued, c.send_errors
                );
            }
        }
        if let Some(err) = &e.error {
            let _ = writeln!(out, "  {err}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct T {
        #[command(subcommand)]
        cmd: LabCommand,
    }

    fn parse(args: &[&str]) -> Result<LabCommand, clap::Error> {
        T::try_parse_from(std::iter::once("lab").chain(args.iter().copied())).map(|t| t.cmd)
    }

    #[test]
    fn up_flags_become_a_spec() {
        let LabCommand::Up(a) = parse(&[
            "up",
            "l1",
            "--mtu",
            "9000",
            "--offload",
            "tx-checksum=off,tso=off",
            "--rate",
            "100mbit",
            "--delay",
            "5ms",
            "--loss",
            "1%",
            "--cc",
            "cubic",
            "--sysctl",
            "server:net.ipv4.tcp_rmem=4096 87380 6291456",
        ])
        .unwrap() else {
            panic!()
        };
        let s = spec_from(&a).unwrap();
        assert_eq!(
            (s.mtu, s.rate_bps, s.impair.delay_ns),
            (9000, Some(100_000_000), 5_000_000)
        );
        assert_eq!(s.offloads.len(), 2);
        assert!(s.uses_emulator());
        assert_eq!(s.sysctls[0].value, "4096 87380 6291456");
    }

    #[test]
    fn errors_name_flag_and_value() {
        for (args, needle) in [
            (vec!["up", "l1", "--rate", "10mbps"], "--rate \"10mbps\""),
            (vec!["up", "l1", "--delay", "5"], "--delay \"5\""),
            (vec!["up", "l1", "--loss", "120%"], "--loss \"120%\""),
            (
                vec!["up", "l1", "--offload", "tso=maybe"],
                "--offload \"tso=maybe\"",
            ),
            (vec!["up", "l1", "--sysctl", "kernel.pid_max=5"], "--sysctl"),
            (vec!["up", "BAD"], "invalid lab name \"BAD\""),
        ] {
            let LabCommand::Up(a) = parse(&args).unwrap() else {
                panic!()
            };
            let e = spec_from(&a).unwrap_err().to_string();
            assert!(e.contains(needle), "{args:?}: {e}");
        }
    }

    #[test]
    fn other_commands_parse() {
        assert!(matches!(parse(&["down", "--stale"]), Ok(LabCommand::Down(d)) if d.stale));
        assert!(
            parse(&["down"]).is_err(),
            "down needs a name, --all or --stale"
        );
        let Ok(LabCommand::Exec(e)) = parse(&["exec", "l1", "server", "--", "ss", "-tin"]) else {
            panic!()
        };
        assert_eq!(
            (e.side, e.cmd.as_slice()),
            (
                SideArg::Server,
                ["ss".to_string(), "-tin".to_string()].as_slice()
            )
        );
        assert!(matches!(
            parse(&["_emulate", "l1"]),
            Ok(LabCommand::Emulate(_))
        ));
        assert!(
            matches!(parse(&["show", "--json"]), Ok(LabCommand::Show(s)) if s.json && s.name.is_none())
        );
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_rate(100_000_000), "100 Mbit/s");
        assert_eq!(fmt_rate(2_500_000_000), "2.5 Gbit/s");
        assert_eq!(fmt_ns(5_000_000), "5 ms");
        assert_eq!(fmt_ns(250_000), "250 us");
        let t = table(&[["a".into(), "bb".into()]], &[["ccc".into(), "d".into()]]);
        assert_eq!(t, "a    bb\nccc  d\n");
    }
}
