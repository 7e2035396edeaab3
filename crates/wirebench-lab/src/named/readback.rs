//! Reading a named lab back from the kernel: MTU, addresses and counters (`ip -j`),
//! offloads (`ethtool -k`, raw text kept), qdiscs (`tc -j -s`), routes and their
//! `congctl`, the namespace's congestion-control default and sysctls (its `/proc/sys`),
//! RPS/XPS masks, and the emulator's own status.

use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::emud::{self, EmulatorStatus};
use super::state::{Files, LabState, Phase};
use super::sys::{self, BatchLine};
use super::{names, Endpoint, LabSpec, NamedError, IF_MID_CLIENT, IF_MID_SERVER};

/// One offload feature as `ethtool -k` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffloadReadback {
    /// The `ethtool -k` feature name (e.g. `tcp-segmentation-offload`).
    pub feature: String,
    /// `on`, `off`, or `mixed` (a group whose changeable sub-features differ); for a group
    /// this is computed from its changeable (not `[fixed]`) sub-features, not from the
    /// group line, which `ethtool` may print as `on` while every sub-feature is off.
    pub state: String,
    /// Whether the device cannot change it.
    pub fixed: bool,
    /// What the spec asked for, if anything.
    pub asked: Option<bool>,
    /// The raw lines: the feature and its sub-features, with `[fixed]`, `[requested on]`
    /// and similar annotations as the kernel reports them.
    pub lines: Vec<String>,
}

/// One qdisc (`tc -j -s qdisc show`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QdiscReport {
    /// `tbf`, `noqueue`, ...
    pub kind: String,
    /// `8001:`.
    pub handle: String,
    /// Attached at the root.
    pub root: bool,
    /// tbf rate.
    pub rate_bps: Option<u64>,
    /// tbf bucket size as the kernel stores it.
    pub burst_bytes: Option<u64>,
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Packets sent.
    pub sent_packets: u64,
    /// Drops.
    pub drops: u64,
    /// Times the qdisc was over its limit (tbf: a packet had to wait for tokens).
    pub overlimits: u64,
    /// Bytes queued now.
    pub backlog_bytes: u64,
}

/// One route of an endpoint (`ip -j route show`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteReport {
    /// Destination.
    pub dst: String,
    /// Its congestion control (`congctl`), if set.
    pub congctl: Option<String>,
}

/// A sysctl as read back in a namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SysctlReadback {
    /// Dotted key.
    pub key: String,
    /// Value (whitespace as the kernel prints it).
    pub value: String,
}

/// One endpoint as read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointReport {
    /// Namespace.
    pub namespace: String,
    /// Interface.
    pub ifname: String,
    /// MTU.
    pub mtu: u32,
    /// Operational state (`UP`, `DOWN`, `LOWERLAYERDOWN`).
    pub operstate: String,
    /// MAC address.
    pub mac: String,
    /// Addresses with prefix length (link-local ones included).
    pub addresses: Vec<String>,
    /// Interface counters.
    pub rx_bytes: u64,
    /// Packets received.
    pub rx_packets: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// The main offloads and every one the spec asked for.
    pub offloads: Vec<OffloadReadback>,
    /// The full `ethtool -k` output.
    pub ethtool_k_raw: String,
    /// Qdiscs on the interface.
    pub qdiscs: Vec<QdiscReport>,
    /// Routes of the main table (IPv4, and IPv6 when the lab has it).
    pub routes: Vec<RouteReport>,
    /// `net.ipv4.tcp_congestion_control` of the namespace.
    pub cc_default: String,
    /// The sysctls the spec sets on this side.
    pub sysctls: Vec<SysctlReadback>,
    /// RPS mask of `rx-0`, if the spec sets one.
    pub rps_cpus: Option<String>,
    /// XPS mask of `tx-0`, if the spec sets one.
    pub xps_cpus: Option<String>,
}

/// The middle namespace as read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MiddleReport {
    /// Namespace.
    pub namespace: String,
    /// MTU of the interface facing the client.
    pub mtu_client_side: u32,
    /// MTU of the interface facing the server.
    pub mtu_server_side: u32,
}

/// The emulator process as seen now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmulatorReport {
    /// Recorded PID.
    pub pid: u32,
    /// Whether it still runs and is the process we started.
    pub alive: bool,
    /// Its own answer (configuration and counters).
    pub status: Option<EmulatorStatus>,
    /// Why there is no answer.
    pub error: Option<String>,
}

/// Everything about one lab, read back from the kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabReport {
    /// The lab.
    pub name: String,
    /// Phase from the state file (`None`: there is none, only namespaces).
    pub phase: Option<Phase>,
    /// Why the lab is stale (empty: it is not).
    pub stale: Vec<String>,
    /// What was asked for.
    pub spec: Option<LabSpec>,
    /// Creation time, ms since the Unix epoch.
    pub created_unix_ms: Option<u64>,
    /// Owner process, if the lab is tied to one.
    pub owner_pid: Option<u32>,
    /// The client, if its namespace exists.
    pub client: Option<EndpointReport>,
    /// The server, if its namespace exists.
    pub server: Option<EndpointReport>,
    /// The middle namespace, if it exists.
    pub middle: Option<MiddleReport>,
    /// The emulator, if one is recorded.
    pub emulator: Option<EmulatorReport>,
}

/// A line of `ethtool -k`.
#[derive(Debug, Clone)]
struct Feature {
    name: String,
    on: bool,
    fixed: bool,
    parent: Option<usize>,
    line: String,
}

fn parse_ethtool(raw: &str) -> Vec<Feature> {
    let mut out: Vec<Feature> = Vec::new();
    let mut top: Option<usize> = None;
    for line in raw.lines() {
        let sub = line.starts_with('\t') || line.starts_with(' ');
        let Some((name, rest)) = line.trim().split_once(": ") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let on = match words.next() {
            Some("on") => true,
            Some("off") => false,
            _ => continue,
        };
        let fixed = rest.contains("[fixed]");
        let parent = if sub { top } else { None };
        if !sub {
            top = Some(out.len());
        }
        out.push(Feature {
            name: name.to_string(),
            on,
            fixed,
            parent,
            line: line.trim().to_string(),
        });
    }
    out
}

/// The changeable (not `[fixed]`) sub-features of a group feature in `ethtool -k` text.
pub(crate) fn subfeatures(raw: &str, feature: &str) -> Vec<String> {
    let feats = parse_ethtool(raw);
    let Some(idx) = feats.iter().position(|f| f.name == feature) else {
        return Vec::new();
    };
    feats
        .iter()
        .filter(|f| f.parent == Some(idx) && !f.fixed)
        .map(|f| f.name.clone())
        .collect()
}

/// A feature's effective state from `ethtool -k` text (see [`OffloadReadback::state`]);
/// `None` if the device has no feature of that name.
pub(crate) fn evaluate(raw: &str, feature: &str, asked: Option<bool>) -> Option<OffloadReadback> {
    let feats = parse_ethtool(raw);
    let idx = feats.iter().position(|f| f.name == feature)?;
    let kids: Vec<&Feature> = feats.iter().filter(|f| f.parent == Some(idx)).collect();
    let mut judged: Vec<&Feature> = kids.iter().copied().filter(|f| !f.fixed).collect();
    if judged.is_empty() {
        judged.push(&feats[idx]);
    }
    let state = if judged.iter().all(|f| f.on) {
        "on"
    } else if judged.iter().all(|f| !f.on) {
        "off"
    } else {
        "mixed"
    };
    Some(OffloadReadback {
        feature: feature.to_string(),
        state: state.to_string(),
        fixed: feats[idx].fixed && kids.iter().all(|f| f.fixed),
        asked,
        lines: std::iter::once(&feats[idx])
            .chain(kids)
            .map(|f| f.line.clone())
            .collect(),
    })
}

/// The offloads shown for every endpoint.
const MAIN_OFFLOADS: &[&str] = &[
    "tx-checksumming",
    "rx-checksumming",
    "scatter-gather",
    "tcp-segmentation-offload",
    "generic-segmentation-offload",
    "generic-receive-offload",
    "large-receive-offload",
];

fn u64_at(v: &Value, path: &[&str]) -> u64 {
    path.iter()
        .try_fold(v, |v, k| v.get(*k))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

fn str_at(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn json_values(cmd: &str, text: &str) -> Result<Vec<Value>, NamedError> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| NamedError::State {
            path: cmd.to_string(),
            detail: format!("unparsable JSON: {e}"),
        })
}

fn parse_routes(values: &[Value]) -> Vec<RouteReport> {
    values
        .iter()
        .filter_map(Value::as_array)
        .flatten()
        .map(|r| RouteReport {
            dst: str_at(r, "dst"),
            congctl: r
                .get("metrics")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find_map(|m| m.get("congestion").and_then(Value::as_str))
                .map(str::to_string),
        })
        .collect()
}

fn parse_qdiscs(text: &str) -> Result<Vec<QdiscReport>, NamedError> {
    let values = json_values("tc -j -s qdisc show", text)?;
    Ok(values
        .iter()
        .filter_map(Value::as_array)
        .flatten()
        .map(|q| {
            let opt = q.get("options");
            let opt_u64 = |k: &str| opt.and_then(|o| o.get(k)).and_then(Value::as_u64);
            QdiscReport {
                kind: str_at(q, "kind"),
                handle: str_at(q, "handle"),
                root: q.get("root").and_then(Value::as_bool).unwrap_or(false),
                // tc -j prints the tbf rate in bytes per second.
                rate_bps: opt_u64("rate").map(|r| r * 8),
                burst_bytes: opt_u64("burst"),
                sent_bytes: u64_at(q, &["bytes"]),
                sent_packets: u64_at(q, &["packets"]),
                drops: u64_at(q, &["drops"]),
                overlimits: u64_at(q, &["overlimits"]),
                backlog_bytes: u64_at(q, &["backlog"]),
            }
        })
        .collect())
}

/// Reads one endpoint (inside its namespace).
fn read_endpoint(
    name: &str,
    side: Endpoint,
    spec: Option<&LabSpec>,
) -> Result<EndpointReport, NamedError> {
    let ns = side.ns(name);
    let ifn = side.ifname();
    let ipv6 = spec.is_some_and(|s| s.ipv6);
    let client = side == Endpoint::Client;
    sys::in_ns(&ns, || {
        let lines = [
            BatchLine::plain(format!("addr show dev {ifn}")),
            BatchLine::plain("route show"),
        ];
        let text = sys::ip_batch(None, &["-j", "-s"], &lines)?;
        let values = json_values("ip -j -s addr/route show", &text)?;
        let link = values
            .first()
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .cloned()
            .unwrap_or(Value::Null);
        let mut routes = parse_routes(&values[1.min(values.len())..]);
        if ipv6 {
            let t6 = sys::run(Command::new("ip").args(["-j", "-6", "route", "show"]))?;
            routes.extend(parse_routes(&json_values("ip -j -6 route show", &t6)?));
        }
        let ethtool_k_raw = sys::run(Command::new("ethtool").args(["-k", ifn]))?;
        let mut wanted: Vec<(String, Option<bool>)> = MAIN_OFFLOADS
            .iter()
            .map(|f| (f.to_string(), None))
            .collect();
        for o in spec.map(|s| s.offloads.as_slice()).unwrap_or_default() {
            let feature = o.ethtool_names().1.to_string();
            match wanted.iter_mut().find(|(f, _)| *f == feature) {
                Some(w) => w.1 = Some(o.on),
                None => wanted.push((feature, Some(o.on))),
            }
        }
        let offloads = wanted
            .iter()
            .filter_map(|(f, asked)| evaluate(&ethtool_k_raw, f, *asked))
            .collect();
        let qdiscs = parse_qdiscs(&sys::run(
            Command::new("tc").args(["-j", "-s", "qdisc", "show", "dev", ifn]),
        )?)?;
        let sysctls = spec
            .map(|s| s.sysctls.as_slice())
            .unwrap_or_default()
            .iter()
            .filter(|s| s.sides.includes(client))
            .map(|s| {
                Ok(SysctlReadback {
                    key: s.key.clone(),
                    value: sys::read_proc(&s.proc_path())?,
                })
            })
            .collect::<Result<Vec<_>, NamedError>>()?;
        let queue_mask =
            |mask: Option<&String>, file: &str| -> Result<Option<String>, NamedError> {
                if mask.is_none() {
                    return Ok(None);
                }
                let path = format!("/sys/class/net/{ifn}/queues/{file}");
                sys::run(Command::new("ip").args(["netns", "exec", &ns, "cat", &path]))
                    .map(|s| Some(s.trim().to_string()))
            };
        Ok(EndpointReport {
            namespace: ns.clone(),
            ifname: ifn.to_string(),
            mtu: u64_at(&link, &["mtu"]) as u32,
            operstate: str_at(&link, "operstate"),
            mac: str_at(&link, "address"),
            addresses: link
                .get("addr_info")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|a| format!("{}/{}", str_at(a, "local"), u64_at(a, &["prefixlen"])))
                .collect(),
            rx_bytes: u64_at(&link, &["stats64", "rx", "bytes"]),
            rx_packets: u64_at(&link, &["stats64", "rx", "packets"]),
            tx_bytes: u64_at(&link, &["stats64", "tx", "bytes"]),
            tx_packets: u64_at(&link, &["stats64", "tx", "packets"]),
            offloads,
            ethtool_k_raw,
            qdiscs,
            routes,
            cc_default: sys::read_proc("/proc/sys/net/ipv4/tcp_congestion_control")?,
            sysctls,
            rps_cpus: queue_mask(spec.and_then(|s| s.rps_of(!client)), "rx-0/rps_cpus")?,
            xps_cpus: queue_mask(spec.and_then(|s| s.xps_cpus.as_ref()), "tx-0/xps_cpus")?,
        })
    })
}

fn read_middle(name: &str) -> Result<MiddleReport, NamedError> {
    let ns = names::middle(name);
    let text = sys::run(Command::new("ip").args(["-n", &ns, "-j", "link", "show"]))?;
    let values = json_values("ip -j link show", &text)?;
    let mtu_of = |ifn: &str| {
        values
            .iter()
            .filter_map(Value::as_array)
            .flatten()
            .find(|l| l.get("ifname").and_then(Value::as_str) == Some(ifn))
            .map_or(0, |l| u64_at(l, &["mtu"]) as u32)
    };
    Ok(MiddleReport {
        mtu_client_side: mtu_of(IF_MID_CLIENT),
        mtu_server_side: mtu_of(IF_MID_SERVER),
        namespace: ns,
    })
}

/// Reads lab `name` back; `state` is its state file, if any; `stale` the reasons it is
/// stale.
pub(crate) fn read(
    files: &Files,
    name: &str,
    state: Option<&LabState>,
    stale: Vec<String>,
) -> Result<LabReport, NamedError> {
    let spec = state.map(|s| &s.spec);
    let endpoint = |side: Endpoint| -> Result<Option<EndpointReport>, NamedError> {
        if sys::netns_exists(&side.ns(name)) {
            read_endpoint(name, side, spec).map(Some)
        } else {
            Ok(None)
        }
    };
    let (client, server) = std::thread::scope(|s| {
        let c = s.spawn(|| endpoint(Endpoint::Client));
        let srv = endpoint(Endpoint::Server);
        let c = c.join().unwrap_or_else(|_| {
            Err(NamedError::Lab(crate::LabError::Panicked {
                ns: names::client(name),
            }))
        });
        (c, srv)
    });
    let middle = if sys::netns_exists(&names::middle(name)) {
        Some(read_middle(name)?)
    } else {
        None
    };
    let emulator = state.and_then(|s| s.emulator.as_ref()).map(|e| {
        let alive = e.alive();
        let (status, error) = if alive {
            match emud::query(&files.socket, Duration::from_secs(2)) {
                Ok(st) => (Some(st), None),
                Err(err) => (None, Some(err.to_string())),
            }
        } else {
            (None, Some(format!("process {} is gone", e.proc.pid)))
        };
        EmulatorReport {
            pid: e.proc.pid,
            alive,
            status,
            error,
        }
    });
    Ok(LabReport {
        name: name.to_string(),
        phase: state.map(|s| s.phase),
        stale,
        spec: spec.cloned(),
        created_unix_ms: state.map(|s| s.created_unix_ms),
        owner_pid: state.and_then(|s| s.owner).map(|o| o.pid),
        client: client?,
        server: server?,
        middle,
        emulator,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAW: &str = "Features for wbc:\nrx-checksumming: on\ntx-checksumming: off\n\
        \ttx-checksum-ipv4: off [fixed]\n\ttx-checksum-ip-generic: off\n\
        \ttx-checksum-sctp: off\nscatter-gather: on\n\ttx-scatter-gather: on\n\
        tcp-segmentation-offload: on\n\ttx-tcp-segmentation: off [requested on]\n\
        \ttx-tcp6-segmentation: off [requested on]\n\
        generic-segmentation-offload: on\nlarge-receive-offload: off [fixed]\n\
        rx-gro-list: off\n";

    #[test]
    fn groups_are_judged_by_their_changeable_subfeatures() {
        let tso = evaluate(RAW, "tcp-segmentation-offload", Some(true)).unwrap();
        assert_eq!(
            tso.state, "off",
            "group line says on, every sub-feature is off"
        );
        assert!(tso
            .lines
            .iter()
            .any(|l| l == "tx-tcp-segmentation: off [requested on]"));
        assert_eq!(evaluate(RAW, "tx-checksumming", None).unwrap().state, "off");
        assert_eq!(evaluate(RAW, "rx-checksumming", None).unwrap().state, "on");
        let lro = evaluate(RAW, "large-receive-offload", None).unwrap();
        assert!(lro.fixed && lro.state == "off");
        assert_eq!(evaluate(RAW, "rx-gro-list", None).unwrap().state, "off");
        assert!(evaluate(RAW, "no-such-feature", None).is_none());
        assert_eq!(
            subfeatures(RAW, "tcp-segmentation-offload"),
            ["tx-tcp-segmentation", "tx-tcp6-segmentation"]
        );
        assert!(subfeatures(RAW, "rx-gro-list").is_empty());
        let sub = evaluate(RAW, "tx-tcp-segmentation", None).unwrap();
        assert_eq!((sub.state.as_str(), sub.lines.len()), ("off", 1));
    }

    #[test]
    fn qdisc_json() {
        let q = parse_qdiscs(
            r#"[{"kind":"tbf","handle":"8001:","root":true,"refcnt":3,"options":{"rate":12500000,"burst":262137,"lat":20972},"bytes":10,"packets":1,"drops":2,"overlimits":3,"requeues":0,"backlog":0,"qlen":0}]"#,
        )
        .unwrap();
        assert_eq!(q[0].rate_bps, Some(100_000_000));
        assert_eq!((q[0].sent_bytes, q[0].drops, q[0].overlimits), (10, 2, 3));
    }

    #[test]
    fn route_json() {
        let v = json_values(
            "t",
            r#"[{"dst":"198.18.0.0/24","dev":"wbc","metrics":[{"congestion":"cubic"}]},{"dst":"x"}]"#,
        )
        .unwrap();
        let r = parse_routes(&v);
        assert_eq!(r[0].congctl.as_deref(), Some("cubic"));
        assert_eq!(r[1].congctl, None);
    }
}
