//! The one testbed builder. Every testbed of this crate is built here, from a [`LabSpec`]
//! (what the link looks like) and a [`Layout`] (what its parts are called): a named lab
//! ([`crate::named::LabManager::up`], so `wirebench lab up` and the studies' cells), a
//! test's [`crate::Testbed`] and an [`crate::emu::EmulatedPath`]. Creating the namespaces,
//! the veth pairs (directly joined, or each facing the emulator's middle namespace), the
//! MAC and IP addresses, MTU, neighbour entries, offloads, congestion-control routes, rate
//! limits, sysctls and RPS/XPS masks happens here and nowhere else, and so does removing
//! them ([`teardown`]).
//!
//! What the callers add is their own: a named lab its state file, its emulator process and
//! the read-back that verifies every setting; an `EmulatedPath` its forwarder threads; a
//! `Testbed` the knobs tests turn after building (offloads, rate limits, congestion
//! control), which go through this module's functions too.
//!
//! Process count of a plain pair: one `ip -batch` in the host namespace (namespaces and
//! veth), one `ip -batch` per endpoint (run in parallel, from threads that entered the
//! namespaces). [`teardown`] is one `ip -batch` of `netns del`.

mod configure;
mod layout;

pub(crate) use configure::{cc_route_lines, set_offloads, set_rate, EMU_OFFLOADS_OFF};
pub(crate) use layout::{End, Layout};

use crate::named::sys::{self, BatchLine};
use crate::named::{LabSpec, NamedError};

/// The namespaces of a testbed [`create`] built: removed on drop (also when a panic
/// unwinds through their owner) unless [`keep`](Built::keep) hands them over.
#[derive(Debug)]
pub(crate) struct Built {
    namespaces: Vec<String>,
}

impl Built {
    /// The namespaces, in build order.
    pub(crate) fn namespaces(&self) -> &[String] {
        &self.namespaces
    }

    /// Hands the namespaces over to the caller, who removes them (a named lab's `down`).
    pub(crate) fn keep(mut self) {
        self.namespaces.clear();
    }
}

impl Drop for Built {
    fn drop(&mut self) {
        if !self.namespaces.is_empty() {
            let _ = teardown(&self.namespaces);
        }
    }
}

/// Builds `spec` as `layout` describes it: the namespaces (with the emulator, a middle
/// namespace whose two veth ends face the endpoints; nothing forwards between them until
/// the caller attaches a forwarder), then each namespace configured from a thread inside
/// it, in parallel. None of the layout's namespaces may exist (named labs check; test
/// prefixes are unique to their process). On error, or a panic, whatever was built is
/// removed.
pub(crate) fn create(layout: &Layout, spec: &LabSpec) -> Result<Built, NamedError> {
    spec.validate_settings()?;
    let emulated = spec.uses_emulator();
    if !layout.paired && has_link_settings(spec) {
        return Err(NamedError::InvalidSetting {
            setting: "single".into(),
            value: layout.a.ns.clone(),
            reason: "a single namespace has no link to configure".into(),
        });
    }
    let built = Built {
        namespaces: layout.namespaces(emulated),
    };
    sys::ip_batch(None, &[], &host_lines(layout, emulated))?;
    configure::all(layout, spec)?;
    Ok(built)
}

/// Whether `spec` sets anything that needs a link (a single namespace has only `lo`; its
/// MTU is not applied).
fn has_link_settings(spec: &LabSpec) -> bool {
    spec.uses_emulator()
        || spec.ipv6
        || !spec.offloads.is_empty()
        || spec.rate_bps.is_some()
        || spec.cc.is_some()
        || spec.rps_cpus.is_some()
        || spec.server_rps_cpus.is_some()
        || spec.xps_cpus.is_some()
}

/// Deletes those of `namespaces` that exist, with one `ip -batch` that goes on past a
/// failing line; deleting an endpoint's namespace destroys its veth end, and with it the
/// peer. Returns the namespaces that existed.
pub(crate) fn teardown(namespaces: &[String]) -> Result<Vec<String>, NamedError> {
    let present: Vec<String> = namespaces
        .iter()
        .filter(|n| sys::netns_exists(n))
        .cloned()
        .collect();
    let lines: Vec<BatchLine> = present
        .iter()
        .map(|n| BatchLine::plain(format!("netns del {n}")))
        .collect();
    sys::ip_batch(None, &["-force"], &lines)?;
    Ok(present)
}

/// The host's part: the namespaces and the veth pairs, each end created in its namespace
/// with its MAC address.
fn host_lines(layout: &Layout, emulated: bool) -> Vec<BatchLine> {
    let (a, b, m) = (&layout.a, &layout.b, &layout.middle_ns);
    let mut l = vec![BatchLine::plain(format!("netns add {}", a.ns))];
    if !layout.paired {
        return l;
    }
    l.push(BatchLine::plain(format!("netns add {}", b.ns)));
    let veth = |x: &str, xmac: &str, xns: &str, y: &str, ymac: &str, yns: &str| {
        BatchLine::plain(format!(
            "link add {x} address {xmac} netns {xns} type veth peer name {y} address {ymac} netns {yns}"
        ))
    };
    if emulated {
        l.push(BatchLine::plain(format!("netns add {m}")));
        for e in [a, b] {
            l.push(veth(e.ifname, e.mac, &e.ns, e.mid_ifname, e.mid_mac, m));
        }
    } else {
        l.push(veth(a.ifname, a.mac, &a.ns, b.ifname, b.mac, &b.ns));
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_lines_per_layout() {
        let named = Layout::named("t");
        let l = host_lines(&named, false);
        assert_eq!(
            l.iter().map(|b| b.line.as_str()).collect::<Vec<_>>(),
            [
                "netns add wbl-t-c",
                "netns add wbl-t-s",
                "link add wbc address 02:77:62:00:00:01 netns wbl-t-c type veth peer name wbs \
                 address 02:77:62:00:00:02 netns wbl-t-s",
            ]
        );
        assert_eq!(host_lines(&named, true).len(), 5);
        let test = Layout::test("wbt1x2", true);
        let l = host_lines(&test, true);
        assert_eq!(l[2].line, "netns add wbt1x2-m");
        assert_eq!(
            l[3].line,
            "link add wba address 02:77:62:00:00:01 netns wbt1x2-a type veth peer name wbma \
             address 02:77:62:00:00:11 netns wbt1x2-m"
        );
        assert_eq!(host_lines(&Layout::test("wbt1x3", false), false).len(), 1);
        assert_eq!(test.namespaces(false), ["wbt1x2-a", "wbt1x2-b"]);
        assert_eq!(test.namespaces(true), ["wbt1x2-a", "wbt1x2-b", "wbt1x2-m"]);
    }

    #[test]
    fn a_single_namespace_takes_no_link_settings() {
        let layout = Layout::test("wbt-never-built", false);
        let spec = LabSpec {
            rate_bps: Some(1_000_000),
            ..LabSpec::default()
        };
        let e = create(&layout, &spec).unwrap_err();
        assert!(e.to_string().contains("no link"), "{e}");
    }
}
