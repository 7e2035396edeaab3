//! Where UDP datagrams are dropped at a receiving host: the per-socket drop counter the
//! kernel attaches to received datagrams (`SO_RXQ_OVFL`), the per-socket `drops` column of
//! `/proc/net/udp` (which also covers drops after the last datagram read), and the
//! namespace-wide `Udp:` counters of `/proc/net/snmp`.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;

/// Ask the kernel to attach the socket's cumulative drop count (datagrams it discarded
/// because the receive buffer was full) to every datagram read with [`recv_counting`].
pub fn enable_drop_counter(s: &UdpSocket) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: `s` is an open socket for the duration of the call; the option value is a
    // valid `c_int` whose size is passed.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RXQ_OVFL,
            (&one as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One datagram read by [`recv_counting`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Payload bytes copied into the buffer.
    pub len: usize,
    /// Where it came from.
    pub from: SocketAddr,
    /// The socket's cumulative drop count when this datagram was queued (`SO_RXQ_OVFL`);
    /// `None` when the kernel attached none (the option is off, or no drop happened yet on
    /// kernels that omit a zero count).
    pub drops: Option<u32>,
}

fn socket_addr(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match libc::c_int::from(ss.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a `sockaddr_in`, which is smaller
            // than and alignment-compatible with `sockaddr_storage`.
            let a: &libc::sockaddr_in = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            Some(SocketAddr::V4(SocketAddrV4::new(
                u32::from_be(a.sin_addr.s_addr).into(),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for `sockaddr_in6`.
            let a: &libc::sockaddr_in6 = unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            Some(SocketAddr::V6(SocketAddrV6::new(
                a.sin6_addr.s6_addr.into(),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// `recvmsg(2)` one datagram into `buf`, with its source address and the `SO_RXQ_OVFL`
/// drop count when the kernel attached one. Honours the socket's read timeout like
/// `recv_from`.
pub fn recv_counting(s: &UdpSocket, buf: &mut [u8]) -> io::Result<Received> {
    // SAFETY: an all-zero `sockaddr_storage` is a valid value.
    let mut addr: libc::sockaddr_storage = unsafe { zeroed() };
    // Room for one cmsghdr carrying a u32, 8-byte aligned.
    let mut control = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: an all-zero `msghdr` is a valid value; the pointers are set below.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_name = (&mut addr as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of::<[u64; 8]>();
    // SAFETY: `msg` points at `addr`, one iovec over `buf` and `control`, all live and
    // writable for the call, with their true lengths.
    let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut drops = None;
    // SAFETY: `msg` was filled by the kernel; CMSG_FIRSTHDR/NXTHDR walk only within
    // `msg_control`/`msg_controllen`, and CMSG_DATA of a header of the right level and type
    // points at a u32 inside the buffer (read unaligned).
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_RXQ_OVFL {
                drops = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<u32>()));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    let from = socket_addr(&addr).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "datagram from an unknown address family",
        )
    })?;
    Ok(Received {
        len: n as usize,
        from,
        drops,
    })
}

/// The socket's inode number (`/proc/self/fd/N` → `socket:[INODE]`).
fn socket_inode(s: &UdpSocket) -> io::Result<u64> {
    let link = std::fs::read_link(format!("/proc/self/fd/{}", s.as_raw_fd()))?;
    let text = link.to_string_lossy();
    text.strip_prefix("socket:[")
        .and_then(|t| t.strip_suffix(']'))
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("not a socket: {text}")))
}

/// The `drops` column of the line with `inode` in a `/proc/net/udp`-format table. The data
/// lines have fixed fields (`tx_queue:rx_queue` and `tr:tm->when` are one field each, though
/// the header names them with two words): `sl local rem st queues timer retrnsmt uid timeout
/// inode ref pointer drops`.
pub fn drops_in_table(table: &str, inode: u64) -> Option<u64> {
    const INODE: usize = 9;
    const DROPS: usize = 12;
    table.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let ino: u64 = f.get(INODE)?.parse().ok()?;
        (ino == inode).then(|| f.get(DROPS)?.parse().ok()).flatten()
    })
}

/// The kernel's count of datagrams this socket dropped since it was created (its receive
/// buffer was full), from `/proc/self/net/udp` or `udp6`.
pub fn socket_drops(s: &UdpSocket) -> io::Result<u64> {
    let inode = socket_inode(s)?;
    for table in ["/proc/self/net/udp", "/proc/self/net/udp6"] {
        if let Some(d) = std::fs::read_to_string(table)
            .ok()
            .and_then(|t| drops_in_table(&t, inode))
        {
            return Ok(d);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        "the socket is not in /proc/self/net/udp or udp6",
    ))
}

/// The namespace-wide UDP drop counters (`Udp:` of `/proc/net/snmp`, IPv4 and IPv6 added).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UdpSnmp {
    /// Datagrams dropped because a socket's receive buffer was full.
    pub rcvbuf_errors: u64,
    /// Datagrams received that could not be delivered (includes `rcvbuf_errors`).
    pub in_errors: u64,
}

/// `Udp: InErrors` and `RcvbufErrors` from a `/proc/net/snmp`-format text (two lines: names,
/// values).
pub fn parse_snmp_udp(text: &str) -> Option<UdpSnmp> {
    let mut it = text.lines().filter(|l| l.starts_with("Udp:"));
    let names: Vec<&str> = it.next()?.split_whitespace().collect();
    let values: Vec<&str> = it.next()?.split_whitespace().collect();
    let get = |n: &str| -> Option<u64> {
        let i = names.iter().position(|x| *x == n)?;
        values.get(i)?.parse().ok()
    };
    Some(UdpSnmp {
        rcvbuf_errors: get("RcvbufErrors")?,
        in_errors: get("InErrors")?,
    })
}

/// `Udp6InErrors` and `Udp6RcvbufErrors` from a `/proc/net/snmp6` text (name value lines).
fn parse_snmp6_udp(text: &str) -> Option<UdpSnmp> {
    let get = |n: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(n)?.trim().parse().ok())
    };
    Some(UdpSnmp {
        rcvbuf_errors: get("Udp6RcvbufErrors")?,
        in_errors: get("Udp6InErrors")?,
    })
}

/// The current network namespace's UDP drop counters, IPv4 and IPv6 added.
pub fn udp_snmp() -> io::Result<UdpSnmp> {
    let v4 = parse_snmp_udp(&std::fs::read_to_string("/proc/self/net/snmp")?).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "no Udp: lines in /proc/net/snmp",
        )
    })?;
    let v6 = std::fs::read_to_string("/proc/self/net/snmp6")
        .ok()
        .and_then(|t| parse_snmp6_udp(&t))
        .unwrap_or_default();
    Ok(UdpSnmp {
        rcvbuf_errors: v4.rcvbuf_errors + v6.rcvbuf_errors,
        in_errors: v4.in_errors + v6.in_errors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_parse() {
        let snmp = "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\n\
                    Udp: 100 2 15 90 12 0\n";
        assert_eq!(
            parse_snmp_udp(snmp),
            Some(UdpSnmp {
                rcvbuf_errors: 12,
                in_errors: 15
            })
        );
        let table = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
  123: 0100007F:9C40 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4242 2 0000000000000000 208\n";
        assert_eq!(drops_in_table(table, 4242), Some(208));
        assert_eq!(drops_in_table(table, 1), None);
    }

    /// Ground truth: a receiver that never reads, flooded past its buffer. The kernel's
    /// /proc drop column, the SO_RXQ_OVFL count on the datagrams that got in, and what was
    /// sent minus what is queued all agree.
    #[test]
    fn overflow_is_counted_three_ways() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_drop_counter(&rx).unwrap();
        let _ = socket2::SockRef::from(&rx).set_recv_buffer_size(4096);
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let sent = 200u64;
        for i in 0..sent {
            tx.send(&i.to_be_bytes()).unwrap();
        }
        let dropped = socket_drops(&rx).unwrap();
        assert!(dropped > 0, "a 4 KiB buffer took 200 datagrams");
        rx.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 64];
        let (mut queued, mut last) = (0u64, None);
        while let Ok(r) = recv_counting(&rx, &mut buf) {
            assert_eq!(r.len, 8);
            assert_eq!(r.from, tx.local_addr().unwrap());
            queued += 1;
            last = r.drops.or(last);
        }
        assert_eq!(queued + dropped, sent);
        // Every drop happened before the last queued datagram's enqueue or after it; the
        // attached count never exceeds the final one.
        assert!(u64::from(last.unwrap_or(0)) <= dropped);
        assert!(udp_snmp().is_ok());
    }
}
