//! Socket options a [`TestSpec`] asks for, applied the same way on both ends.

use socket2::SockRef;
use std::os::fd::AsFd;
use wirebench_model::spec::TestSpec;

use crate::NetError;

/// Apply window (SO_SNDBUF/SO_RCVBUF), congestion control, TCP_NODELAY, TCP_MAXSEG and
/// TCP_NOTSENT_LOWAT to a TCP data socket (a UDP spec has only the window).
/// Call before `connect` on the client so the window scale is chosen with the buffer in place
/// (then [`reassert_congestion`] after it), and after `accept` on the server.
pub fn apply<F: AsFd>(sock: &F, spec: &TestSpec) -> Result<(), NetError> {
    let s = SockRef::from(sock);
    if let Some(w) = spec.common.window_bytes {
        s.set_send_buffer_size(w as usize)
            .map_err(|e| NetError::SocketOption(format!("SO_SNDBUF {w}: {e}")))?;
        s.set_recv_buffer_size(w as usize)
            .map_err(|e| NetError::SocketOption(format!("SO_RCVBUF {w}: {e}")))?;
    }
    let tcp = spec.tcp();
    if let Some(cc) = tcp.and_then(|t| t.congestion.as_deref()) {
        wirebench_sys::tcp::set_congestion(sock, cc).map_err(|e| {
            let avail =
                wirebench_sys::host::read_sysctl("net.ipv4.tcp_available_congestion_control")
                    .unwrap_or_default();
            NetError::SocketOption(format!(
                "congestion control '{cc}' is not usable here ({e}); available: {avail}"
            ))
        })?;
    }
    if tcp.is_some_and(|t| t.nodelay) {
        s.set_tcp_nodelay(true)
            .map_err(|e| NetError::SocketOption(format!("TCP_NODELAY: {e}")))?;
    }
    if let Some(mss) = tcp.and_then(|t| t.mss_bytes) {
        s.set_tcp_mss(mss)
            .map_err(|e| NetError::SocketOption(format!("TCP_MAXSEG {mss}: {e}")))?;
    }
    if let Some(l) = tcp.and_then(|t| t.notsent_lowat_bytes) {
        wirebench_sys::tcp::set_notsent_lowat(sock, l)
            .map_err(|e| NetError::SocketOption(format!("TCP_NOTSENT_LOWAT {l}: {e}")))?;
    }
    apply_ip(sock, spec)
}

/// Set the spec's congestion control (`-C`) again on a connected socket whose connection
/// took another: a route's `congctl` replaces at `connect` the algorithm set before it
/// (the kernel's `tcp_ca_dst_init`), so the client's sockets asked for reno would run the
/// route's cubic. A kernel that refuses the change (a route's `congctl lock`, say) leaves
/// the route's; that is logged here, and the result reports the mismatch per flow.
pub fn reassert_congestion<F: AsFd>(sock: &F, spec: &TestSpec) {
    let Some(cc) = spec.tcp().and_then(|t| t.congestion.as_deref()) else {
        return;
    };
    match wirebench_sys::tcp::congestion(sock) {
        Ok(now) if now == cc => {}
        Ok(now) => {
            if let Err(e) = wirebench_sys::tcp::set_congestion(sock, cc) {
                tracing::warn!(
                    "the connection's route chose congestion control '{}' and the kernel \
                     refused '{}' after connect: {e}",
                    wirebench_model::text::escape(&now),
                    wirebench_model::text::escape(cc)
                );
            }
        }
        Err(e) => tracing::debug!("reading the congestion control after connect: {e}"),
    }
}

/// The IP-level options of every data socket, TCP or UDP: type of service, the pacing cap
/// and Don't Fragment.
pub fn apply_ip<F: AsFd>(sock: &F, spec: &TestSpec) -> Result<(), NetError> {
    let s = SockRef::from(sock);
    let v6 = s.domain().is_ok_and(|d| d == socket2::Domain::IPV6);
    let c = &spec.common;
    if let Some(tos) = c.tos {
        let r = if v6 {
            s.set_tclass_v6(u32::from(tos))
        } else {
            s.set_tos_v4(u32::from(tos))
        };
        r.map_err(|e| NetError::SocketOption(format!("IP_TOS {tos:#04x}: {e}")))?;
    }
    if let Some(bps) = c.fq_rate_bps {
        wirebench_sys::ipopt::set_max_pacing_rate(sock, bps / 8)
            .map_err(|e| NetError::SocketOption(format!("SO_MAX_PACING_RATE {bps} bit/s: {e}")))?;
    }
    if c.dont_fragment {
        wirebench_sys::ipopt::set_dont_fragment(sock, v6)
            .map_err(|e| NetError::SocketOption(format!("Don't Fragment: {e}")))?;
    }
    Ok(())
}
