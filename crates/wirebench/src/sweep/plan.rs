//! A sweep's plan from its command line: the sweep's own options, the factors and their
//! values, the test's own flags, and the grid of points, each point a test command line
//! checked (parsed into a spec) before anything runs.
//!
//! A point is the test command `wirebench TEST FLAGS... FACTOR-FLAG VALUE...` with the
//! factor flags appended, parsed by the same clap definitions and spec builders as the
//! single test: a point means exactly what the single test with those flags means.

use clap::Parser;
use wirebench_model::spec::{TestSpec, WorkloadKind, MIN_UDP_DATAGRAM_BYTES, MIN_UDP_RR_BYTES};
use wirebench_model::sweep::{Factor, FactorName, FactorValue, Setting};
use wirebench_stats::sweep::{explicit, geometric, perturb, DEFAULT_PERTURBATION};

use crate::args::{parse_rate, parse_size, ClientArgs, TestCommand, TestLine};
use crate::specs::{crr_spec, rr_spec, stream_spec, udp_spec, SpecResult};
use crate::under_load::LoadPlan;

/// Points a grid may hold without `--yes`.
pub const MAX_POINTS_WITHOUT_YES: usize = 10_000;

/// Default measured time of a point, seconds (the adaptive length starts here).
pub const DEFAULT_POINT_TIME_S: f64 = 0.5;

/// Default longest measured time of a point, seconds.
pub const DEFAULT_MAX_POINT_TIME_S: f64 = 4.0;

/// Default fewest calls (stream), datagrams (udp) or transactions (rr) per point.
pub const DEFAULT_MIN_COUNT: u64 = 2_000;

/// The sweep's own options (everything that is not a factor or a test flag).
#[derive(Debug, Clone, PartialEq)]
pub struct SweepOptions {
    /// Points per octave of a geometric range.
    pub points_per_octave: u32,
    /// NetPIPE perturbation of message sizes, bytes (0: off).
    pub perturb: u64,
    /// First measured time of a point, seconds.
    pub point_time_s: f64,
    /// Longest measured time of a point, seconds.
    pub max_point_time_s: f64,
    /// Fewest calls, datagrams or transactions a point must count.
    pub min_count: u64,
    /// `-t` given: every point runs exactly that long (no adaptation).
    pub fixed_time: bool,
    /// Re-measure dip candidates (default on).
    pub remeasure: bool,
    /// Run a grid above [`MAX_POINTS_WITHOUT_YES`].
    pub yes: bool,
    /// One SweepResult JSON document on stdout.
    pub json: bool,
    /// CSV, a row per point, on stdout.
    pub csv: bool,
    /// Directory the sweep writes as points complete.
    pub out_dir: Option<std::path::PathBuf>,
    /// Replace a sweep already in `out_dir` (`--force`) instead of refusing.
    pub force: bool,
    /// Allow a grid without factors (one point): a study's test that varies only the
    /// testbed (`--single-point`, not in the help).
    pub single_point: bool,
    /// Print the plan (points, estimated time, each point's command) and run nothing.
    pub dry_run: bool,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            points_per_octave: wirebench_stats::sweep::DEFAULT_POINTS_PER_OCTAVE,
            perturb: DEFAULT_PERTURBATION,
            point_time_s: DEFAULT_POINT_TIME_S,
            max_point_time_s: DEFAULT_MAX_POINT_TIME_S,
            min_count: DEFAULT_MIN_COUNT,
            fixed_time: false,
            remeasure: true,
            yes: false,
            json: false,
            csv: false,
            out_dir: None,
            force: false,
            single_point: false,
            dry_run: false,
        }
    }
}

/// One point of the grid: its settings and the test command line that measures it.
#[derive(Debug, Clone)]
pub struct PlannedPoint {
    /// Every factor's value, in factor order.
    pub settings: Vec<Setting>,
    /// The test's arguments (after `wirebench`), without `-t`.
    pub argv: Vec<String>,
}

/// Everything a sweep will do, checked.
#[derive(Debug)]
pub struct Plan {
    /// The test command (`stream`, `rr`, `crr`, `udp`).
    pub test_cmd: String,
    /// The workload the points run (from the first point's spec).
    pub kind: WorkloadKind,
    /// The sweep's options.
    pub options: SweepOptions,
    /// The factors, in grid order.
    pub factors: Vec<Factor>,
    /// The grid, last factor varying fastest.
    pub points: Vec<PlannedPoint>,
    /// The test flags the user gave (passed to every point).
    pub test_args: Vec<String>,
}

/// The factor a flag names (long or short form), if it is one: a long flag is the factor's
/// own ([`FactorName::flag`]), a short one stands for its long form on a test command
/// (`-l` for `--msg-size`, as clap defines it).
pub(crate) fn factor_of(flag: &str) -> Option<FactorName> {
    match flag.strip_prefix('-') {
        Some(short) if !short.starts_with('-') => longs_of_short(short)
            .iter()
            .find_map(|long| factor_of_long(long)),
        _ => factor_of_long(flag),
    }
}

/// The factor whose flag is `long` (`--msg-size`).
fn factor_of_long(long: &str) -> Option<FactorName> {
    FactorName::ALL.into_iter().find(|f| f.flag() == long)
}

/// The test commands' options whose short form is `short` (one character, without the
/// dash), as `--long`.
fn longs_of_short(short: &str) -> Vec<String> {
    let mut chars = short.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return Vec::new();
    };
    let cli = <TestLine as clap::CommandFactory>::command();
    TEST_COMMANDS
        .iter()
        .filter_map(|name| cli.find_subcommand(name))
        .flat_map(|cmd| cmd.get_arguments())
        .filter(|arg| arg.get_short() == Some(c))
        .filter_map(|arg| arg.get_long().map(|l| format!("--{l}")))
        .collect()
}

/// The test commands a sweep runs.
pub(crate) const TEST_COMMANDS: [&str; 4] = ["stream", "rr", "crr", "udp"];

/// The workload a test command runs, as far as the command alone says (`rr --udp` is
/// settled by the spec).
pub(crate) fn kind_of_cmd(cmd: &str) -> WorkloadKind {
    match cmd {
        "rr" => WorkloadKind::Rr,
        "crr" => WorkloadKind::Crr,
        "udp" => WorkloadKind::UdpStream,
        _ => WorkloadKind::Stream,
    }
}

/// Split `--flag=value` into its parts.
fn split_eq(arg: &str) -> (&str, Option<&str>) {
    match arg.split_once('=') {
        Some((f, v)) if f.starts_with("--") => (f, Some(v)),
        _ => (arg, None),
    }
}

/// The sweep's options, the factors as given (flag, text) and the remaining test flags.
type Split = (SweepOptions, Vec<(FactorName, String)>, Vec<String>);

/// Separates the sweep's options and the factors from the test's flags.
fn split_args(args: &[String]) -> Result<Split, String> {
    let mut o = SweepOptions::default();
    let mut factors: Vec<(FactorName, String)> = Vec::new();
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = split_eq(arg);
        let mut value = |name: &str| -> Result<String, String> {
            match inline {
                Some(v) => Ok(v.to_string()),
                None => it
                    .next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value")),
            }
        };
        let num = |name: &str, v: &str| -> Result<f64, String> {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| format!("{name} {v}: not a number"))
        };
        match flag {
            "--points-per-octave" => {
                let v = value(flag)?;
                o.points_per_octave = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=64).contains(n))
                    .ok_or_else(|| format!("--points-per-octave {v}: must be 1 to 64"))?;
            }
            "--perturb" => {
                let v = value(flag)?;
                o.perturb = parse_size(&v).map_err(|e| format!("--perturb: {e}"))?;
            }
            "--point-time" => o.point_time_s = num(flag, &value(flag)?)?,
            "--max-point-time" => o.max_point_time_s = num(flag, &value(flag)?)?,
            "--min-count" => o.min_count = num(flag, &value(flag)?)? as u64,
            "--no-remeasure" => o.remeasure = false,
            "--single-point" => o.single_point = true,
            "--yes" => o.yes = true,
            "--dry-run" => o.dry_run = true,
            "--force" => o.force = true,
            "--json" => o.json = true,
            "--csv" => o.csv = true,
            "-o" | "--output" => o.out_dir = Some(value(flag)?.into()),
            f => match factor_of(f) {
                Some(name) => {
                    let v = value(f)?;
                    if factors.iter().any(|(n, _)| *n == name) {
                        return Err(format!("{} is given twice", name.flag()));
                    }
                    factors.push((name, v));
                }
                None => {
                    if f == "-t" || f == "--duration" {
                        o.fixed_time = true;
                    }
                    rest.push(arg.clone());
                }
            },
        }
    }
    if o.json && o.csv {
        return Err("--json and --csv: choose one".into());
    }
    if o.point_time_s < 0.1 || o.max_point_time_s < o.point_time_s {
        return Err(format!(
            "--point-time {} and --max-point-time {}: need 0.1 <= point time <= max point time",
            o.point_time_s, o.max_point_time_s
        ));
    }
    Ok((o, factors, rest))
}

/// The smallest message size a test accepts for a size factor (perturbed sizes are clipped
/// to it).
fn min_size(kind: WorkloadKind, udp_rr: bool) -> u64 {
    match kind {
        WorkloadKind::UdpStream => MIN_UDP_DATAGRAM_BYTES.into(),
        _ if udp_rr => MIN_UDP_RR_BYTES.into(),
        _ => 1,
    }
}

/// The values of factor `name` given as `text`: `LO..HI` (geometric), `A,B,C` or one value.
fn factor_values(
    name: FactorName,
    text: &str,
    o: &SweepOptions,
    min: u64,
) -> Result<Vec<FactorValue>, String> {
    let bad = |e: String| format!("{} {text}: {e}", name.flag());
    if name.is_named() {
        let v: Vec<FactorValue> = text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| FactorValue::Name(s.to_string()))
            .collect();
        if v.is_empty() {
            return Err(bad("empty list: no value given".into()));
        }
        return Ok(v);
    }
    let parse = |s: &str| -> Result<u64, String> {
        match name {
            FactorName::Rate => parse_rate(s),
            FactorName::Flows
            | FactorName::Burst
            | FactorName::UnderLoad
            | FactorName::BufferOffset => s
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("'{s}' is not a whole number")),
            _ => parse_size(s),
        }
    };
    let mut values = if let Some((lo, hi)) = text.split_once("..") {
        geometric(
            parse(lo).map_err(bad)?,
            parse(hi).map_err(bad)?,
            o.points_per_octave,
        )
        .map_err(|e| bad(e.to_string()))?
    } else {
        let list: Vec<u64> = text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(parse)
            .collect::<Result<_, _>>()
            .map_err(bad)?;
        explicit(&list).map_err(|e| bad(e.to_string()))?
    };
    if name.is_message_size() && o.perturb > 0 {
        values = perturb(&values, o.perturb, min, u64::MAX).map_err(|e| bad(e.to_string()))?;
    }
    Ok(values.into_iter().map(FactorValue::Number).collect())
}

/// A point's test: its spec, its client flags and the load beside it (`rr --under-load`).
pub type PointTest = (TestSpec, ClientArgs, Option<LoadPlan>);

/// Sweeps and studies run against wirebench's daemon: `--iperf3` is a single test's option.
const NO_IPERF3: &str = "--iperf3 runs single tests only (`wirebench stream --iperf3`), not \
                         sweeps or studies";

/// The test of a command line `argv` (after `wirebench`).
pub fn point_spec(argv: &[String]) -> Result<PointTest, String> {
    let full = std::iter::once("wirebench".to_string()).chain(argv.iter().cloned());
    let line =
        TestLine::try_parse_from(full).map_err(|e| crate::args::first_line(&e.to_string()))?;
    let (spec, c, load): (SpecResult, ClientArgs, Option<LoadPlan>) = match line.test {
        TestCommand::Stream(a) if a.iperf3 => return Err(NO_IPERF3.into()),
        TestCommand::Udp(a) if a.iperf3 => return Err(NO_IPERF3.into()),
        TestCommand::Stream(a) => (stream_spec(&a), a.c, None),
        TestCommand::Rr(a) => {
            let load = LoadPlan::of(&a);
            (rr_spec(&a), a.c, load)
        }
        TestCommand::Crr(a) => (crr_spec(&a), a.c, None),
        TestCommand::Udp(a) => (udp_spec(&a), a.c, None),
    };
    let spec = spec.map_err(|(msg, _)| msg)?;
    if let Some(l) = &load {
        l.load_spec(&spec).map_err(|e| e.message)?;
    }
    Ok((spec, c, load))
}

/// The cartesian product of the factors' values, last factor fastest.
fn grid(factors: &[Factor]) -> Vec<Vec<Setting>> {
    let mut out: Vec<Vec<Setting>> = vec![Vec::new()];
    for f in factors {
        let mut next = Vec::with_capacity(out.len() * f.values.len());
        for prefix in &out {
            for v in &f.values {
                let mut s = prefix.clone();
                s.push(Setting {
                    factor: f.name,
                    value: v.clone(),
                });
                next.push(s);
            }
        }
        out = next;
    }
    out
}

/// The test arguments of a point: the test command, the user's flags, the factor flags.
pub fn point_argv(test_cmd: &str, test_args: &[String], settings: &[Setting]) -> Vec<String> {
    let mut argv = vec![test_cmd.to_string()];
    argv.extend(test_args.iter().cloned());
    for s in settings {
        argv.push(s.factor.flag().to_string());
        argv.push(s.value.arg());
    }
    argv
}

/// The plan of `wirebench sweep TEST ARGS...`: every point checked, or the first problem in
/// the user's terms.
pub fn plan(test_cmd: &str, args: &[String]) -> Result<Plan, String> {
    let (options, given, test_args) = split_args(args)?;
    if given.is_empty() && !options.single_point {
        return Err(format!(
            "no factor to sweep: give at least one of {} (a range LO..HI or a list A,B,C)",
            FactorName::ALL.map(FactorName::flag).join(", ")
        ));
    }
    let base_kind = kind_of_cmd(test_cmd);
    let udp_rr = base_kind == WorkloadKind::Rr && test_args.iter().any(|a| a == "--udp");
    let kind = if udp_rr {
        WorkloadKind::UdpRr
    } else {
        base_kind
    };
    let mut factors = Vec::new();
    for (name, text) in given {
        if !name.tests().contains(&kind) {
            return Err(format!(
                "{} is not a factor of `{test_cmd}{}`",
                name.flag(),
                if udp_rr { " --udp" } else { "" }
            ));
        }
        let values = factor_values(name, &text, &options, min_size(kind, udp_rr))?;
        factors.push(Factor {
            name,
            values,
            given: text,
        });
    }
    let settings = grid(&factors);
    if settings.len() > MAX_POINTS_WITHOUT_YES && !options.yes {
        return Err(format!(
            "the grid holds {} points (more than {MAX_POINTS_WITHOUT_YES}); narrow it or add --yes",
            settings.len()
        ));
    }
    let mut points = Vec::with_capacity(settings.len());
    for s in settings {
        let argv = point_argv(test_cmd, &test_args, &s);
        let mut checked = argv.clone();
        if !options.fixed_time {
            checked.extend(["-t".to_string(), options.point_time_s.to_string()]);
        }
        if let Err(e) = point_spec(&checked) {
            // A test flag the test refuses whatever the factors: the flag is to blame, not
            // the first point.
            let mut base = point_argv(test_cmd, &test_args, &[]);
            base.extend(checked[argv.len()..].iter().cloned());
            if point_spec(&base).err().as_ref() == Some(&e) {
                return Err(e);
            }
            let at: Vec<String> = s
                .iter()
                .map(|x| format!("{} {}", x.factor.flag(), x.value.arg()))
                .collect();
            return Err(format!("the point {}: {e}", at.join(" ")));
        }
        points.push(PlannedPoint { settings: s, argv });
    }
    Ok(Plan {
        test_cmd: test_cmd.to_string(),
        kind,
        options,
        factors,
        points,
        test_args,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_size_range_is_geometric_and_perturbed() {
        let p = plan("stream", &args("--msg-size 1K..4K --points-per-octave 1")).unwrap();
        let v: Vec<u64> = p.factors[0]
            .values
            .iter()
            .filter_map(|v| v.number())
            .collect();
        assert_eq!(
            v,
            vec![1021, 1024, 1027, 2045, 2048, 2051, 4093, 4096, 4099]
        );
        let p = plan(
            "stream",
            &args("--msg-size 1K..4K --points-per-octave 1 --perturb 0"),
        )
        .unwrap();
        assert_eq!(p.points.len(), 3);
        assert_eq!(p.points[1].argv, args("stream --msg-size 2048"));
    }

    #[test]
    fn a_grid_crosses_factors_last_fastest() {
        let p = plan(
            "stream",
            &args("-t 1 --flows 1,2 --send-path copy,sendfile -R"),
        )
        .unwrap();
        assert!(p.options.fixed_time);
        let flat: Vec<String> = p.points.iter().map(|x| x.argv[4..].join(" ")).collect();
        assert_eq!(
            flat,
            [
                "--flows 1 --send-path copy",
                "--flows 1 --send-path sendfile",
                "--flows 2 --send-path copy",
                "--flows 2 --send-path sendfile",
            ]
        );
        assert_eq!(p.test_args, args("-t 1 -R"));
    }

    #[test]
    fn bad_input_names_the_factor() {
        let e = plan("stream", &args("--msg-size 4K..1K")).unwrap_err();
        assert!(e.starts_with("--msg-size 4K..1K: empty range"), "{e}");
        let e = plan("stream", &args("--burst 1,2")).unwrap_err();
        assert_eq!(e, "--burst is not a factor of `stream`");
        let e = plan("rr", &args("--udp --congestion cubic")).unwrap_err();
        assert_eq!(e, "--congestion is not a factor of `rr --udp`");
        let e = plan("stream", &args("-t 1")).unwrap_err();
        assert!(e.starts_with("no factor to sweep"), "{e}");
        let e = plan("stream", &args("--flows 1..100000 --msg-size 1..1M")).unwrap_err();
        assert!(e.contains("add --yes"), "{e}");
        // A value the test refuses is found before anything runs, naming the point.
        let e = plan("stream", &args("--send-path copy,carrier-pigeon")).unwrap_err();
        assert!(e.contains("--send-path carrier-pigeon"), "{e}");
        let e = plan("udp", &args("--msg-size 10,100 --perturb 0")).unwrap_err();
        assert!(e.contains("--msg-size 10"), "{e}");
        // A test flag refused whatever the point is blamed itself, not the first point.
        let e = plan("stream", &args("--msg-size 1K..1M --warmup 100000")).unwrap_err();
        assert!(e.starts_with("--warmup 100000 s: must be"), "{e}");
    }

    #[test]
    fn recv_wait_is_a_named_factor_of_stream() {
        use wirebench_model::spec::{RecvWait, WorkloadSpec};
        let p = plan("stream", &args("-t 1 --recv-wait block,nap,auto")).unwrap();
        let waits: Vec<RecvWait> = p
            .points
            .iter()
            .map(|x| match point_spec(&x.argv).unwrap().0.workload {
                WorkloadSpec::Stream(s) => s.recv_wait,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(waits, [RecvWait::Block, RecvWait::Nap, RecvWait::Auto]);
        let e = plan("rr", &args("--recv-wait block,nap")).unwrap_err();
        assert_eq!(e, "--recv-wait is not a factor of `rr`");
        let e = plan("stream", &args("--recv-wait block,sometimes")).unwrap_err();
        assert!(e.contains("sometimes"), "{e}");
        assert!(FactorName::RecvWait.is_named() && !FactorName::Window.is_named());
    }

    #[test]
    fn buffer_offset_is_a_numeric_factor_of_every_test() {
        let p = plan("stream", &args("-t 1 --buffer-offset 0,16,64,256,2048")).unwrap();
        let offsets: Vec<Option<u32>> = p
            .points
            .iter()
            .map(|pt| point_spec(&pt.argv).unwrap().0.common.buffer_offset_bytes)
            .collect();
        assert_eq!(
            offsets,
            [Some(0), Some(16), Some(64), Some(256), Some(2048)]
        );
        for test in ["rr", "crr", "udp"] {
            assert!(plan(test, &args("--buffer-offset 0,16")).is_ok(), "{test}");
        }
        assert!(!FactorName::BufferOffset.is_named());
        let e = plan("stream", &args("--buffer-offset 0,4096")).unwrap_err();
        assert!(e.contains("--buffer-offset"), "{e}");
    }

    #[test]
    fn notsent_lowat_is_a_size_factor_of_the_tcp_tests() {
        use wirebench_model::spec::WorkloadSpec;
        let p = plan("stream", &args("-t 1 --notsent-lowat 16K,128K")).unwrap();
        let lowats: Vec<Option<u32>> = p
            .points
            .iter()
            .map(|x| match point_spec(&x.argv).unwrap().0.workload {
                WorkloadSpec::Stream(s) => s.tcp.notsent_lowat_bytes,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(lowats, [Some(16 << 10), Some(128 << 10)]);
        assert!(plan("rr", &args("--notsent-lowat 16K")).is_ok());
        let e = plan("udp", &args("--notsent-lowat 16K")).unwrap_err();
        assert_eq!(e, "--notsent-lowat is not a factor of `udp`");
        assert!(!FactorName::NotsentLowat.is_named());
    }

    #[test]
    fn busy_poll_is_a_named_factor_of_rr() {
        let p = plan("rr", &args("-t 1 -A 0,1 --busy-poll off,0,50")).unwrap();
        let flat: Vec<String> = p.points.iter().map(|x| x.argv[5..].join(" ")).collect();
        assert_eq!(flat, ["--busy-poll off", "--busy-poll 0", "--busy-poll 50"]);
        // Each point's spec carries what its flag says.
        let busy: Vec<_> = p
            .points
            .iter()
            .map(|x| point_spec(&x.argv).unwrap().0.workload.busy_poll())
            .collect();
        assert_eq!(busy[0], None);
        assert_eq!(busy[1].map(|b| b.so_busy_poll_us), Some(0));
        assert_eq!(busy[2].map(|b| b.so_busy_poll_us), Some(50));
        assert!(plan("rr", &args("--udp --busy-poll off,50")).is_ok());
        let e = plan("stream", &args("--busy-poll off,50")).unwrap_err();
        assert_eq!(e, "--busy-poll is not a factor of `stream`");
        let e = plan("rr", &args("--busy-poll off,sometimes")).unwrap_err();
        assert!(e.contains("--busy-poll sometimes"), "{e}");
        // Beyond the spec's bound (a millisecond), refused naming the flag and the unit.
        let e = plan("rr", &args("--busy-poll 50,5000")).unwrap_err();
        assert!(e.contains("--busy-poll") && e.contains("µs"), "{e}");
    }

    #[test]
    fn udp_sizes_are_clipped_to_the_header() {
        let p = plan("udp", &args("--msg-size 24,1400")).unwrap();
        let v: Vec<u64> = p.factors[0]
            .values
            .iter()
            .filter_map(|v| v.number())
            .collect();
        assert_eq!(v, vec![24, 27, 1397, 1400, 1403]);
    }
}
