//! The environment a measurement was taken in.

use std::net::IpAddr;

use wirebench_model::side::{Environment, InterfaceEnv};
use wirebench_sys::{host, netif, thread};

fn triple(s: &str) -> Option<[u64; 3]> {
    let v: Vec<u64> = s
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    (v.len() == 3).then(|| [v[0], v[1], v[2]])
}

/// Probe the host; `local_addr` (the local end of a data connection) selects the interface.
/// Every field that cannot be read is left empty rather than guessed.
pub fn probe(local_addr: Option<IpAddr>) -> Environment {
    let sysctl = |n: &str| host::read_sysctl(n).ok();
    let interface = local_addr
        .and_then(|a| netif::interface_for_addr(a).ok().flatten())
        .map(|name| {
            let off = netif::interface_offloads(&name).unwrap_or_default();
            InterfaceEnv {
                mtu_bytes: netif::interface_mtu(&name).ok(),
                rx_checksum: off.rx_checksum,
                tx_checksum: off.tx_checksum,
                scatter_gather: off.scatter_gather,
                tso: off.tso,
                gso: off.gso,
                gro: off.gro,
                name,
            }
        });
    Environment {
        software: format!("wirebench {}", env!("CARGO_PKG_VERSION")),
        hostname: host::hostname().ok(),
        boot_id: sysctl("kernel.random.boot_id"),
        kernel_release: host::kernel_release().ok(),
        cpu_model: host::cpu_model(),
        cpus_online: Some(thread::online_cpus()),
        default_congestion: sysctl("net.ipv4.tcp_congestion_control"),
        available_congestion: sysctl("net.ipv4.tcp_available_congestion_control")
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default(),
        tcp_rmem_bytes: sysctl("net.ipv4.tcp_rmem").as_deref().and_then(triple),
        tcp_wmem_bytes: sysctl("net.ipv4.tcp_wmem").as_deref().and_then(triple),
        rmem_max_bytes: sysctl("net.core.rmem_max").and_then(|s| s.parse().ok()),
        wmem_max_bytes: sysctl("net.core.wmem_max").and_then(|s| s.parse().ok()),
        interface,
    }
}
