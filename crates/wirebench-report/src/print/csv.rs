//! CSV: one header per workload family and one row per run (× direction for the stream
//! workloads). Every family starts with the same columns — `started_utc, run, status,
//! workload, direction` — and ends with `error`; `run` is 1-based as in the human output;
//! `direction` uses the human names (`forward`, `reverse`; request/response: `forward`). An
//! empty cell means "not available". Lines end in `\n`; cells are quoted per RFC 4180.

use wirebench_model::profile::{ProfileCategory, ProfileCost};
use wirebench_model::result::{IntervalRow, RunRecord, RunResult, Summary, WorkloadSummary};
use wirebench_model::side::HostRole;
use wirebench_model::spec::{TestSpec, WorkloadKind, WorkloadSpec};

use super::{end_cpu, status_name, text};
use crate::label;
use wirebench_analysis::addresses;

/// The columns every family starts with.
const LEAD: &str = "started_utc,run,status,workload,direction";

/// Columns of the stream family after [`LEAD`].
const STREAM: &str = "flows,receiver_throughput_bps,sender_throughput_bps,receiver_bytes,\
    sender_bytes,retransmits,client_cpu_busy_pct,server_cpu_busy_pct,client_sd_us_per_kb,\
    server_sd_us_per_kb,congestion,send_size_bytes,recv_size_bytes,duration_ms";

/// Columns of the request/response family after [`LEAD`].
const RR: &str = "flows,transactions,transactions_per_s,rtt_min_ns,rtt_mean_ns,rtt_p50_ns,\
    rtt_p90_ns,rtt_p99_ns,rtt_p999_ns,rtt_max_ns,lost,errors,client_cpu_busy_pct,\
    server_cpu_busy_pct,client_sd_us_per_tx,server_sd_us_per_tx,request_size_bytes,\
    response_size_bytes,duration_ms";

/// Columns of the UDP stream family after [`LEAD`].
const UDP: &str = "flows,datagram_bytes,sender_rate_bps,receiver_rate_bps,window_sent,\
    window_received,window_lost,window_loss_pct,late,duplicate,jitter_max_ns,\
    invalid_datagrams,lost_total,refused_at_sender,dropped_at_receiving_sockets,\
    dropped_by_receiving_host,lost_in_path,client_cpu_busy_pct,server_cpu_busy_pct,\
    duration_ms";

/// The CSV header line (without the line break) of a workload's family; the stream family
/// when the workload is unknown.
pub fn csv_header(kind: Option<WorkloadKind>) -> String {
    csv_header_for(kind, false)
}

/// [`csv_header`], with the profile columns before `error` when `profiled` (the spec asked
/// for `--profile`): `profile_hz` and `profile_expected_cost_pct` (the sampling rate and its
/// expected cost, % of one CPU per sampled CPU; empty when not measured or unresolved), then
/// for the client and the server, for every category (its key, e.g. `copy`,
/// `memory_management`), `<end>_profile_<category>_pct`, `..._cpu_ns` and `..._ns_per_kb`
/// (request/response: `..._ns_per_tx`).
pub fn csv_header_for(kind: Option<WorkloadKind>, profiled: bool) -> String {
    let mid = match kind {
        Some(WorkloadKind::UdpStream) => UDP,
        Some(k) if k.is_rr() => RR,
        _ => STREAM,
    };
    if !profiled {
        return format!("{LEAD},{mid},error");
    }
    let per = if kind.is_some_and(WorkloadKind::is_rr) {
        "ns_per_tx"
    } else {
        "ns_per_kb"
    };
    let mut cols = vec![
        "profile_hz".to_string(),
        "profile_expected_cost_pct".to_string(),
    ];
    for host in [HostRole::Client, HostRole::Server] {
        for c in ProfileCategory::ALL {
            for fig in ["pct", "cpu_ns", per] {
                cols.push(format!("{}_profile_{}_{fig}", label::host(host), c.key()));
            }
        }
    }
    format!("{LEAD},{mid},{},error", cols.join(","))
}

/// The profile cells of a run (see [`csv_header_for`]); empty cells for an end without one.
fn profile_cells(cost: Option<&ProfileCost>, s: Option<&Summary>) -> Vec<String> {
    let expected = cost
        .and_then(|c| c.expected.as_ref())
        .filter(|e| !e.unresolved);
    let mut out = vec![
        opt(cost.map(|c| c.freq_hz)),
        opt(expected.map(|e| e.cpu_pct)),
    ];
    for host in [HostRole::Client, HostRole::Server] {
        let p = s.and_then(|s| s.profiles.iter().find(|p| p.host == host));
        for c in ProfileCategory::ALL {
            let cost = p.and_then(|p| p.categories.iter().find(|x| x.category == c));
            out.push(opt(cost.map(|x| x.pct)));
            out.push(opt(cost.map(|x| x.cpu_ns)));
            out.push(opt(
                cost.and_then(|x| x.cpu_ns_per_transaction.or(x.cpu_ns_per_kb))
            ));
        }
    }
    out
}

/// One CSV cell, quoted per RFC 4180 when it contains a comma, a quote or a line break.
pub fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

fn cpu_pct(s: Option<&Summary>, h: HostRole) -> String {
    opt(s.and_then(|s| end_cpu(s, h)).map(|c| c.system_busy_pct))
}

/// The middle cells of the rows of one run (one per direction, or one).
fn run_rows(run: &RunRecord, spec: Option<&TestSpec>) -> Vec<(String, Vec<String>)> {
    let s = run.summary.as_ref();
    let dur = opt(spec.map(|s| s.common.duration_ms));
    match s.map(|s| &s.workload) {
        Some(WorkloadSummary::Stream(st)) if !st.directions.is_empty() => {
            let (snd, rcv) = match spec.map(|s| &s.workload) {
                Some(WorkloadSpec::Stream(w)) => {
                    (w.send_size_bytes.to_string(), w.recv_size_bytes.to_string())
                }
                Some(
                    WorkloadSpec::Rr(_)
                    | WorkloadSpec::Crr(_)
                    | WorkloadSpec::UdpRr(_)
                    | WorkloadSpec::UdpStream(_),
                )
                | None => (String::new(), String::new()),
            };
            let cc = s.map(|s| s.congestion.join(";")).unwrap_or_default();
            st.directions
                .iter()
                .map(|d| {
                    let sd = |h| {
                        opt(s
                            .and_then(|s| end_cpu(s, h))
                            .and_then(|c| c.service_demand_us_per_kb))
                    };
                    (
                        label::dir(d.dir).to_string(),
                        vec![
                            d.flows.to_string(),
                            d.receiver_throughput_bps.to_string(),
                            d.sender_throughput_bps.to_string(),
                            d.receiver_bytes.to_string(),
                            d.sender_bytes.to_string(),
                            d.retransmits.to_string(),
                            cpu_pct(s, HostRole::Client),
                            cpu_pct(s, HostRole::Server),
                            sd(HostRole::Client),
                            sd(HostRole::Server),
                            cc.clone(),
                            snd.clone(),
                            rcv.clone(),
                            dur.clone(),
                        ],
                    )
                })
                .collect()
        }
        Some(WorkloadSummary::Rr(r)) => {
            let l = r.latency;
            let sd = |h| {
                opt(s
                    .and_then(|s| end_cpu(s, h))
                    .and_then(|c| c.service_demand_us_per_tx))
            };
            vec![(
                "forward".into(),
                vec![
                    r.flows.to_string(),
                    r.transactions.to_string(),
                    r.transactions_per_s.to_string(),
                    opt(l.map(|l| l.min_ns)),
                    opt(l.map(|l| l.mean_ns)),
                    opt(l.map(|l| l.p50_ns)),
                    opt(l.map(|l| l.p90_ns)),
                    opt(l.map(|l| l.p99_ns)),
                    opt(l.map(|l| l.p999_ns)),
                    opt(l.map(|l| l.max_ns)),
                    r.client_window.lost.to_string(),
                    (r.client_window.errors + r.client_window.connect_errors).to_string(),
                    cpu_pct(s, HostRole::Client),
                    cpu_pct(s, HostRole::Server),
                    sd(HostRole::Client),
                    sd(HostRole::Server),
                    r.request_size_bytes.to_string(),
                    r.response_size_bytes.to_string(),
                    dur,
                ],
            )]
        }
        Some(WorkloadSummary::UdpStream(u)) if !u.directions.is_empty() => u
            .directions
            .iter()
            .map(|d| {
                (
                    label::dir(d.dir).to_string(),
                    vec![
                        d.flows.to_string(),
                        d.datagram_bytes.to_string(),
                        d.sender_rate_bps.to_string(),
                        d.receiver_rate_bps.to_string(),
                        d.counts.window_sent.to_string(),
                        d.counts.window_received.to_string(),
                        d.counts.window_lost.to_string(),
                        d.counts.window_loss_pct.to_string(),
                        d.counts.late.to_string(),
                        d.counts.duplicate.to_string(),
                        d.jitter_max_ns.to_string(),
                        d.invalid_datagrams.to_string(),
                        d.loss.total_lost.to_string(),
                        d.loss.refused_at_sender.to_string(),
                        opt(d.loss.dropped_at_receiving_sockets),
                        opt(d.loss.dropped_by_receiving_host),
                        d.loss.lost_in_path.to_string(),
                        cpu_pct(s, HostRole::Client),
                        cpu_pct(s, HostRole::Server),
                        dur.clone(),
                    ],
                )
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The result as CSV: [`csv_header`] of its workload's family, then one row per run ×
/// direction (request/response: per run). A run without figures, or a result without runs,
/// gives one row with its status, its error and empty figures.
pub fn csv(r: &RunResult) -> String {
    let kind = r.spec.as_ref().map(TestSpec::kind);
    let workload = kind.map(|k| k.as_str()).unwrap_or_default().to_string();
    let profiled = r
        .spec
        .as_ref()
        .is_some_and(|s| s.common.profile_hz.is_some());
    let header = csv_header_for(kind, profiled);
    let width = header.split(',').count();
    let mid_width = csv_header(kind).split(',').count() - 1 - LEAD.split(',').count();
    let error = r.error.as_ref().map(text::error_text).unwrap_or_default();
    let mut out = header;
    out.push('\n');
    let mut push =
        |run: String, status: &str, dir: String, mut mid: Vec<String>, s: Option<&Summary>| {
            if profiled {
                mid.resize(mid_width, String::new());
                mid.extend(profile_cells(r.profile_cost.as_ref(), s));
            }
            let mut row = vec![
                r.started_utc.clone(),
                run,
                status.to_string(),
                workload.clone(),
                dir,
            ];
            row.extend(mid);
            row.resize(width - 1, String::new());
            row.push(error.clone());
            let cells: Vec<String> = row.iter().map(|c| csv_cell(c)).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        };
    if r.runs.is_empty() {
        push(
            String::new(),
            status_name(r.status),
            String::new(),
            Vec::new(),
            None,
        );
    }
    for run in &r.runs {
        let number = (u64::from(run.index) + 1).to_string();
        let rows = run_rows(run, r.spec.as_ref());
        let summary = run.summary.as_ref();
        if rows.is_empty() {
            push(
                number.clone(),
                status_name(run.status),
                String::new(),
                Vec::new(),
                summary,
            );
        }
        for (dir, mid) in rows {
            push(number.clone(), status_name(run.status), dir, mid, summary);
        }
    }
    out
}

/// One row per interval of every run, measured at the receiving end of each direction
/// (request/response: at the client): `started_utc, run, workload, host, direction, start_s,
/// end_s, in_warmup`, then bytes and bits per second (stream, UDP), transactions and per
/// second (request/response), `lost` (request/response: lost transactions; UDP: lost
/// datagrams), then UDP's `datagrams, expected, loss_pct, late, duplicate, jitter_max_ns`
/// and request/response's `rtt_p50_ns, rtt_p99_ns` (see `UdpIntervalRow` and
/// `RrIntervalRow`).
pub fn csv_intervals(r: &RunResult) -> String {
    let kind = r.spec.as_ref().map(TestSpec::kind);
    let workload = kind.map(|k| k.as_str()).unwrap_or_default();
    let mut out = String::from(
        "started_utc,run,workload,host,direction,start_s,end_s,in_warmup,bytes,throughput_bps,\
         transactions,transactions_per_s,lost,datagrams,expected,loss_pct,late,duplicate,\
         jitter_max_ns,rtt_p50_ns,rtt_p99_ns\n",
    );
    let lead = |i: &IntervalRow| {
        vec![
            label::host(i.host).to_string(),
            label::dir(i.dir).to_string(),
            i.start_s.to_string(),
            i.end_s.to_string(),
            i.in_warmup.to_string(),
            i.bytes.to_string(),
            i.throughput_bps.to_string(),
        ]
    };
    for run in &r.runs {
        let Some(s) = &run.summary else { continue };
        let n = (u64::from(run.index) + 1).to_string();
        let mut push = |mut cells: Vec<String>| {
            cells.resize(18, String::new());
            let mut row = vec![r.started_utc.clone(), n.clone(), workload.to_string()];
            row.extend(cells);
            let cells: Vec<String> = row.iter().map(|c| csv_cell(c)).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        };
        match &s.workload {
            WorkloadSummary::Stream(st) => st.intervals.iter().for_each(|i| push(lead(i))),
            WorkloadSummary::UdpStream(u) => {
                for i in &u.intervals {
                    let mut cells = lead(&i.row);
                    cells.extend([
                        String::new(),
                        String::new(),
                        i.lost.to_string(),
                        i.datagrams.to_string(),
                        i.expected.to_string(),
                        i.loss_pct.to_string(),
                        i.late.to_string(),
                        i.duplicate.to_string(),
                        opt(i.jitter_max_ns),
                    ]);
                    push(cells);
                }
            }
            WorkloadSummary::Rr(rr) => {
                for i in &rr.intervals {
                    let mut cells = vec![
                        label::host(i.host).into(),
                        "forward".into(),
                        i.start_s.to_string(),
                        i.end_s.to_string(),
                        i.in_warmup.to_string(),
                        String::new(),
                        String::new(),
                        i.transactions.to_string(),
                        i.transactions_per_s.to_string(),
                        i.lost.to_string(),
                    ];
                    cells.resize(16, String::new());
                    cells.extend([opt(i.rtt_p50_ns), opt(i.rtt_p99_ns)]);
                    push(cells);
                }
            }
        }
    }
    out
}

/// One row per flow of every run (stream and UDP streams: both ends joined; request/response:
/// the client's rows): `started_utc, run, workload, flow, direction`, then the flow's
/// receiver and sender figures, then its addresses (`client_local, client_peer,
/// server_local, server_peer`: each end's own `ip:port` and the other's as it saw it; CRR:
/// the last connection's).
pub fn csv_flows(r: &RunResult) -> String {
    let kind = r.spec.as_ref().map(TestSpec::kind);
    let workload = kind.map(|k| k.as_str()).unwrap_or_default();
    let mut out = String::from(
        "started_utc,run,workload,flow,direction,receiver_bytes,receiver_throughput_bps,\
         sender_bytes,sender_throughput_bps,retransmits,transactions,transactions_per_s,\
         rtt_p50_ns,rtt_p99_ns,lost,errors,client_local,client_peer,server_local,server_peer\n",
    );
    for run in &r.runs {
        let Some(s) = &run.summary else { continue };
        let n = (u64::from(run.index) + 1).to_string();
        let rows: Vec<(u32, Vec<String>)> = match &s.workload {
            WorkloadSummary::Stream(st) => st
                .flows
                .iter()
                .map(|f| {
                    let cells = vec![
                        f.flow.to_string(),
                        label::dir(f.dir).into(),
                        f.receiver_bytes.to_string(),
                        f.receiver_throughput_bps.to_string(),
                        f.sender_bytes.to_string(),
                        f.sender_throughput_bps.to_string(),
                        f.retransmits.to_string(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                        f.errors.len().to_string(),
                    ];
                    (f.flow, cells)
                })
                .collect(),
            WorkloadSummary::UdpStream(u) => u
                .flows
                .iter()
                .map(|f| {
                    let cells = vec![
                        f.flow.to_string(),
                        label::dir(f.dir).into(),
                        String::new(),
                        f.receiver_rate_bps.to_string(),
                        String::new(),
                        f.sender_rate_bps.to_string(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                        f.counts.window_lost.to_string(),
                        f.errors.len().to_string(),
                    ];
                    (f.flow, cells)
                })
                .collect(),
            WorkloadSummary::Rr(rr) => rr
                .per_flow
                .iter()
                .map(|f| {
                    let cells = vec![
                        f.flow.to_string(),
                        "forward".into(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                        f.transactions.to_string(),
                        f.transactions_per_s.to_string(),
                        opt(f.rtt_p50_ns),
                        opt(f.rtt_p99_ns),
                        f.lost.to_string(),
                        f.errors.to_string(),
                    ];
                    (f.flow, cells)
                })
                .collect(),
        };
        for (flow, cells) in rows {
            let mut row = vec![r.started_utc.clone(), n.clone(), workload.to_string()];
            let a = addresses::flow_addresses(run, flow);
            row.extend(cells);
            row.extend(
                [a.client_local, a.client_peer, a.server_local, a.server_peer]
                    .map(Option::unwrap_or_default),
            );
            let cells: Vec<String> = row.iter().map(|c| csv_cell(c)).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
    }
    out
}
