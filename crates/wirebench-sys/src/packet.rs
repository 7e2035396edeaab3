//! `AF_PACKET` raw sockets: whole link-layer frames in and out of one interface.
//!
//! A [`PacketSocket`] is bound to one interface (by index, resolved in the
//! caller's network namespace). [`PacketSocket::open`] receives every frame
//! the interface sees (`ETH_P_ALL`), [`PacketSocket::open_send_only`] binds with
//! protocol 0 and receives nothing (for a pure transmitter). Frames read here
//! are what the device carries: with TSO or GRO on they may be super-frames
//! larger than the MTU, and with transmit checksum offload TCP/UDP frames may
//! carry only a partial checksum, so a forwarder must switch those offloads off
//! (`ethtool -K <if> tso off gso off gro off tx off`) on the path.
//!
//! Frames the host itself transmits on the interface are also delivered to
//! an `ETH_P_ALL` socket (with `sll_pkttype == PACKET_OUTGOING`); a forwarder
//! must ignore them ([`PacketSocket::set_ignore_outgoing`] and/or
//! [`RecvMeta::outgoing`]) or it loops.

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::sockopt::{getsockopt, Pod};

/// Value of `sll_pkttype` for frames this host sent (`PACKET_OUTGOING`).
pub const PACKET_OUTGOING: u8 = 4;

/// Resolves an interface name to its index in the calling thread's network
/// namespace (`if_nametoindex(3)`).
///
/// # Errors
///
/// `InvalidInput` for a name with NUL or too long, `NotFound` if there is no
/// such interface.
pub fn ifindex(name: &str) -> io::Result<u32> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid interface name {name:?}"),
        ));
    }
    let c = CString::new(name).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("interface name {name:?} contains NUL"),
        )
    })?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        let e = io::Error::last_os_error();
        let kind = if e.raw_os_error() == Some(libc::ENODEV) {
            io::ErrorKind::NotFound
        } else {
            e.kind()
        };
        return Err(io::Error::new(kind, format!("interface {name:?}: {e}")));
    }
    Ok(idx)
}

/// What [`PacketSocket::recv`] learned about one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvMeta {
    /// The frame's full length in bytes (link-layer header included), even
    /// when it did not fit the buffer.
    pub len: usize,
    /// True if `len` exceeds the buffer: only the first `buf.len()` bytes
    /// were stored.
    pub truncated: bool,
    /// `sll_pkttype`: `PACKET_HOST` (0), `PACKET_BROADCAST` (1),
    /// `PACKET_MULTICAST` (2), `PACKET_OTHERHOST` (3), `PACKET_OUTGOING` (4).
    pub pkttype: u8,
    /// Index of the interface the frame was seen on.
    pub ifindex: u32,
    /// When the kernel received the frame (`CLOCK_REALTIME`), if
    /// [`PacketSocket::set_timestamps`] is on.
    pub timestamp: Option<SystemTime>,
}

impl RecvMeta {
    /// True for a frame this host transmitted (`PACKET_OUTGOING`).
    pub fn outgoing(&self) -> bool {
        self.pkttype == PACKET_OUTGOING
    }
}

/// Kernel counters of a packet socket (`PACKET_STATISTICS`), since the
/// previous read (reading resets them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacketStats {
    /// Frames that reached the socket (queued or dropped).
    pub packets: u32,
    /// Frames dropped because the receive buffer was full.
    pub drops: u32,
}

/// `struct tpacket_stats` (include/uapi/linux/if_packet.h).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct TpacketStats {
    tp_packets: u32,
    tp_drops: u32,
}

// SAFETY: two `u32`s, `repr(C)`; any bit pattern is valid.
unsafe impl Pod for TpacketStats {}

/// An `AF_PACKET`/`SOCK_RAW` socket bound to one interface.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    ifindex: u32,
}

/// A `sockaddr_ll` for `ifindex` and `protocol` (host order).
fn sockaddr_ll(ifindex: u32, protocol: u16) -> io::Result<libc::sockaddr_ll> {
    // SAFETY: `sockaddr_ll` is a C struct of integers and byte arrays; all
    // zeroes is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
    sll.sll_family = libc::AF_PACKET as libc::c_ushort;
    sll.sll_protocol = protocol.to_be();
    sll.sll_ifindex = libc::c_int::try_from(ifindex)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface index too large"))?;
    Ok(sll)
}

fn setsockopt_raw<T>(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    let len = libc::socklen_t::try_from(size_of::<T>())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "option too large"))?;
    // SAFETY: `fd` is open for the borrow; `value` points to `len` readable
    // bytes of a plain C option value the kernel only reads.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *const T).cast::<libc::c_void>(),
            len,
        )
    };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl PacketSocket {
    fn open_proto(ifindex: u32, protocol: u16) -> io::Result<PacketSocket> {
        // SAFETY: plain syscall with constant arguments; the result is checked.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::c_int::from(protocol.to_be()),
            )
        };
        if raw == -1 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a freshly created descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let sll = sockaddr_ll(ifindex, protocol)?;
        // SAFETY: `sll` is a valid `sockaddr_ll` and the length passed is its
        // exact size; the kernel only reads it.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast::<libc::sockaddr>(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc == -1 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("bind AF_PACKET to ifindex {ifindex}: {e}"),
            ));
        }
        Ok(PacketSocket { fd, ifindex })
    }

    /// Opens a socket that receives every frame (`ETH_P_ALL`) seen on
    /// interface `ifindex` (of the calling thread's namespace) and can send
    /// frames out of it. Needs `CAP_NET_RAW`.
    ///
    /// # Errors
    ///
    /// `socket(2)` or `bind(2)` failed.
    pub fn open(ifindex: u32) -> io::Result<PacketSocket> {
        Self::open_proto(ifindex, libc::ETH_P_ALL as u16)
    }

    /// Opens a socket bound to `ifindex` with protocol 0: it receives
    /// nothing and only sends.
    ///
    /// # Errors
    ///
    /// `socket(2)` or `bind(2)` failed.
    pub fn open_send_only(ifindex: u32) -> io::Result<PacketSocket> {
        Self::open_proto(ifindex, 0)
    }

    /// The interface index this socket is bound to.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// `PACKET_IGNORE_OUTGOING`: do not deliver frames this host transmits
    /// on the interface (Linux ≥ 4.20).
    ///
    /// # Errors
    ///
    /// `setsockopt(2)` failed.
    pub fn set_ignore_outgoing(&self, on: bool) -> io::Result<()> {
        let v = libc::c_int::from(on);
        setsockopt_raw(
            self.fd.as_fd(),
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            &v,
        )
    }

    /// Puts the interface in promiscuous mode for as long as this socket
    /// lives (`PACKET_ADD_MEMBERSHIP`/`PACKET_MR_PROMISC`; the kernel undoes
    /// it when the socket closes), so frames for other MAC addresses are
    /// received on drivers that filter.
    ///
    /// # Errors
    ///
    /// `setsockopt(2)` failed.
    pub fn set_promiscuous(&self) -> io::Result<()> {
        // SAFETY: `packet_mreq` is a C struct of integers and a byte array;
        // all zeroes is valid.
        let mut mreq: libc::packet_mreq = unsafe { zeroed() };
        mreq.mr_ifindex = libc::c_int::try_from(self.ifindex).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "interface index too large")
        })?;
        mreq.mr_type = libc::PACKET_MR_PROMISC as libc::c_ushort;
        setsockopt_raw(
            self.fd.as_fd(),
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            &mreq,
        )
    }

    /// Sets the receive buffer to `bytes`, beyond `net.core.rmem_max` when
    /// privileged (`SO_RCVBUFFORCE`, falling back to `SO_RCVBUF`).
    ///
    /// # Errors
    ///
    /// Both `setsockopt(2)` calls failed.
    pub fn set_recv_buffer(&self, bytes: usize) -> io::Result<()> {
        let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        setsockopt_raw(self.fd.as_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &v)
            .or_else(|_| setsockopt_raw(self.fd.as_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, &v))
    }

    /// Sets the send buffer to `bytes` (`SO_SNDBUFFORCE`, falling back to
    /// `SO_SNDBUF`).
    ///
    /// # Errors
    ///
    /// Both `setsockopt(2)` calls failed.
    pub fn set_send_buffer(&self, bytes: usize) -> io::Result<()> {
        let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        setsockopt_raw(self.fd.as_fd(), libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &v)
            .or_else(|_| setsockopt_raw(self.fd.as_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, &v))
    }

    /// Reads and resets the kernel's counters for this socket.
    ///
    /// # Errors
    ///
    /// `getsockopt(2)` failed.
    pub fn statistics(&self) -> io::Result<PacketStats> {
        let mut st = TpacketStats::default();
        getsockopt(
            self.fd.as_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            &mut st,
        )?;
        Ok(PacketStats {
            packets: st.tp_packets,
            drops: st.tp_drops,
        })
    }

    /// Waits up to `timeout` for a frame to be readable (`ppoll(2)`, with
    /// nanosecond resolution). `Ok(false)` on timeout or on a signal.
    ///
    /// # Errors
    ///
    /// `ppoll(2)` failed, or the socket reported an error condition.
    pub fn wait_readable(&self, timeout: Duration) -> io::Result<bool> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ts = libc::timespec {
            tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
            // Below 10^9: fits every `c_long`.
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `pfd` is one valid `pollfd` and `ts` a valid `timespec`,
        // both alive during the call; a null signal mask means "unchanged".
        let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
        if rc == -1 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(false);
            }
            return Err(e);
        }
        if rc == 0 {
            return Ok(false);
        }
        if pfd.revents & libc::POLLIN != 0 {
            return Ok(true);
        }
        if pfd.revents & (libc::POLLERR | libc::POLLNVAL | libc::POLLHUP) != 0 {
            return Err(io::Error::other(format!(
                "packet socket poll revents {:#x}",
                pfd.revents
            )));
        }
        Ok(false)
    }

    /// Asks the kernel to stamp every received frame with its arrival time
    /// (`SO_TIMESTAMPNS`, `CLOCK_REALTIME`), reported in
    /// [`RecvMeta::timestamp`].
    ///
    /// # Errors
    ///
    /// `setsockopt(2)` failed.
    pub fn set_timestamps(&self, on: bool) -> io::Result<()> {
        let v = libc::c_int::from(on);
        setsockopt_raw(self.fd.as_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &v)
    }

    /// Reads one frame without blocking into `buf`. `Ok(None)` when no frame
    /// is queued (or on a signal). The frame occupies
    /// `buf[..meta.len.min(buf.len())]`.
    ///
    /// # Errors
    ///
    /// `recvmsg(2)` failed.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<RecvMeta>> {
        // SAFETY: all-zero `sockaddr_ll` is valid.
        let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
        // Room for a few control messages; u64 elements keep `cmsghdr`
        // alignment.
        let mut control = [0u64; 16];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast::<libc::c_void>(),
            iov_len: buf.len(),
        };
        // SAFETY: `msghdr` is a C struct of integers and pointers; all
        // zeroes (null pointers, zero lengths) is valid.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_name = (&mut sll as *mut libc::sockaddr_ll).cast::<libc::c_void>();
        msg.msg_namelen = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast::<libc::c_void>();
        msg.msg_controllen = size_of::<[u64; 16]>() as _;
        // SAFETY: `msg` points to a valid name buffer (`sll`), one iovec
        // covering `buf` (valid for `buf.len()` writable bytes) and a control
        // buffer of `msg_controllen` bytes; all outlive the call.
        let n = unsafe {
            libc::recvmsg(
                self.fd.as_raw_fd(),
                &mut msg,
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                _ => Err(e),
            };
        }
        let mut timestamp = None;
        // SAFETY: CMSG_LEN is pure arithmetic on its argument.
        let ts_cmsg_len = unsafe { libc::CMSG_LEN(size_of::<libc::timespec>() as u32) } as usize;
        // SAFETY: `msg` was filled by a successful `recvmsg`; its control
        // pointer and length describe (a prefix of) `control`, which is
        // still alive, so the CMSG_* walk stays inside that buffer.
        let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        while !cmsg.is_null() {
            // SAFETY: `cmsg` is non-null and was returned by
            // CMSG_FIRSTHDR/CMSG_NXTHDR, so it points to a complete header
            // inside `control`.
            let hdr = unsafe { std::ptr::read_unaligned(cmsg) };
            if hdr.cmsg_level == libc::SOL_SOCKET
                && hdr.cmsg_type == libc::SCM_TIMESTAMPNS
                && hdr.cmsg_len as usize >= ts_cmsg_len
            {
                // SAFETY: the header says its data holds a `timespec`, and
                // its length (checked above) covers it; unaligned read.
                let ts = unsafe {
                    std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::timespec>())
                };
                if let (Ok(sec), Ok(nsec)) = (u64::try_from(ts.tv_sec), u32::try_from(ts.tv_nsec)) {
                    timestamp = Some(UNIX_EPOCH + Duration::new(sec, nsec));
                }
            }
            // SAFETY: same buffer as above; CMSG_NXTHDR returns null past
            // its end.
            cmsg = unsafe { libc::CMSG_NXTHDR(&msg, cmsg) };
        }
        let len = n as usize;
        Ok(Some(RecvMeta {
            len,
            truncated: len > buf.len(),
            pkttype: sll.sll_pkttype,
            ifindex: u32::try_from(sll.sll_ifindex).unwrap_or(0),
            timestamp,
        }))
    }

    /// Waits up to `timeout` for a frame and reads it (see [`Self::recv`]).
    ///
    /// # Errors
    ///
    /// `ppoll(2)` or `recvfrom(2)` failed.
    pub fn recv_timeout(&self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<RecvMeta>> {
        if let Some(m) = self.recv(buf)? {
            return Ok(Some(m));
        }
        if !self.wait_readable(timeout)? {
            return Ok(None);
        }
        self.recv(buf)
    }

    /// Transmits one complete frame (link-layer header included) out of the
    /// bound interface, without blocking. Returns the number of bytes sent.
    ///
    /// # Errors
    ///
    /// `sendto(2)` failed: e.g. `EMSGSIZE` for a frame above the MTU,
    /// `ENOBUFS`/`WouldBlock` when the send buffer or device queue is full,
    /// `ENETDOWN` when the interface is down.
    pub fn send(&self, frame: &[u8]) -> io::Result<usize> {
        let proto = if frame.len() >= 14 {
            u16::from_be_bytes([frame[12], frame[13]])
        } else {
            0
        };
        let sll = sockaddr_ll(self.ifindex, proto)?;
        // SAFETY: `frame` is valid for `frame.len()` readable bytes and
        // `sll` is a valid `sockaddr_ll` of the length given; the kernel only
        // reads both during the call.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast::<libc::c_void>(),
                frame.len(),
                libc::MSG_DONTWAIT,
                (&sll as *const libc::sockaddr_ll).cast::<libc::sockaddr>(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }
}

impl AsFd for PacketSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ifindex_of_loopback_and_errors() {
        assert!(ifindex("lo").unwrap() >= 1);
        assert_eq!(
            ifindex("wb-no-such-if").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(ifindex("").unwrap_err().kind(), io::ErrorKind::InvalidInput);
        assert_eq!(
            ifindex("a-name-way-too-long-for-linux").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn outgoing_flag() {
        let m = RecvMeta {
            len: 60,
            truncated: false,
            pkttype: PACKET_OUTGOING,
            ifindex: 1,
            timestamp: None,
        };
        assert!(m.outgoing());
        assert!(!RecvMeta { pkttype: 0, ..m }.outgoing());
    }

    /// Runs `f` on a thread inside a private, new network namespace with
    /// `lo` up (so no frame touches the host's interfaces). `None` when that
    /// is not possible (no privilege, no `ip` command).
    fn in_private_netns<T: Send>(f: impl FnOnce() -> T + Send) -> Option<T> {
        std::thread::scope(|s| {
            s.spawn(|| {
                if let Err(e) = crate::netns::enter_new() {
                    crate::require::capability("netns", false, &format!("unshare: {e}"));
                    return None;
                }
                let up = std::process::Command::new("ip")
                    .args(["link", "set", "lo", "up"])
                    .status();
                if !matches!(up, Ok(s) if s.success()) {
                    crate::require::capability("netns", false, &format!("lo up: {up:?}"));
                    return None;
                }
                Some(f())
            })
            .join()
            .expect("test thread panicked")
        })
    }

    /// Needs root: a frame sent on `lo` is seen by an ETH_P_ALL socket as
    /// outgoing and, looped back, as incoming; with ignore-outgoing only the
    /// incoming copy remains.
    #[test]
    fn loopback_frames_when_privileged() {
        in_private_netns(loopback_frames);
    }

    fn loopback_frames() {
        let lo = ifindex("lo").unwrap();
        let rx = PacketSocket::open(lo).unwrap();
        rx.set_ignore_outgoing(true).unwrap();
        rx.set_recv_buffer(1 << 20).unwrap();
        rx.set_timestamps(true).unwrap();
        let tx = PacketSocket::open_send_only(lo).unwrap();
        tx.set_send_buffer(1 << 20).unwrap();
        assert_eq!(tx.ifindex(), lo);
        // A second socket without ignore-outgoing sees both directions.
        let both = PacketSocket::open(lo).unwrap();
        // Ethernet header: zero MACs, a local experimental ethertype.
        let mut frame = vec![0u8; 60];
        frame[12] = 0x88;
        frame[13] = 0xb5;
        frame[14..30].copy_from_slice(b"wirebench-packet");
        assert_eq!(tx.send(&frame).unwrap(), 60);
        let mut buf = [0u8; 2048];
        let collect = |s: &PacketSocket, buf: &mut [u8]| -> Vec<RecvMeta> {
            let mut got = Vec::new();
            let deadline = std::time::Instant::now() + Duration::from_millis(300);
            while std::time::Instant::now() < deadline {
                if let Some(m) = s.recv_timeout(buf, Duration::from_millis(10)).unwrap() {
                    if m.len == 60 && buf[14..30] == *b"wirebench-packet" {
                        assert!(!m.truncated);
                        assert_eq!(m.ifindex, lo);
                        got.push(m);
                    }
                }
            }
            got
        };
        let seen = collect(&rx, &mut buf);
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(!seen[0].outgoing());
        let age = SystemTime::now()
            .duration_since(seen[0].timestamp.expect("timestamp"))
            .unwrap();
        assert!(age < Duration::from_secs(5), "{age:?}");
        assert!(seen.iter().all(|m| m.timestamp.is_some()));
        let seen = collect(&both, &mut buf);
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert_eq!(seen.iter().filter(|m| m.outgoing()).count(), 1);
        // The send-only socket receives nothing.
        assert!(tx.recv(&mut buf).unwrap().is_none());
        // A tiny buffer: the real length is reported.
        tx.send(&frame).unwrap();
        let mut small = [0u8; 20];
        let m = rx
            .recv_timeout(&mut small, Duration::from_secs(1))
            .unwrap()
            .expect("frame");
        assert_eq!(m.len, 60);
        assert!(m.truncated);
        let st = rx.statistics().unwrap();
        assert_eq!(
            st,
            PacketStats {
                packets: 2,
                drops: 0
            }
        );
        assert_eq!(rx.statistics().unwrap(), PacketStats::default());
        // Nothing more queued: a bounded wait times out.
        let t0 = std::time::Instant::now();
        assert!(!rx.wait_readable(Duration::from_millis(20)).unwrap());
        assert!(t0.elapsed() >= Duration::from_millis(19));
        rx.set_promiscuous().unwrap();
    }
}
