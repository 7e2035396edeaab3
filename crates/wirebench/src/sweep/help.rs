//! The text after `wirebench sweep --help`: the factors (from [`FactorName::ALL`]), the
//! sweep's own options, and every flag a point accepts, read from the test subcommands'
//! clap definitions so that the list cannot fall behind them.

use std::collections::BTreeSet;

use wirebench_model::spec::WorkloadKind;
use wirebench_model::sweep::FactorName;

/// The test commands a sweep runs.
pub const TESTS: [&str; 4] = ["stream", "rr", "crr", "udp"];

/// The flags the sweep takes for itself (not passed to the points), as `sweep --help` lists
/// them under "Sweep options".
pub const SWEEP_OPTIONS: &str = "\
Sweep options:
  --points-per-octave N   points per doubling of a range (default 4)
  --perturb D             also measure message sizes at -D and +D bytes (NetPIPE; default 3, 0 off)
  --point-time S          first length of a point (default 0.5 s); -t fixes every point's length
  --min-count N           a point runs longer (up to --max-point-time S, default 4 s) until it
                          counts N calls, datagrams or transactions (default 2000)
  --no-remeasure          do not re-measure dip candidates
  --dry-run               print the points, the estimated time and each point's command; run nothing
  --yes                   run a grid of more than 10000 points
  --json | --csv          one SweepResult document, or a CSV row per point, on stdout
  -o/--output DIR         write DIR/sweep.json, DIR/points.csv, DIR/points/NNNN.json as points complete
  --force                 with -o DIR: replace the sweep DIR holds
  --resume DIR            continue an interrupted sweep written with -o DIR
";

/// The long flags the sweep takes for itself; a test flag of the same name is not passed.
pub const SWEEP_FLAGS: [&str; 4] = ["--json", "--csv", "--output", "--force"];

/// The test command of a workload.
fn command_of(k: WorkloadKind) -> &'static str {
    match k {
        WorkloadKind::Stream => "stream",
        WorkloadKind::Rr => "rr",
        WorkloadKind::UdpRr => "rr --udp",
        WorkloadKind::Crr => "crr",
        WorkloadKind::UdpStream => "udp",
    }
}

/// A test's flags as `-H/--host` (long flags; help and version left out), in definition order.
pub fn test_flags(test: &clap::Command) -> Vec<(String, String)> {
    test.get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| {
            let long = format!("--{}", a.get_long()?);
            if matches!(long.as_str(), "--help" | "--version") {
                return None;
            }
            let shown = match a.get_short() {
                Some(s) => format!("-{s}/{long}"),
                None => long.clone(),
            };
            Some((long, shown))
        })
        .collect()
}

/// `items` joined by ", " in lines of at most 100 columns, each starting with `indent`.
fn wrap(indent: &str, items: &[String]) -> String {
    let mut out = String::new();
    let mut line = indent.to_string();
    for (i, it) in items.iter().enumerate() {
        let piece = if i + 1 < items.len() {
            format!("{it}, ")
        } else {
            it.clone()
        };
        if line.len() + piece.trim_end().len() > 100 && !line.trim().is_empty() {
            out.push_str(line.trim_end());
            out.push('\n');
            line = indent.to_string();
        }
        line.push_str(&piece);
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// The whole text after `sweep --help`, from the command tree `root` (`wirebench`).
pub fn after_help(root: &clap::Command) -> String {
    let mut t = String::from(
        "Factors (a range LO..HI, geometric with --points-per-octave per doubling, or a list \
         A,B,C;\nseveral factors make a full grid, the last varying fastest):\n",
    );
    let factors: Vec<String> = FactorName::ALL
        .iter()
        .map(|f| {
            let mut tests: Vec<&str> = f.tests().iter().map(|&k| command_of(k)).collect();
            tests.dedup();
            format!("{} ({})", f.flag(), tests.join(", "))
        })
        .collect();
    t.push_str(&wrap("  ", &factors));
    t.push_str(SWEEP_OPTIONS);
    t.push_str(
        "Test flags (each point takes the flags of `wirebench TEST`; see its --help for what they \
         do):\n",
    );
    let factor_flags: BTreeSet<&str> = FactorName::ALL.iter().map(|f| f.flag()).collect();
    let per_test: Vec<Vec<(String, String)>> = TESTS
        .iter()
        .map(|name| {
            root.find_subcommand(name)
                .map(test_flags)
                .unwrap_or_default()
                .into_iter()
                .filter(|(long, _)| {
                    !factor_flags.contains(long.as_str()) && !SWEEP_FLAGS.contains(&long.as_str())
                })
                .collect()
        })
        .collect();
    let in_all = |long: &str| per_test.iter().all(|f| f.iter().any(|(l, _)| l == long));
    let common: Vec<String> = per_test[0]
        .iter()
        .filter(|(l, _)| in_all(l))
        .map(|(_, s)| s.clone())
        .collect();
    t.push_str(&format!("  every test ({}):\n", TESTS.join(", ")));
    t.push_str(&wrap("    ", &common));
    for (name, flags) in TESTS.iter().zip(&per_test) {
        let own: Vec<String> = flags
            .iter()
            .filter(|(l, _)| !in_all(l))
            .map(|(_, s)| s.clone())
            .collect();
        if !own.is_empty() {
            t.push_str(&format!("  {name}:\n"));
            t.push_str(&wrap("    ", &own));
        }
    }
    t.push_str("Example: wirebench sweep stream -H server --msg-size 1..4M --flows 1,4 --dry-run");
    t
}
