//! Configuring a built testbed's namespaces, each from a thread inside it: the endpoints'
//! loopback, MTU, addresses, neighbours, congestion-control routes, sysctls, offloads, rate
//! limits and RPS/XPS masks, and the middle namespace's two veth ends.

use std::process::Command;

use super::{End, Layout};
use crate::named::readback;
use crate::named::sys::{self, BatchLine};
use crate::named::{on_off, LabSpec, NamedError, OffloadSetting};

/// Offloads switched off on both endpoints' veth ends of an emulated link (see
/// [`crate::emu`]).
pub(crate) const EMU_OFFLOADS_OFF: &[&str] = &["tx", "tso", "gso"];

fn panicked(ns: &str) -> NamedError {
    NamedError::Lab(crate::LabError::Panicked { ns: ns.to_string() })
}

/// The tbf parameters of a lab's rate limit of `rate_bps` on a link with `mtu`: a bucket
/// of 1 ms at the rate (at least two frames), a queue of 20 ms (at least four buckets).
pub(crate) fn tbf_params(rate_bps: u64, mtu: u32) -> (u64, u64) {
    let per_ms = rate_bps / 8 / 1000;
    let burst = per_ms.max(2 * (u64::from(mtu) + 14)).max(4096);
    let limit = (per_ms * 20).max(4 * burst);
    (burst, limit)
}

/// `route replace` lines that give `end`'s routes to the testbed's subnets congestion
/// control `cc` (the IPv6 one with `ipv6`).
pub(crate) fn cc_route_lines(layout: &Layout, end: &End, cc: &str, ipv6: bool) -> Vec<BatchLine> {
    let ifn = end.ifname;
    let mut l = vec![BatchLine::for_setting(
        format!(
            "route replace {} dev {ifn} proto kernel scope link src {} congctl {cc}",
            layout.subnet_v4, end.ipv4
        ),
        "cc",
        cc,
    )];
    if ipv6 {
        l.push(BatchLine::for_setting(
            format!(
                "route replace {} dev {ifn} proto kernel metric 256 congctl {cc}",
                layout.subnet_v6
            ),
            "cc",
            cc,
        ));
    }
    l
}

/// The `ip -batch` script of an endpoint (run inside its namespace).
pub(super) fn endpoint_lines(layout: &Layout, spec: &LabSpec, end: &End) -> Vec<BatchLine> {
    let mut l = vec![BatchLine::plain("link set lo up")];
    let Some(peer) = layout.peer(end) else {
        return l;
    };
    let ifn = end.ifname;
    let mtu = spec.mtu.to_string();
    l.push(BatchLine::for_setting(
        format!("link set {ifn} mtu {mtu}"),
        "mtu",
        &mtu,
    ));
    l.push(BatchLine::plain(format!(
        "addr add {}/24 dev {ifn}",
        end.ipv4
    )));
    if spec.ipv6 {
        l.push(BatchLine::for_setting(
            format!("addr add {}/64 dev {ifn} nodad", end.ipv6),
            "ipv6",
            "on",
        ));
    }
    l.push(BatchLine::plain(format!("link set {ifn} up")));
    if layout.static_neighbors {
        let mut peers = vec![peer.ipv4];
        if spec.ipv6 {
            peers.push(peer.ipv6);
        }
        for ip in peers {
            l.push(BatchLine::plain(format!(
                "neigh replace {ip} lladdr {} dev {ifn} nud permanent",
                peer.mac
            )));
        }
    }
    if let Some(cc) = &spec.cc {
        l.extend(cc_route_lines(layout, end, cc, spec.ipv6));
    }
    l
}

/// Inside a namespace (`end`, or the middle one with `None`): disable IPv6 (unless the
/// layout keeps the kernel's, or an endpoint gets addresses) and write the spec's sysctls.
fn write_sysctls(layout: &Layout, spec: &LabSpec, end: Option<&End>) -> Result<(), NamedError> {
    let disable_ipv6 = !layout.kernel_ipv6 && (!spec.ipv6 || end.is_none());
    if disable_ipv6 && std::path::Path::new("/proc/sys/net/ipv6").exists() {
        for key in ["all", "default"] {
            let path = format!("/proc/sys/net/ipv6/conf/{key}/disable_ipv6");
            sys::write_proc(&path, "1").map_err(|source| NamedError::Io {
                what: format!("writing {path}"),
                source,
            })?;
        }
    }
    let Some(end) = end else { return Ok(()) };
    let client = end == &layout.a;
    for s in spec.sysctls.iter().filter(|s| s.sides.includes(client)) {
        sys::write_proc(&s.proc_path(), &s.value).map_err(|e| NamedError::Refused {
            setting: "sysctl".into(),
            value: s.to_arg(),
            detail: format!("writing {} in {}: {e}", s.proc_path(), end.ns),
        })?;
    }
    Ok(())
}

/// The offloads an endpoint gets: those the emulator needs off, then the spec's.
fn endpoint_offloads(spec: &LabSpec) -> Vec<OffloadSetting> {
    let mut asked: Vec<OffloadSetting> = Vec::new();
    if spec.uses_emulator() {
        for f in EMU_OFFLOADS_OFF {
            asked.push(OffloadSetting {
                name: f.to_string(),
                on: false,
            });
        }
    }
    asked.extend(spec.offloads.iter().cloned());
    asked
}

/// `ethtool -K` with `asked` on `ifn` (call inside its namespace); the outcome is judged
/// on read-back (which names the setting), so only a missing tool or feature is an error
/// here. A group (`tso`) is also switched sub-feature by sub-feature, as this device lists
/// them: the legacy group names of `ethtool` may not cover features newer than the tool (on
/// Linux 6.18, `tso off` leaves `tx-tcp-accecn-segmentation` on).
pub(crate) fn set_offloads(ifn: &str, asked: &[OffloadSetting]) -> Result<(), NamedError> {
    if asked.is_empty() {
        return Ok(());
    }
    let raw = sys::run(Command::new("ethtool").args(["-k", ifn]))?;
    let mut args: Vec<String> = vec!["-K".into(), ifn.into()];
    for o in asked {
        let (arg, feature) = o.ethtool_names();
        if readback::evaluate(&raw, feature, None).is_none() {
            return Err(NamedError::InvalidSetting {
                setting: "offload".into(),
                value: o.to_arg(),
                reason: format!("`ethtool -k {ifn}` lists no feature {feature:?}"),
            });
        }
        let state = on_off(o.on).to_string();
        args.extend([arg.to_string(), state.clone()]);
        for sub in readback::subfeatures(&raw, feature) {
            args.extend([sub, state.clone()]);
        }
    }
    sys::output(Command::new("ethtool").args(&args), None)?;
    Ok(())
}

/// A `tc tbf` token bucket of `rate_bps` with `burst` and `limit` bytes as `ifn`'s root
/// qdisc (call inside its namespace). tbf counts link-layer bytes.
pub(crate) fn set_rate(ifn: &str, rate_bps: u64, burst: u64, limit: u64) -> Result<(), NamedError> {
    let mut tc = Command::new("tc");
    tc.args(["qdisc", "replace", "dev", ifn, "root", "tbf", "rate"])
        .arg(format!("{rate_bps}bit"))
        .args(["burst", &burst.to_string(), "limit", &limit.to_string()]);
    sys::run(&mut tc)
        .map(|_| ())
        .map_err(|e| NamedError::Refused {
            setting: "rate".into(),
            value: format!("{rate_bps}bit"),
            detail: e.to_string(),
        })
}

fn configure_endpoint(layout: &Layout, spec: &LabSpec, end: &End) -> Result<(), NamedError> {
    let ifn = end.ifname;
    let client = end == &layout.a;
    sys::in_ns(&end.ns, || {
        write_sysctls(layout, spec, Some(end))?;
        sys::ip_batch(None, &[], &endpoint_lines(layout, spec, end))?;
        if !layout.paired {
            return Ok(());
        }
        set_offloads(ifn, &endpoint_offloads(spec))?;
        if let (Some(rate), true) = (spec.rate_bps, client || spec.rate_both) {
            let (burst, limit) = tbf_params(rate, spec.mtu);
            set_rate(ifn, rate, burst, limit)?;
        }
        for (flag, mask, file) in [
            ("rps", spec.rps_of(!client), "rx-0/rps_cpus"),
            ("xps", spec.xps_cpus.as_ref(), "tx-0/xps_cpus"),
        ] {
            let Some(mask) = mask else { continue };
            // `ip netns exec` mounts the namespace's /sys, where its interfaces' queues are.
            let path = format!("/sys/class/net/{ifn}/queues/{file}");
            let mut tee = Command::new("ip");
            tee.args(["netns", "exec", &end.ns, "tee", &path]);
            let out = sys::output(&mut tee, Some(mask))?;
            if !out.status.success() {
                return Err(NamedError::Refused {
                    setting: flag.into(),
                    value: mask.clone(),
                    detail: sys::stderr_text(&out),
                });
            }
        }
        if let Some(cc) = &spec.cc {
            // Best effort: a child namespace may only choose an algorithm of
            // tcp_allowed_congestion_control; the routes carry congctl in any case.
            let _ = sys::write_proc("/proc/sys/net/ipv4/tcp_congestion_control", cc);
        }
        Ok(())
    })
}

fn configure_middle(layout: &Layout, spec: &LabSpec) -> Result<(), NamedError> {
    let mtu = spec.mtu.to_string();
    let ifs = [layout.a.mid_ifname, layout.b.mid_ifname];
    sys::in_ns(&layout.middle_ns, || {
        write_sysctls(layout, spec, None)?;
        let mut lines = vec![BatchLine::plain("link set lo up")];
        for ifn in ifs {
            lines.push(BatchLine::for_setting(
                format!("link set {ifn} mtu {mtu}"),
                "mtu",
                &mtu,
            ));
            lines.push(BatchLine::plain(format!("link set {ifn} up")));
        }
        sys::ip_batch(None, &[], &lines)?;
        for ifn in ifs {
            sys::run(Command::new("ethtool").args([
                "-K", ifn, "tso", "off", "gso", "off", "gro", "off", "tx", "off",
            ]))?;
        }
        Ok(())
    })
}

/// Configures every namespace of `layout` (built by the host's part), in parallel.
pub(super) fn all(layout: &Layout, spec: &LabSpec) -> Result<(), NamedError> {
    std::thread::scope(|s| -> Result<(), NamedError> {
        let a = s.spawn(|| configure_endpoint(layout, spec, &layout.a));
        let m = (layout.paired && spec.uses_emulator())
            .then(|| s.spawn(|| configure_middle(layout, spec)));
        if layout.paired {
            configure_endpoint(layout, spec, &layout.b)?;
        }
        a.join().map_err(|_| panicked(&layout.a.ns))??;
        if let Some(m) = m {
            m.join().map_err(|_| panicked(&layout.middle_ns))??;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tbf_sizes() {
        // 100 Mbit/s: 12.5 kB per ms, but at least two 9000-byte frames.
        assert_eq!(tbf_params(100_000_000, 9000), (18_028, 250_000));
        assert_eq!(tbf_params(10_000_000_000, 1500), (1_250_000, 25_000_000));
        assert_eq!(tbf_params(1_000_000, 1500), (4096, 16_384));
    }

    #[test]
    fn batch_lines_name_their_settings() {
        let layout = Layout::named("t");
        let mut spec = LabSpec::new("t");
        spec.mtu = 70000;
        spec.cc = Some("cubic".into());
        spec.ipv6 = true;
        let l = endpoint_lines(&layout, &spec, &layout.a);
        let mtu = l.iter().find(|b| b.line.contains("mtu 70000")).unwrap();
        assert_eq!(mtu.setting, Some(("mtu".into(), "70000".into())));
        assert_eq!(
            l.iter()
                .filter(|b| b.line.contains("congctl cubic"))
                .count(),
            2
        );
    }

    #[test]
    fn the_layouts_differ_in_names_addresses_arp_and_ipv6_only() {
        let spec = LabSpec {
            mtu: 9000,
            ..LabSpec::default()
        };
        let (named, test) = (Layout::named("t"), Layout::test("wbt1x2", true));
        let lines = |layout: &Layout, end: &End| -> Vec<String> {
            endpoint_lines(layout, &spec, end)
                .into_iter()
                .map(|b| b.line)
                .collect()
        };
        assert_eq!(
            lines(&named, &named.b),
            [
                "link set lo up",
                "link set wbs mtu 9000",
                "addr add 198.18.0.2/24 dev wbs",
                "link set wbs up",
                "neigh replace 198.18.0.1 lladdr 02:77:62:00:00:01 dev wbs nud permanent",
            ]
        );
        assert_eq!(
            lines(&test, &test.b),
            [
                "link set lo up",
                "link set wbb mtu 9000",
                "addr add 10.203.0.2/24 dev wbb",
                "link set wbb up",
            ]
        );
        let single = Layout::test("wbt1x3", false);
        assert_eq!(lines(&single, &single.a), ["link set lo up"]);
    }
}
