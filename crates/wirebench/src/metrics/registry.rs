//! The metrics' state (the last result per series, counts per status) and its exposition
//! through prometheus-client.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use wirebench_analysis::compare::values;
use wirebench_model::compare::Figure;
use wirebench_model::result::RunStatus;
use wirebench_model::side::HostRole;
use wirebench_net::daemon::{DaemonStats, RefusalReason};
use wirebench_stats::hypothesis::median;

use super::StatusCounts;

/// (peer, workload, direction) series kept at most; the one updated longest ago goes first.
pub const MAX_SERIES: usize = 256;

/// Labels of one series.
type Labels = Vec<(String, String)>;

/// A family of float gauges.
type GaugeFamily = Family<Labels, Gauge<f64, AtomicU64>>;

/// The last result of one (peer, workload, direction).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Series {
    pub(crate) peer: String,
    pub(crate) workload: String,
    pub(crate) direction: String,
    pub(crate) status: &'static str,
    pub(crate) ended_unix_s: f64,
    /// Figure name (see [`Figure::name`]) and value, in the metric's unit.
    pub(crate) figures: Vec<(Figure, f64)>,
    /// CPU busy at each end, 0–1 of all its CPUs.
    pub(crate) cpu_busy: Vec<(HostRole, f64)>,
}

impl Series {
    /// The series a daemon record (one JSON line) updates.
    pub(crate) fn of_record(line: &str) -> Result<Series, String> {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let r = crate::history::cmds::from_record(line)?;
        let spec = r.spec.as_ref().ok_or("no spec")?;
        // Identity when authenticated, else the address without its port (a port per test
        // would be a series per test).
        let peer = v
            .get("identity")
            .and_then(|i| i.as_str())
            .map(str::to_string)
            .or_else(|| {
                v.get("peer")
                    .and_then(|p| p.as_str())
                    .and_then(|p| p.parse::<std::net::SocketAddr>().ok())
                    .map(|a| a.ip().to_canonical().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let status = match v.get("status").and_then(|s| s.as_str()) {
            Some("completed") => "completed",
            Some("aborted") => "aborted",
            _ => "failed",
        };
        let ended_unix_s = v
            .get("ended_unix_ms")
            .and_then(|t| t.as_u64())
            .map_or(0.0, |ms| ms as f64 / 1000.0);
        let figures = values(std::slice::from_ref(&r))
            .into_iter()
            .filter_map(|(f, vals)| {
                let m = median(&vals.runs);
                m.is_finite().then_some((f, m))
            })
            .collect();
        let cpu_busy = r
            .runs
            .iter()
            .filter(|run| run.status == RunStatus::Completed)
            .filter_map(|run| run.summary.as_ref())
            .flat_map(|s| &s.cpu)
            .map(|c| (c.host, c.system_busy_pct / 100.0))
            .collect();
        Ok(Series {
            peer,
            workload: spec.kind().as_str().to_string(),
            direction: format!("{:?}", spec.direction()).to_lowercase(),
            status,
            ended_unix_s,
            figures,
            cpu_busy,
        })
    }

    fn key(&self) -> (String, String, String) {
        (
            self.peer.clone(),
            self.workload.clone(),
            self.direction.clone(),
        )
    }

    fn labels(&self) -> Labels {
        vec![
            ("peer".into(), self.peer.clone()),
            ("workload".into(), self.workload.clone()),
            ("direction".into(), self.direction.clone()),
        ]
    }
}

/// The last series and the counts of every record seen.
#[derive(Debug, Default)]
pub(crate) struct Table {
    /// Series by key, with the update sequence number that decides eviction.
    series: HashMap<(String, String, String), (u64, Series)>,
    seq: u64,
    pub(crate) records: StatusCounts,
    pub(crate) evicted: u64,
}

impl Table {
    /// Keep `s` as its key's last result (evicting the oldest series past [`MAX_SERIES`]).
    pub(crate) fn update(&mut self, s: Series) {
        *self.records.entry(s.status).or_insert(0) += 1;
        self.seq += 1;
        let key = s.key();
        if !self.series.contains_key(&key) && self.series.len() >= MAX_SERIES {
            if let Some(oldest) = self
                .series
                .iter()
                .min_by_key(|(_, (seq, _))| *seq)
                .map(|(k, _)| k.clone())
            {
                self.series.remove(&oldest);
                self.evicted += 1;
            }
        }
        // A test without figures (aborted, failed) moves the timestamp only: the last
        // completed test's figures stay.
        let s = match self.series.get(&key) {
            Some((_, old)) if s.figures.is_empty() => Series {
                figures: old.figures.clone(),
                cpu_busy: old.cpu_busy.clone(),
                ..s
            },
            _ => s,
        };
        self.series.insert(key, (self.seq, s));
    }

    /// How many series are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.series.len()
    }
}

/// The daemon's side of a scrape.
pub(crate) struct Health {
    pub(crate) stats: DaemonStats,
    pub(crate) refusals: Vec<(RefusalReason, u64)>,
    pub(crate) open_fds: Option<u64>,
    pub(crate) resident_bytes: Option<u64>,
}

fn gauge_family(
    reg: &mut Registry,
    name: &str,
    help: &str,
) -> Family<Labels, Gauge<f64, AtomicU64>> {
    let f = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    reg.register(name, help, f.clone());
    f
}

fn figure_metric(f: Figure) -> (&'static str, &'static str, f64) {
    // (name, help, factor from the figure's unit to the metric's)
    match f {
        Figure::Throughput => (
            "wirebench_last_throughput_bytes_per_second",
            "Receiver throughput (payload) of the peer's last test, all directions summed, bytes/s",
            1.0 / 8.0,
        ),
        Figure::TransactionsPerS => (
            "wirebench_last_transactions_per_second",
            "Transactions per second of the peer's last request/response test",
            1.0,
        ),
        Figure::RttP50 => (
            "wirebench_last_rtt_p50_seconds",
            "Median round trip of the peer's last request/response test, seconds",
            1e-9,
        ),
        Figure::RttP99 => (
            "wirebench_last_rtt_p99_seconds",
            "99th percentile round trip of the peer's last request/response test, seconds",
            1e-9,
        ),
        Figure::Loss => (
            "wirebench_last_loss_ratio",
            "UDP datagrams lost in the peer's last test, fraction of those sent",
            0.01,
        ),
        Figure::Retransmits => (
            "wirebench_last_retransmits",
            "TCP segments the senders retransmitted in the peer's last test",
            1.0,
        ),
        Figure::ServiceDemandClient => (
            "wirebench_last_service_demand_client",
            "Client service demand of the peer's last test (CPU us per KB or per transaction)",
            1.0,
        ),
        Figure::ServiceDemandServer => (
            "wirebench_last_service_demand_server",
            "Server service demand of the peer's last test (CPU us per KB or per transaction)",
            1.0,
        ),
    }
}

/// The OpenMetrics text of `table` and `health`.
pub(crate) fn exposition(table: &Table, health: Option<&Health>) -> String {
    let mut reg = Registry::default();
    let figure_families: Vec<(Figure, GaugeFamily, f64)> = Figure::ALL
        .iter()
        .map(|&f| {
            let (name, help, factor) = figure_metric(f);
            (f, gauge_family(&mut reg, name, help), factor)
        })
        .collect();
    let cpu = gauge_family(
        &mut reg,
        "wirebench_last_cpu_busy_ratio",
        "CPU busy at one end of the peer's last test, fraction of that host's CPUs",
    );
    let ended = gauge_family(
        &mut reg,
        "wirebench_last_result_timestamp_seconds",
        "When the peer's last test ended, Unix seconds",
    );
    for (_, s) in table.series.values() {
        let labels = s.labels();
        for (f, fam, factor) in &figure_families {
            if let Some((_, v)) = s.figures.iter().find(|(g, _)| g == f) {
                fam.get_or_create(&labels).set(v * factor);
            }
        }
        for (host, busy) in &s.cpu_busy {
            let mut l = labels.clone();
            l.push(("host".into(), format!("{host:?}").to_lowercase()));
            cpu.get_or_create(&l).set(*busy);
        }
        ended.get_or_create(&labels).set(s.ended_unix_s);
    }
    let tests = Family::<Labels, Counter>::default();
    reg.register(
        "wirebench_tests_recorded",
        "Tests the daemon recorded since it started, by how they ended",
        tests.clone(),
    );
    for (status, n) in &table.records {
        tests
            .get_or_create(&vec![("status".into(), (*status).to_string())])
            .inc_by(*n);
    }
    let evicted = Counter::<u64>::default();
    evicted.inc_by(table.evicted);
    reg.register(
        "wirebench_metrics_series_evicted",
        "Last-result series dropped to keep at most 256 (peer, workload, direction)",
        evicted,
    );
    if let Some(h) = health {
        let refusals = Family::<Labels, Counter>::default();
        reg.register(
            "wirebench_refusals",
            "Connections and tests the daemon refused, by reason",
            refusals.clone(),
        );
        for (why, n) in &h.refusals {
            refusals
                .get_or_create(&vec![("reason".into(), why.label())])
                .inc_by(*n);
        }
        let g = |reg: &mut Registry, name: &str, help: &str, v: f64| {
            let x = Gauge::<f64, AtomicU64>::default();
            x.set(v);
            reg.register(name, help, x);
        };
        g(
            &mut reg,
            "wirebench_running_tests",
            "Tests running now",
            f64::from(h.stats.running_tests),
        );
        g(
            &mut reg,
            "wirebench_open_connections",
            "Connections the daemon handles now (control, data and handshaking)",
            h.stats.open_connections as f64,
        );
        if let Some(n) = h.open_fds {
            g(
                &mut reg,
                "process_open_fds",
                "Open file descriptors of the daemon",
                n as f64,
            );
        }
        if let Some(b) = h.resident_bytes {
            g(
                &mut reg,
                "process_resident_memory_bytes",
                "Resident memory of the daemon, bytes",
                b as f64,
            );
        }
    }
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = encode(&mut out, &reg);
    out
}

/// The Prometheus text format (0.0.4) of an OpenMetrics exposition, for scrapers and tools
/// that do not ask for OpenMetrics (`promtool check metrics`, curl): a counter's HELP and
/// TYPE name its `_total` sample, and OpenMetrics' `# UNIT` and `# EOF` lines go. Samples
/// are the same lines in both formats.
pub(crate) fn prometheus_text(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .iter()
            .find_map(|p| line.strip_prefix(p).map(|rest| (*p, rest)));
        match meta.and_then(|(p, rest)| Some((p, rest.split_once(' ')?))) {
            Some((p, (name, tail))) if counters.contains(name) => {
                out.push_str(&format!("{p}{name}_total {tail}\n"));
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(peer: &str, n: u64) -> Series {
        Series {
            peer: peer.into(),
            workload: "stream".into(),
            direction: "forward".into(),
            status: "completed",
            ended_unix_s: n as f64,
            figures: vec![(Figure::Throughput, 1e9 * n as f64), (Figure::RttP50, 2e4)],
            cpu_busy: vec![(HostRole::Server, 0.25)],
        }
    }

    #[test]
    fn series_are_bounded_and_the_oldest_goes_first() {
        let mut t = Table::default();
        for i in 0..(MAX_SERIES as u64 + 10) {
            t.update(series(&format!("10.0.{}.{}", i / 256, i % 256), i));
        }
        assert_eq!(t.len(), MAX_SERIES);
        assert_eq!(t.evicted, 10);
        assert!(!t.series.contains_key(&series("10.0.0.0", 0).key()));
        assert!(t.series.contains_key(&series("10.0.0.10", 0).key()));
        assert_eq!(t.records["completed"], MAX_SERIES as u64 + 10);
    }

    #[test]
    fn an_aborted_test_keeps_the_last_figures_and_moves_the_timestamp() {
        let mut t = Table::default();
        t.update(series("10.0.0.1", 3));
        let mut aborted = series("10.0.0.1", 5);
        aborted.status = "aborted";
        aborted.figures.clear();
        aborted.cpu_busy.clear();
        t.update(aborted);
        let (_, s) = &t.series[&series("10.0.0.1", 0).key()];
        assert_eq!(s.ended_unix_s, 5.0);
        assert_eq!(s.figures, series("10.0.0.1", 3).figures);
        assert_eq!((t.records["completed"], t.records["aborted"]), (1, 1));
    }

    #[test]
    fn the_exposition_has_each_figure_in_its_unit() {
        let mut t = Table::default();
        t.update(series("10.0.0.1", 3));
        let text = exposition(&t, None);
        // 3 Gbit/s in bytes/s.
        assert!(text.contains(
            "wirebench_last_throughput_bytes_per_second{peer=\"10.0.0.1\",workload=\"stream\",direction=\"forward\"} 375000000.0"
        ), "{text}");
        // 20 µs, in seconds.
        assert!(text.contains("wirebench_last_rtt_p50_seconds{peer=\"10.0.0.1\",workload=\"stream\",direction=\"forward\"} 2e-5")
            || text.contains("wirebench_last_rtt_p50_seconds{peer=\"10.0.0.1\",workload=\"stream\",direction=\"forward\"} 0.00002"), "{text}");
        assert!(text.contains("host=\"server\"} 0.25"), "{text}");
        assert!(
            text.contains("wirebench_tests_recorded_total{status=\"completed\"} 1"),
            "{text}"
        );
        assert!(text.trim_end().ends_with("# EOF"));
        let plain = prometheus_text(&text);
        assert!(
            plain.contains("# TYPE wirebench_tests_recorded_total counter\n"),
            "{plain}"
        );
        assert!(
            plain.contains("# HELP wirebench_tests_recorded_total Tests"),
            "{plain}"
        );
        assert!(!plain.contains("# EOF"));
        assert!(plain.contains("wirebench_tests_recorded_total{status=\"completed\"} 1\n"));
    }
}
