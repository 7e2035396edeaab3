//! A mesh's plan: its hosts, topology, tests, repetitions and period, from `--hosts` and
//! the test flags after `--`, or from a plan file (TOML, unknown keys refused).
//!
//! ```toml
//! hosts = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
//! port = 5301                    # the daemons' port (default 5301)
//! topology = "incast"            # full-mesh (default), star, incast, ring, pairs
//! center = "10.0.0.1"            # star and incast: the server
//! # pairs = [["10.0.0.1", "10.0.0.2"]]   # pairs: (client, server)
//! repeat = 2                     # the whole plan, this many times (default 1)
//! every = "10m"                  # run the plan again every DURATION (default once)
//! overlap = "exclusive"          # or "latency-beside-throughput"
//! [[test]]
//! line = "stream -t 5 -P 2"
//! ```

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use wirebench_fleet::{JobClass, Overlap, Topology};
use wirebench_model::spec::{TestSpec, WorkloadKind};

use crate::args::{ClientArgs, TestCommand, TestLine};

/// The test a mesh runs when none is given.
pub const DEFAULT_TEST: &str = "stream -t 5";

/// One of the plan's tests.
#[derive(Debug, Clone)]
pub struct PlanTest {
    /// Its command line as written (`stream -t 5`).
    pub line: String,
    /// The spec it asks for.
    pub spec: TestSpec,
    /// Throughput (stream, udp) or latency-only (rr, crr).
    pub class: JobClass,
}

/// A checked plan, its hosts not yet resolved.
#[derive(Debug, Clone)]
pub struct MeshPlan {
    /// The hosts as given (address, `address:port`, or a DNS name of one or several).
    pub hosts: Vec<String>,
    /// The daemons' port where a host names none.
    pub port: u16,
    /// How hosts are paired (indices into the resolved hosts).
    pub topology: TopologyChoice,
    /// The tests, each run for every pair.
    pub tests: Vec<PlanTest>,
    /// How many times the plan runs in one round.
    pub repeat: u32,
    /// Run the plan again every this long (`None`: once).
    pub every: Option<Duration>,
    /// Whether latency-only tests may share a host with a throughput test.
    pub overlap: Overlap,
}

/// The topology before the hosts are resolved: centers and pairs name hosts as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopologyChoice {
    /// Every ordered pair.
    FullMesh,
    /// Every other host to the center, one at a time.
    Star(String),
    /// Every other host to the center, all at once.
    Incast(String),
    /// Host i to host i+1.
    Ring,
    /// Explicit (client, server) pairs.
    Pairs(Vec<(String, String)>),
}

impl TopologyChoice {
    /// The plan file's name of the topology.
    pub fn name(&self) -> &'static str {
        match self {
            TopologyChoice::FullMesh => "full-mesh",
            TopologyChoice::Star(_) => "star",
            TopologyChoice::Incast(_) => "incast",
            TopologyChoice::Ring => "ring",
            TopologyChoice::Pairs(_) => "pairs",
        }
    }
}

/// The plan file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    hosts: Vec<String>,
    port: Option<u16>,
    topology: Option<String>,
    center: Option<String>,
    pairs: Option<Vec<[String; 2]>>,
    repeat: Option<u32>,
    every: Option<String>,
    overlap: Option<String>,
    #[serde(default)]
    test: Vec<TestEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TestEntry {
    line: String,
}

/// Parses a period: a number of seconds, or a number with `s`, `m`, `h` or `d` (`10m`).
pub fn parse_every(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], c),
        _ => (t, 's'),
    };
    let scale = match unit {
        's' => 1.0,
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86400.0,
        _ => {
            return Err(format!(
                "'{s}': a period is seconds, or a number with s, m, h or d"
            ))
        }
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v * scale <= 366.0 * 86400.0 => {
            Ok(Duration::from_secs_f64(v * scale))
        }
        _ => Err(format!(
            "'{s}': a period is a positive number of seconds (at most a year), or with s, m, h or d"
        )),
    }
}

/// One test line checked: it parses as a test command, sets none of the flags the mesh
/// sets itself, and its spec is valid.
pub fn test_of(line: &str) -> Result<PlanTest, String> {
    use clap::Parser as _;
    let words: Vec<String> = line.split_whitespace().map(String::from).collect();
    if words.is_empty() {
        return Err("a test line is empty (e.g. `stream -t 5`)".into());
    }
    // Before parsing: clap would ask for the -H that --from requires.
    if words
        .iter()
        .any(|w| w == "--from" || w.starts_with("--from="))
    {
        return Err(format!(
            "test `{line}`: --from is the mesh's own (each pair's client host runs the test)"
        ));
    }
    let full = std::iter::once("wirebench".to_string()).chain(words.iter().cloned());
    let parsed = TestLine::try_parse_from(full)
        .map_err(|e| format!("test `{line}`: {}", crate::args::first_line(&e.to_string())))?;
    let c: &ClientArgs = match &parsed.test {
        TestCommand::Stream(a) => &a.c,
        TestCommand::Rr(a) => &a.c,
        TestCommand::Crr(a) => &a.c,
        TestCommand::Udp(a) => &a.c,
    };
    let owned = [
        (c.host.is_some(), "-H/--host"),
        (c.port.is_some(), "-p/--port"),
        (c.output.is_some(), "-o/--output"),
        (c.json, "--json"),
        (c.json_stream, "--json-stream"),
        (c.csv, "--csv"),
        (c.auth.is_some(), "--auth"),
        (c.from.is_some(), "--from"),
    ];
    if let Some((_, flag)) = owned.iter().find(|(set, _)| *set) {
        return Err(format!(
            "test `{line}`: {flag} is the mesh's own (give it to `wirebench mesh`, or leave \
             it out: the mesh sets it per pair)"
        ));
    }
    let (spec, _, load) =
        crate::sweep::plan::point_spec(&words).map_err(|e| format!("test `{line}`: {e}"))?;
    if load.is_some() {
        return Err(format!(
            "test `{line}`: --under-load runs on one host pair of its own, not in a mesh"
        ));
    }
    let class = match spec.kind() {
        WorkloadKind::Stream | WorkloadKind::UdpStream => JobClass::Throughput,
        WorkloadKind::Rr | WorkloadKind::Crr | WorkloadKind::UdpRr => JobClass::LatencyOnly,
    };
    Ok(PlanTest {
        line: words.join(" "),
        spec,
        class,
    })
}

/// The plan of `--hosts A,B,C` and the test words after `--` (default [`DEFAULT_TEST`]).
pub fn from_flags(
    hosts: &[String],
    port: Option<u16>,
    test_words: &[String],
    every: Option<Duration>,
) -> Result<MeshPlan, String> {
    let line = if test_words.is_empty() {
        DEFAULT_TEST.to_string()
    } else {
        test_words.join(" ")
    };
    let hosts: Vec<String> = hosts
        .iter()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .collect();
    if hosts.is_empty() {
        return Err("--hosts names no host".into());
    }
    Ok(MeshPlan {
        hosts,
        port: port.unwrap_or(wirebench_net::DEFAULT_PORT),
        topology: TopologyChoice::FullMesh,
        tests: vec![test_of(&line)?],
        repeat: 1,
        every,
        overlap: Overlap::Exclusive,
    })
}

/// The plan of a plan file's text; `port` (the command line's `--port`) wins over the
/// file's. Errors name the key.
pub fn from_toml(text: &str, port: Option<u16>) -> Result<MeshPlan, String> {
    let f: PlanFile = toml::from_str(text).map_err(|e| e.message().to_string())?;
    if f.hosts.is_empty() {
        return Err("`hosts` is empty".into());
    }
    let topology = match f.topology.as_deref().unwrap_or("full-mesh") {
        "full-mesh" => TopologyChoice::FullMesh,
        "ring" => TopologyChoice::Ring,
        t @ ("star" | "incast") => {
            let center = f
                .center
                .clone()
                .ok_or_else(|| format!("topology \"{t}\" needs `center` (one of `hosts`)"))?;
            if t == "star" {
                TopologyChoice::Star(center)
            } else {
                TopologyChoice::Incast(center)
            }
        }
        "pairs" => TopologyChoice::Pairs(
            f.pairs
                .clone()
                .ok_or("topology \"pairs\" needs `pairs = [[CLIENT, SERVER], ...]`")?
                .into_iter()
                .map(|[c, s]| (c, s))
                .collect(),
        ),
        other => {
            return Err(format!(
                "`topology`: \"{other}\" is not one of full-mesh, star, incast, ring, pairs"
            ))
        }
    };
    if f.center.is_some()
        && !matches!(
            topology,
            TopologyChoice::Star(_) | TopologyChoice::Incast(_)
        )
    {
        return Err(format!(
            "`center` applies to star and incast, not {}",
            topology.name()
        ));
    }
    if f.pairs.is_some() && !matches!(topology, TopologyChoice::Pairs(_)) {
        return Err(format!(
            "`pairs` applies to topology \"pairs\", not {}",
            topology.name()
        ));
    }
    let overlap = match f.overlap.as_deref().unwrap_or("exclusive") {
        "exclusive" => Overlap::Exclusive,
        "latency-beside-throughput" => Overlap::LatencyBesideThroughput,
        other => {
            return Err(format!(
                "`overlap`: \"{other}\" is not one of exclusive, latency-beside-throughput"
            ))
        }
    };
    let repeat = f.repeat.unwrap_or(1);
    if repeat == 0 {
        return Err("`repeat` is 0: a plan runs at least once".into());
    }
    let every = f
        .every
        .as_deref()
        .map(parse_every)
        .transpose()
        .map_err(|e| format!("`every`: {e}"))?;
    let lines: Vec<String> = if f.test.is_empty() {
        vec![DEFAULT_TEST.to_string()]
    } else {
        f.test.into_iter().map(|t| t.line).collect()
    };
    Ok(MeshPlan {
        hosts: f.hosts,
        port: port.or(f.port).unwrap_or(wirebench_net::DEFAULT_PORT),
        topology,
        tests: lines.iter().map(|l| test_of(l)).collect::<Result<_, _>>()?,
        repeat,
        every,
        overlap,
    })
}

/// The plan of a plan file.
pub fn from_file(path: &Path, port: Option<u16>) -> Result<MeshPlan, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    from_toml(&text, port).map_err(|e| format!("{}: {e}", path.display()))
}

/// The hosts resolved: each entry's addresses (a DNS name of several gives them all, in
/// address order), with the plan's port where the entry names none; duplicates refused.
/// Also the index of each entry's first address (for centers and pairs).
pub fn resolve_hosts(plan: &MeshPlan) -> Result<(Vec<SocketAddr>, Vec<usize>), String> {
    let mut out: Vec<SocketAddr> = Vec::new();
    let mut first = Vec::new();
    for h in &plan.hosts {
        let mut addrs: Vec<SocketAddr> = match h.parse::<SocketAddr>() {
            Ok(a) => vec![a],
            Err(_) => {
                let host = h.trim_start_matches('[').trim_end_matches(']');
                (host, plan.port)
                    .to_socket_addrs()
                    .map_err(|e| format!("host '{h}' cannot be resolved: {e}"))?
                    .collect()
            }
        };
        addrs.sort();
        addrs.dedup();
        if addrs.is_empty() {
            return Err(format!("host '{h}' resolves to no address"));
        }
        first.push(out.len());
        for a in addrs {
            if out.contains(&a) {
                return Err(format!("host {a} is listed twice (from '{h}')"));
            }
            out.push(a);
        }
    }
    Ok((out, first))
}

/// The fleet's topology over the resolved hosts (`first`: each plan entry's first index).
pub fn topology_of(plan: &MeshPlan, first: &[usize]) -> Result<Topology, String> {
    let index = |name: &str, what: &str| -> Result<usize, String> {
        plan.hosts
            .iter()
            .position(|h| h == name)
            .map(|i| first[i])
            .ok_or_else(|| format!("`{what}`: \"{name}\" is not one of `hosts`"))
    };
    Ok(match &plan.topology {
        TopologyChoice::FullMesh => Topology::FullMesh,
        TopologyChoice::Ring => Topology::Ring,
        TopologyChoice::Star(c) => Topology::Star {
            center: index(c, "center")?,
        },
        TopologyChoice::Incast(c) => Topology::Incast {
            center: index(c, "center")?,
        },
        TopologyChoice::Pairs(p) => Topology::Pairs(
            p.iter()
                .map(|(c, s)| Ok((index(c, "pairs")?, index(s, "pairs")?)))
                .collect::<Result<_, String>>()?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_file_gives_its_plan() {
        let p = from_toml(
            r#"
hosts = ["10.9.0.1", "10.9.0.2", "10.9.0.3"]
port = 6000
topology = "incast"
center = "10.9.0.2"
repeat = 2
every = "10m"
overlap = "latency-beside-throughput"
[[test]]
line = "stream -t 2 -P 2"
[[test]]
line = "rr -t 1"
"#,
            None,
        )
        .unwrap();
        assert_eq!(p.port, 6000);
        assert_eq!(p.topology, TopologyChoice::Incast("10.9.0.2".into()));
        assert_eq!((p.repeat, p.every), (2, Some(Duration::from_secs(600))));
        assert_eq!(p.overlap, Overlap::LatencyBesideThroughput);
        let classes: Vec<JobClass> = p.tests.iter().map(|t| t.class).collect();
        assert_eq!(classes, [JobClass::Throughput, JobClass::LatencyOnly]);
        assert_eq!(p.tests[0].spec.common.duration_ms, 2000);
        let (addrs, first) = resolve_hosts(&p).unwrap();
        assert_eq!(addrs[1], "10.9.0.2:6000".parse().unwrap());
        assert_eq!(
            topology_of(&p, &first).unwrap(),
            Topology::Incast { center: 1 }
        );
        // The command line's --port wins.
        let q = from_toml("hosts = [\"10.9.0.1\", \"10.9.0.2:7000\"]", Some(5000)).unwrap();
        let (addrs, _) = resolve_hosts(&q).unwrap();
        assert_eq!(addrs[0].port(), 5000);
        assert_eq!(addrs[1].port(), 7000, "a host's own port wins");
        assert_eq!(q.tests[0].line, DEFAULT_TEST);
    }

    #[test]
    fn bad_plans_are_refused_naming_the_key() {
        let err = |t: &str| from_toml(t, None).unwrap_err();
        let h = "hosts = [\"10.9.0.1\", \"10.9.0.2\"]\n";
        assert!(
            err(&format!("{h}colour = 1")).contains("colour"),
            "{}",
            err(&format!("{h}colour = 1"))
        );
        assert!(err(&format!("{h}[[test]]\nline = \"stream\"\nlines = 1")).contains("lines"));
        assert!(err(&format!("{h}topology = \"tree\"")).contains("`topology`: \"tree\""));
        assert!(err(&format!("{h}topology = \"star\"")).contains("needs `center`"));
        assert!(err(&format!("{h}center = \"10.9.0.1\"")).contains("`center` applies"));
        assert!(err(&format!("{h}overlap = \"yes\"")).contains("`overlap`"));
        assert!(err(&format!("{h}repeat = 0")).contains("`repeat` is 0"));
        assert!(err(&format!("{h}every = \"5x\"")).contains("`every`"));
        assert!(err(&format!("{h}[[test]]\nline = \"stream -H x\""))
            .contains("-H/--host is the mesh's own"));
        assert!(err(&format!("{h}[[test]]\nline = \"rr --from 10.9.0.1\""))
            .contains("--from is the mesh's own"));
        assert!(err(&format!("{h}[[test]]\nline = \"nope\"")).contains("test `nope`"));
        assert!(
            err(&format!("{h}[[test]]\nline = \"stream -t -1\"")).contains("test `stream -t -1`")
        );
        assert!(err("hosts = []").contains("`hosts` is empty"));
        let p = from_toml(
            &format!("{h}topology = \"pairs\"\npairs = [[\"10.9.0.1\", \"10.9.0.3\"]]"),
            None,
        )
        .unwrap();
        let (_, first) = resolve_hosts(&p).unwrap();
        assert!(topology_of(&p, &first)
            .unwrap_err()
            .contains("\"10.9.0.3\" is not one of `hosts`"));
        let port = wirebench_net::DEFAULT_PORT;
        let dup = from_flags(
            &["10.9.0.1".into(), format!("10.9.0.1:{port}")],
            None,
            &[],
            None,
        )
        .unwrap();
        assert!(resolve_hosts(&dup).unwrap_err().contains("listed twice"));
    }

    #[test]
    fn periods_parse_with_their_unit() {
        assert_eq!(parse_every("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_every("1.5m"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_every("2h"), Ok(Duration::from_secs(7200)));
        assert!(parse_every("0").is_err());
        assert!(parse_every("-1s").is_err());
        assert!(parse_every("3w").is_err());
    }
}
