//! What a testbed's parts are called and where its addresses are: the two layouts, a named
//! lab's ([`Layout::named`]) and a test's ([`Layout::test`]), differ in names and
//! addresses and in the two things tests rely on (ARP between the endpoints, the kernel's
//! own IPv6 set-up); everything else is built alike.

use crate::emu::{IF_MA, IF_MB};
use crate::named::{
    names, Endpoint, CLIENT_IPV6, CLIENT_MAC, IF_MID_CLIENT, IF_MID_SERVER, SERVER_IPV6,
    SERVER_MAC, SUBNET_IPV4, SUBNET_IPV6,
};
use crate::{Side, ADDR_A, ADDR_B, IF_A, IF_B, SUBNET};

/// MAC of the middle namespace's veth end facing end A (never seen by the endpoints: the
/// forwarder writes frames unchanged).
pub(crate) const MID_A_MAC: &str = "02:77:62:00:00:11";
/// MAC of the middle namespace's veth end facing end B.
pub(crate) const MID_B_MAC: &str = "02:77:62:00:00:12";

/// One end of a testbed: its namespace, its veth end and that end's addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct End {
    /// The namespace.
    pub(crate) ns: String,
    /// Its veth end.
    pub(crate) ifname: &'static str,
    /// That veth end's MAC address.
    pub(crate) mac: &'static str,
    /// Its IPv4 address (on a /24).
    pub(crate) ipv4: &'static str,
    /// Its IPv6 address (on a /64; only with [`crate::named::LabSpec::ipv6`]).
    pub(crate) ipv6: &'static str,
    /// The middle namespace's veth end facing this end (with the emulator).
    pub(crate) mid_ifname: &'static str,
    /// Its MAC address.
    pub(crate) mid_mac: &'static str,
}

/// How a testbed is named and addressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// End A: a named lab's client.
    pub(crate) a: End,
    /// End B: a named lab's server (not built for a single namespace).
    pub(crate) b: End,
    /// Two ends joined by veth; `false`: only end A's namespace, with its loopback.
    pub(crate) paired: bool,
    /// The middle namespace (built with the emulator).
    pub(crate) middle_ns: String,
    /// The IPv4 subnet of the ends' addresses.
    pub(crate) subnet_v4: &'static str,
    /// The IPv6 subnet.
    pub(crate) subnet_v6: &'static str,
    /// Permanent neighbour entries for each other in both ends, so no ARP (or ND) crosses
    /// the link.
    pub(crate) static_neighbors: bool,
    /// Leave IPv6 as the kernel sets it up in every namespace. Otherwise it is disabled
    /// in all of them (no router or neighbour solicitations, no DAD, no MLD frames),
    /// except in the ends of a spec with IPv6 addresses.
    pub(crate) kernel_ipv6: bool,
}

impl Layout {
    /// Named lab `name`: `wbl-<name>-c` (`wbc`, [`crate::named::CLIENT_IPV4`]) and
    /// `wbl-<name>-s` (`wbs`, [`crate::named::SERVER_IPV4`]), middle `wbl-<name>-m`
    /// (`wbmc`, `wbms`); static neighbours, IPv6 off unless the spec asks for it.
    pub(crate) fn named(name: &str) -> Layout {
        let end = |side: Endpoint, mid_ifname, mid_mac| End {
            ns: side.ns(name),
            ifname: side.ifname(),
            mac: match side {
                Endpoint::Client => CLIENT_MAC,
                Endpoint::Server => SERVER_MAC,
            },
            ipv4: side.ipv4(),
            ipv6: side.ipv6(),
            mid_ifname,
            mid_mac,
        };
        Layout {
            a: end(Endpoint::Client, IF_MID_CLIENT, MID_A_MAC),
            b: end(Endpoint::Server, IF_MID_SERVER, MID_B_MAC),
            paired: true,
            middle_ns: names::middle(name),
            subnet_v4: SUBNET_IPV4,
            subnet_v6: SUBNET_IPV6,
            static_neighbors: true,
            kernel_ipv6: false,
        }
    }

    /// A test's testbed: `<prefix>-a` (`wba`, [`ADDR_A`]) and `<prefix>-b` (`wbb`,
    /// [`ADDR_B`]), middle `<prefix>-m` (`wbma`, `wbmb`); ARP between the ends and the
    /// kernel's IPv6 (an [`crate::emu::EmulatedPath`] changes both to a lab's).
    pub(crate) fn test(prefix: &str, paired: bool) -> Layout {
        let end = |side: Side, ipv6, mac, mid_ifname, mid_mac| End {
            ns: match side {
                Side::A => format!("{prefix}-a"),
                Side::B => format!("{prefix}-b"),
            },
            ifname: match side {
                Side::A => IF_A,
                Side::B => IF_B,
            },
            mac,
            ipv4: match side {
                Side::A => ADDR_A,
                Side::B => ADDR_B,
            },
            ipv6,
            mid_ifname,
            mid_mac,
        };
        Layout {
            a: end(Side::A, CLIENT_IPV6, CLIENT_MAC, IF_MA, MID_A_MAC),
            b: end(Side::B, SERVER_IPV6, SERVER_MAC, IF_MB, MID_B_MAC),
            paired,
            middle_ns: format!("{prefix}-m"),
            subnet_v4: SUBNET,
            subnet_v6: SUBNET_IPV6,
            static_neighbors: false,
            kernel_ipv6: true,
        }
    }

    /// The ends that are built: A, and B if paired.
    pub(crate) fn ends(&self) -> Vec<&End> {
        if self.paired {
            vec![&self.a, &self.b]
        } else {
            vec![&self.a]
        }
    }

    /// The other end of `end` (`None` without a pair).
    pub(crate) fn peer(&self, end: &End) -> Option<&End> {
        match (self.paired, end == &self.a) {
            (false, _) => None,
            (true, true) => Some(&self.b),
            (true, false) => Some(&self.a),
        }
    }

    /// The namespaces built for a testbed with (`emulated`) or without the middle one.
    pub(crate) fn namespaces(&self, emulated: bool) -> Vec<String> {
        let mut v: Vec<String> = self.ends().iter().map(|e| e.ns.clone()).collect();
        if emulated && self.paired {
            v.push(self.middle_ns.clone());
        }
        v
    }
}
