//! TCP socket introspection: `TCP_INFO`, congestion control and path MTU.
//!
//! All functions take any `AsFd` socket (e.g. `std::net::TcpStream`,
//! `socket2::Socket`, `tokio::net::TcpStream`).

use std::io;
use std::mem::{offset_of, size_of};
use std::os::fd::AsFd;

use socket2::SockRef;

use crate::sockopt::{getsockopt, getsockopt_int, setsockopt, Pod};

/// Selected fields of the kernel's `struct tcp_info` (`TCP_INFO` socket option).
///
/// Fields that were added to the kernel structure after its original
/// definition are `Option`s: they are `None` when the running kernel returned
/// a structure too short to contain them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// TCP state (`tcpi_state`, e.g. 1 = `TCP_ESTABLISHED`).
    pub state: u8,
    /// Total number of retransmitted segments (`tcpi_total_retrans`).
    pub retransmits_total: u32,
    /// Smoothed round-trip time in microseconds (`tcpi_rtt`).
    pub rtt_us: u32,
    /// Round-trip time variance in microseconds (`tcpi_rttvar`).
    pub rttvar_us: u32,
    /// Minimum observed RTT in microseconds (`tcpi_min_rtt`); `None` if the
    /// kernel does not report it or no RTT sample has been taken yet.
    pub min_rtt_us: Option<u32>,
    /// Congestion window in segments (`tcpi_snd_cwnd`).
    pub snd_cwnd_segments: u32,
    /// Sender maximum segment size in bytes (`tcpi_snd_mss`).
    pub snd_mss_bytes: u32,
    /// Receiver maximum segment size in bytes (`tcpi_rcv_mss`).
    pub rcv_mss_bytes: u32,
    /// Path MTU in bytes (`tcpi_pmtu`).
    pub pmtu_bytes: u32,
    /// Most recent delivery rate estimate in bytes/s (`tcpi_delivery_rate`).
    pub delivery_rate_bytes_per_s: Option<u64>,
    /// Pacing rate in bytes/s (`tcpi_pacing_rate`); `None` when the kernel reports
    /// none (`~0`, unlimited) or the structure is too short.
    pub pacing_rate_bytes_per_s: Option<u64>,
    /// Bytes acknowledged by the peer (`tcpi_bytes_acked`).
    pub bytes_acked: Option<u64>,
    /// Bytes received in order from the peer (`tcpi_bytes_received`).
    pub bytes_received: Option<u64>,
    /// Bytes transmitted, including retransmissions (`tcpi_bytes_sent`).
    pub bytes_sent: Option<u64>,
    /// Bytes retransmitted (`tcpi_bytes_retrans`).
    pub bytes_retrans: Option<u64>,
    /// Time in microseconds the sender was limited by the receive window
    /// (`tcpi_rwnd_limited`).
    pub rwnd_limited_us: Option<u64>,
    /// Time in microseconds the sender was limited by the send buffer
    /// (`tcpi_sndbuf_limited`).
    pub sndbuf_limited_us: Option<u64>,
    /// Time in microseconds the connection was busy sending data
    /// (`tcpi_busy_time`).
    pub busy_time_us: Option<u64>,
    /// Segments the peer reported back as received twice (D-SACK,
    /// `tcpi_dsack_dups`): retransmissions of segments that had arrived.
    pub dsack_dups: Option<u32>,
}

/// Mirror of the kernel's `struct tcp_info` (include/uapi/linux/tcp.h), up
/// to and including `tcpi_snd_wnd` (Linux 5.4+). Newer kernels may append
/// more fields; the kernel copies only `min(optlen, its size)` bytes, so a
/// shorter buffer is fine.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct RawTcpInfo {
    tcpi_state: u8,
    tcpi_ca_state: u8,
    tcpi_retransmits: u8,
    tcpi_probes: u8,
    tcpi_backoff: u8,
    tcpi_options: u8,
    /// C bitfields `tcpi_snd_wscale:4, tcpi_rcv_wscale:4` (one byte).
    tcpi_wscale: u8,
    /// C bitfields `tcpi_delivery_rate_app_limited:1,
    /// tcpi_fastopen_client_fail:2` (one byte).
    tcpi_app_limited_fo_fail: u8,

    tcpi_rto: u32,
    tcpi_ato: u32,
    tcpi_snd_mss: u32,
    tcpi_rcv_mss: u32,

    tcpi_unacked: u32,
    tcpi_sacked: u32,
    tcpi_lost: u32,
    tcpi_retrans: u32,
    tcpi_fackets: u32,

    tcpi_last_data_sent: u32,
    tcpi_last_ack_sent: u32,
    tcpi_last_data_recv: u32,
    tcpi_last_ack_recv: u32,

    tcpi_pmtu: u32,
    tcpi_rcv_ssthresh: u32,
    tcpi_rtt: u32,
    tcpi_rttvar: u32,
    tcpi_snd_ssthresh: u32,
    tcpi_snd_cwnd: u32,
    tcpi_advmss: u32,
    tcpi_reordering: u32,

    tcpi_rcv_rtt: u32,
    tcpi_rcv_space: u32,

    tcpi_total_retrans: u32,

    tcpi_pacing_rate: u64,
    tcpi_max_pacing_rate: u64,
    tcpi_bytes_acked: u64,
    tcpi_bytes_received: u64,
    tcpi_segs_out: u32,
    tcpi_segs_in: u32,

    tcpi_notsent_bytes: u32,
    tcpi_min_rtt: u32,
    tcpi_data_segs_in: u32,
    tcpi_data_segs_out: u32,

    tcpi_delivery_rate: u64,

    tcpi_busy_time: u64,
    tcpi_rwnd_limited: u64,
    tcpi_sndbuf_limited: u64,

    tcpi_delivered: u32,
    tcpi_delivered_ce: u32,

    tcpi_bytes_sent: u64,
    tcpi_bytes_retrans: u64,
    tcpi_dsack_dups: u32,
    tcpi_reord_seen: u32,

    tcpi_rcv_ooopack: u32,

    tcpi_snd_wnd: u32,
}

// SAFETY: `RawTcpInfo` is `#[repr(C)]`, consists only of integers and has no
// padding (checked below), so every bit pattern is a valid value.
unsafe impl Pod for RawTcpInfo {}

// Layout checks against the kernel ABI (offsets from include/uapi/linux/tcp.h,
// identical on all Linux architectures because the first 64-bit field sits
// at an 8-aligned offset).
const _: () = {
    assert!(offset_of!(RawTcpInfo, tcpi_rto) == 8);
    assert!(offset_of!(RawTcpInfo, tcpi_pmtu) == 60);
    assert!(offset_of!(RawTcpInfo, tcpi_rtt) == 68);
    assert!(offset_of!(RawTcpInfo, tcpi_snd_cwnd) == 80);
    assert!(offset_of!(RawTcpInfo, tcpi_total_retrans) == 100);
    assert!(offset_of!(RawTcpInfo, tcpi_pacing_rate) == 104);
    assert!(offset_of!(RawTcpInfo, tcpi_bytes_acked) == 120);
    assert!(offset_of!(RawTcpInfo, tcpi_bytes_received) == 128);
    assert!(offset_of!(RawTcpInfo, tcpi_min_rtt) == 148);
    assert!(offset_of!(RawTcpInfo, tcpi_delivery_rate) == 160);
    assert!(offset_of!(RawTcpInfo, tcpi_busy_time) == 168);
    assert!(offset_of!(RawTcpInfo, tcpi_rwnd_limited) == 176);
    assert!(offset_of!(RawTcpInfo, tcpi_sndbuf_limited) == 184);
    assert!(offset_of!(RawTcpInfo, tcpi_bytes_sent) == 200);
    assert!(offset_of!(RawTcpInfo, tcpi_bytes_retrans) == 208);
    assert!(offset_of!(RawTcpInfo, tcpi_snd_wnd) == 228);
    assert!(size_of::<RawTcpInfo>() == 232);
};

/// Minimum `TCP_INFO` length we accept: everything up to and including
/// `tcpi_total_retrans` (present since Linux 2.6).
const MIN_TCP_INFO_LEN: usize = offset_of!(RawTcpInfo, tcpi_total_retrans) + size_of::<u32>();

/// Whether a field at `offset` of `size` bytes lies inside the `len` bytes
/// returned by the kernel.
const fn covers(len: usize, offset: usize, size: usize) -> bool {
    len >= offset + size
}

/// Reads `TCP_INFO` for a TCP socket.
///
/// Fields the running kernel does not provide (it returned a shorter
/// structure) are `None`.
///
/// # Errors
///
/// Fails if `getsockopt` fails (e.g. the descriptor is not a TCP socket) or
/// the kernel returned a structure shorter than the original `tcp_info`.
pub fn tcp_info<F: AsFd>(sock: &F) -> io::Result<TcpInfo> {
    let mut raw = RawTcpInfo::default();
    let len = getsockopt(sock.as_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, &mut raw)?;
    if len < MIN_TCP_INFO_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("TCP_INFO returned only {len} bytes (expected at least {MIN_TCP_INFO_LEN})"),
        ));
    }
    Ok(convert(&raw, len))
}

/// Builds a [`TcpInfo`] from the raw structure of which the kernel filled
/// the first `len` bytes.
fn convert(raw: &RawTcpInfo, len: usize) -> TcpInfo {
    macro_rules! opt {
        ($field:ident) => {
            covers(
                len,
                offset_of!(RawTcpInfo, $field),
                std::mem::size_of_val(&raw.$field),
            )
            .then_some(raw.$field)
        };
    }
    TcpInfo {
        state: raw.tcpi_state,
        retransmits_total: raw.tcpi_total_retrans,
        rtt_us: raw.tcpi_rtt,
        rttvar_us: raw.tcpi_rttvar,
        // The kernel initialises the min-RTT filter to ~0U until the first
        // RTT sample.
        min_rtt_us: opt!(tcpi_min_rtt).filter(|&v| v != u32::MAX),
        snd_cwnd_segments: raw.tcpi_snd_cwnd,
        snd_mss_bytes: raw.tcpi_snd_mss,
        rcv_mss_bytes: raw.tcpi_rcv_mss,
        pmtu_bytes: raw.tcpi_pmtu,
        delivery_rate_bytes_per_s: opt!(tcpi_delivery_rate),
        pacing_rate_bytes_per_s: opt!(tcpi_pacing_rate).filter(|&v| v != u64::MAX),
        bytes_acked: opt!(tcpi_bytes_acked),
        bytes_received: opt!(tcpi_bytes_received),
        bytes_sent: opt!(tcpi_bytes_sent),
        bytes_retrans: opt!(tcpi_bytes_retrans),
        rwnd_limited_us: opt!(tcpi_rwnd_limited),
        sndbuf_limited_us: opt!(tcpi_sndbuf_limited),
        busy_time_us: opt!(tcpi_busy_time),
        dsack_dups: opt!(tcpi_dsack_dups),
    }
}

/// Maximum length of a congestion control name including the NUL
/// (`TCP_CA_NAME_MAX`).
const TCP_CA_NAME_MAX: usize = 16;

/// Sets the TCP congestion control algorithm (`TCP_CONGESTION`), e.g.
/// `"cubic"`, `"reno"` or `"bbr"`.
///
/// # Errors
///
/// `InvalidInput` if the name is empty, contains NUL or is longer than 15
/// bytes; otherwise the `setsockopt` error (`ENOENT` for an unknown
/// algorithm, `EPERM` for one not in `net.ipv4.tcp_allowed_congestion_control`
/// when unprivileged).
pub fn set_congestion<F: AsFd>(sock: &F, name: &str) -> io::Result<()> {
    if name.is_empty() || name.len() >= TCP_CA_NAME_MAX || name.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid congestion control name {name:?}"),
        ));
    }
    SockRef::from(sock)
        .set_tcp_congestion(name.as_bytes())
        .map_err(|e| io::Error::new(e.kind(), format!("TCP_CONGESTION {name:?}: {e}")))
}

/// Returns the TCP congestion control algorithm in use (`TCP_CONGESTION`).
///
/// # Errors
///
/// Fails if `getsockopt` fails or the name is not UTF-8.
pub fn congestion<F: AsFd>(sock: &F) -> io::Result<String> {
    let mut bytes = SockRef::from(sock).tcp_congestion()?;
    if let Some(nul) = bytes.iter().position(|&b| b == 0) {
        bytes.truncate(nul);
    }
    String::from_utf8(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "congestion name is not UTF-8"))
}

/// Returns the current path MTU of a connected socket: `IP_MTU` for an
/// `AF_INET` socket, `IPV6_MTU` for an `AF_INET6` one (the family is taken
/// from `getsockname`).
///
/// # Errors
///
/// `ENOTCONN` if the socket is not connected, `Unsupported` for other
/// address families, or the underlying syscall error.
pub fn ip_mtu<F: AsFd>(sock: &F) -> io::Result<u32> {
    let local = SockRef::from(sock).local_addr()?;
    let (level, name) = match libc::c_int::from(local.family()) {
        libc::AF_INET => (libc::IPPROTO_IP, libc::IP_MTU),
        libc::AF_INET6 => (libc::IPPROTO_IPV6, libc::IPV6_MTU),
        other => {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("ip_mtu: unsupported address family {other}"),
            ))
        }
    };
    let mtu = getsockopt_int(sock.as_fd(), level, name)?;
    u32::try_from(mtu).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("kernel reported negative MTU {mtu}"),
        )
    })
}

/// Sets `SO_RCVLOWAT`: a blocking `read` sleeps until at least `bytes` are queued (or EOF,
/// an error, or the receive timeout). For a bulk receiver this cuts wake-ups, and with them
/// the cross-CPU wake-up work the sending CPU does for each one. Linux caps the value at half
/// the receive buffer.
///
/// # Errors
///
/// Returns the `setsockopt` error.
pub fn set_rcvlowat<F: AsFd>(sock: &F, bytes: u32) -> io::Result<()> {
    let val: libc::c_int = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    setsockopt(sock.as_fd(), libc::SOL_SOCKET, libc::SO_RCVLOWAT, val)
}

/// Sets `TCP_NOTSENT_LOWAT`: the socket counts as writable (for `poll`/`epoll` and a
/// blocking `write`) only while fewer than `bytes` of its send queue are not yet sent. Data
/// the window does not let out yet then waits in the application, not in the kernel. Values
/// above `i32::MAX` are capped there.
///
/// # Errors
///
/// Returns the `setsockopt` error.
pub fn set_notsent_lowat<F: AsFd>(sock: &F, bytes: u32) -> io::Result<()> {
    let val: libc::c_int = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    setsockopt(
        sock.as_fd(),
        libc::IPPROTO_TCP,
        libc::TCP_NOTSENT_LOWAT,
        val,
    )
}

/// The socket's own `TCP_NOTSENT_LOWAT`, bytes; `None` when it has none, and the
/// namespace's `net.ipv4.tcp_notsent_lowat` applies.
///
/// # Errors
///
/// Returns the `getsockopt` error.
pub fn notsent_lowat<F: AsFd>(sock: &F) -> io::Result<Option<u32>> {
    let v = getsockopt_int(sock.as_fd(), libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT)?;
    Ok(u32::try_from(v).ok().filter(|&v| v > 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{Ipv6Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
    use std::time::{Duration, Instant};

    /// Expected IPv4 path MTU over lo: the device MTU (65536 by default)
    /// capped by the kernel at IP_MAX_MTU (65535), since an IPv4 total length
    /// is 16 bits. (IPv6 caps at IP6_MAX_MTU = 65575, so 65536 shows through.)
    fn lo_v4_path_mtu() -> u32 {
        crate::netif::interface_mtu("lo").unwrap().min(65535)
    }

    fn pair(addr: &str) -> io::Result<(TcpStream, TcpStream)> {
        let listener = TcpListener::bind(addr)?;
        let client = TcpStream::connect(listener.local_addr()?)?;
        let (server, _) = listener.accept()?;
        Ok((client, server))
    }

    #[test]
    fn notsent_lowat_reads_back_what_was_set() {
        let (c, _s) = pair("127.0.0.1:0").unwrap();
        assert_eq!(notsent_lowat(&c).unwrap(), None);
        set_notsent_lowat(&c, 16384).unwrap();
        assert_eq!(notsent_lowat(&c).unwrap(), Some(16384));
        set_notsent_lowat(&c, u32::MAX).unwrap();
        assert_eq!(notsent_lowat(&c).unwrap(), Some(i32::MAX as u32));
    }

    #[test]
    fn layout_bitfield_bytes_do_not_shift_fields() {
        // The two bitfield bytes are single bytes; tcpi_rto must follow them.
        assert_eq!(offset_of!(RawTcpInfo, tcpi_wscale), 6);
        assert_eq!(offset_of!(RawTcpInfo, tcpi_app_limited_fo_fail), 7);
        assert_eq!(offset_of!(RawTcpInfo, tcpi_rto), 8);
    }

    #[test]
    fn short_struct_gives_none() {
        let raw = RawTcpInfo {
            tcpi_bytes_acked: 5,
            tcpi_delivery_rate: 7,
            tcpi_min_rtt: 3,
            ..RawTcpInfo::default()
        };
        let info = convert(&raw, 104);
        assert_eq!(info.bytes_acked, None);
        assert_eq!(info.min_rtt_us, None);
        let info = convert(&raw, 136);
        assert_eq!(info.bytes_acked, Some(5));
        assert_eq!(info.bytes_received, Some(0));
        assert_eq!(info.delivery_rate_bytes_per_s, None);
        let info = convert(&raw, 168);
        assert_eq!(info.min_rtt_us, Some(3));
        assert_eq!(info.delivery_rate_bytes_per_s, Some(7));
        assert_eq!(info.busy_time_us, None);
        assert_eq!(info.bytes_sent, None);
        let info = convert(&raw, size_of::<RawTcpInfo>());
        assert_eq!(info.bytes_sent, Some(0));
        assert_eq!(info.bytes_retrans, Some(0));
        let raw = RawTcpInfo {
            tcpi_min_rtt: u32::MAX,
            ..RawTcpInfo::default()
        };
        assert_eq!(convert(&raw, 232).min_rtt_us, None);
    }

    #[test]
    fn tcp_info_over_loopback() {
        const N: usize = 1 << 20;
        let (mut client, mut server) = pair("127.0.0.1:0").unwrap();
        let reader = std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            let mut total = 0;
            while total < N {
                let n = server.read(&mut buf).unwrap();
                assert!(n > 0, "unexpected EOF");
                total += n;
            }
            server
        });
        let data = vec![0x5au8; N];
        client.write_all(&data).unwrap();
        let server = reader.join().unwrap();

        // Wait until the final ACK has been processed by the sender.
        let deadline = Instant::now() + Duration::from_secs(5);
        let ci = loop {
            let ci = tcp_info(&client).unwrap();
            if ci.bytes_acked.unwrap() >= N as u64 || Instant::now() > deadline {
                break ci;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let si = tcp_info(&server).unwrap();

        assert_eq!(ci.state, 1, "TCP_ESTABLISHED");
        assert_eq!(si.state, 1, "TCP_ESTABLISHED");
        let n = N as u64;
        let acked = ci.bytes_acked.unwrap();
        // The client's counter may include the SYN's sequence number.
        assert!((n..=n + 16).contains(&acked), "bytes_acked {acked}");
        let received = si.bytes_received.unwrap();
        assert!(
            (n..=n + 16).contains(&received),
            "bytes_received {received}"
        );
        // Loopback can drop too: a reader that is not scheduled lets the
        // receive queue outgrow its memory, and the kernel prunes it (CI saw
        // 14,875 bytes retransmitted here). Whatever was retransmitted, the
        // kernel counts it in `bytes_sent` as well (tcp_transmit_skb adds
        // every data segment it sends; tcp_retransmit_skb adds to
        // `bytes_retrans` only the ones that left), and in the segment count.
        let sent = ci.bytes_sent.unwrap();
        let retrans = ci.bytes_retrans.unwrap();
        assert!(
            sent >= n + retrans,
            "bytes_sent {sent} < {n} + bytes_retrans {retrans}"
        );
        assert_eq!(
            retrans > 0,
            ci.retransmits_total > 0,
            "bytes_retrans {retrans}, segments retransmitted {}",
            ci.retransmits_total
        );
        assert!(ci.snd_mss_bytes > 0);
        assert!(si.rcv_mss_bytes > 0);
        assert!(ci.snd_cwnd_segments > 0);
        // lo has MTU 65536, but IPv4 routes cap the path MTU at IP_MAX_MTU.
        assert_eq!(ci.pmtu_bytes, lo_v4_path_mtu());
        assert!(ci.busy_time_us.is_some());
        assert!(ci.delivery_rate_bytes_per_s.is_some());
        assert!(ci.min_rtt_us.is_some(), "{ci:?}");
        assert!(ci.rtt_us > 0);
    }

    #[test]
    fn congestion_round_trip() {
        let (client, _server) = pair("127.0.0.1:0").unwrap();
        for name in ["cubic", "reno"] {
            match set_congestion(&client, name) {
                Ok(()) => assert_eq!(congestion(&client).unwrap(), name),
                // Unprivileged users may only pick algorithms listed in
                // net.ipv4.tcp_allowed_congestion_control.
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                    crate::require::capability("root", false, &format!("setting {name}: {e}"));
                }
                Err(e) => panic!("{name}: {e}"),
            }
        }
    }

    #[test]
    fn congestion_unknown_errors() {
        let sock = TcpStream::connect(
            TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap(),
        )
        .unwrap();
        assert!(set_congestion(&sock, "no-such-cc").is_err());
        assert_eq!(
            set_congestion(&sock, "").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            set_congestion(&sock, "a-very-long-congestion-name")
                .unwrap_err()
                .kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn tcp_info_on_udp_socket_errors() {
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(tcp_info(&udp).is_err());
    }

    #[test]
    fn ip_mtu_loopback_v4() {
        let (client, _server) = pair("127.0.0.1:0").unwrap();
        assert_eq!(ip_mtu(&client).unwrap(), lo_v4_path_mtu());
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        udp.connect("127.0.0.1:9").unwrap();
        assert_eq!(ip_mtu(&udp).unwrap(), lo_v4_path_mtu());
    }

    #[test]
    fn ip_mtu_unconnected_errors() {
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(ip_mtu(&udp).is_err());
    }

    #[test]
    fn ip_mtu_loopback_v6() {
        let addr = SocketAddr::from((Ipv6Addr::LOCALHOST, 0));
        let Ok((client, _server)) = pair(&addr.to_string()) else {
            crate::require::capability("ipv6", false, "::1 not usable");
            return;
        };
        // IPv6 caps at IP6_MAX_MTU (65575), so the device MTU (65536) shows.
        let lo = crate::netif::interface_mtu("lo").unwrap();
        assert_eq!(ip_mtu(&client).unwrap(), lo);
        assert_eq!(tcp_info(&client).unwrap().pmtu_bytes, lo);
    }
}
