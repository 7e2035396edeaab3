//! Network interfaces: ethtool offload flags, MTU and address lookup.

use std::ffi::CStr;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::AsRawFd;

use socket2::{Domain, Socket, Type};

/// Offload features of a network interface, as reported by the legacy
/// ethtool get commands. Each is `None` when the driver/kernel does not
/// support querying it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offloads {
    /// Receive checksum offload (`ETHTOOL_GRXCSUM`).
    pub rx_checksum: Option<bool>,
    /// Transmit checksum offload (`ETHTOOL_GTXCSUM`).
    pub tx_checksum: Option<bool>,
    /// Scatter-gather (`ETHTOOL_GSG`).
    pub scatter_gather: Option<bool>,
    /// TCP segmentation offload (`ETHTOOL_GTSO`).
    pub tso: Option<bool>,
    /// Generic segmentation offload (`ETHTOOL_GGSO`).
    pub gso: Option<bool>,
    /// Generic receive offload (`ETHTOOL_GGRO`).
    pub gro: Option<bool>,
}

const ETHTOOL_GRXCSUM: u32 = 0x14;
const ETHTOOL_GTXCSUM: u32 = 0x16;
const ETHTOOL_GSG: u32 = 0x18;
const ETHTOOL_GTSO: u32 = 0x1e;
const ETHTOOL_GGSO: u32 = 0x23;
const ETHTOOL_GGRO: u32 = 0x2b;

/// `struct ethtool_value` from include/uapi/linux/ethtool.h.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// Validates an interface name: non-empty, shorter than `IFNAMSIZ`, no '/'
/// or NUL, and not "." or "..".
fn validate_name(name: &str) -> io::Result<()> {
    if name.is_empty()
        || name.len() >= libc::IFNAMSIZ
        || name.contains(['/', '\0'])
        || name == "."
        || name == ".."
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid interface name {name:?}"),
        ));
    }
    Ok(())
}

/// Runs one legacy ethtool get command; `Ok(None)` on `EOPNOTSUPP`.
fn ethtool_get(
    sock: &Socket,
    ifr_name: &[libc::c_char; libc::IFNAMSIZ],
    cmd: u32,
) -> io::Result<Option<bool>> {
    let mut value = EthtoolValue { cmd, data: 0 };
    // SAFETY: `ifreq` is a C struct of integers/arrays and a union whose
    // variants (including a raw pointer) are all valid when zeroed.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    ifr.ifr_name = *ifr_name;
    ifr.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast::<libc::c_char>();
    // SAFETY: the socket is open; `ifr` is a valid, NUL-terminated `ifreq`
    // whose `ifr_data` points to `value`, a live `struct ethtool_value` that
    // the kernel reads and writes (SIOCETHTOOL get commands only write an
    // `ethtool_value` for these command numbers). Both outlive the call.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL as _, &mut ifr) };
    if rc == -1 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EOPNOTSUPP) {
            return Ok(None);
        }
        return Err(err);
    }
    Ok(Some(value.data != 0))
}

/// Queries the offload features of interface `name` with `SIOCETHTOOL`.
///
/// # Errors
///
/// `InvalidInput` for an invalid name; otherwise the first `ioctl` error
/// other than `EOPNOTSUPP` (e.g. `ENODEV` for a missing interface).
pub fn interface_offloads(name: &str) -> io::Result<Offloads> {
    validate_name(name)?;
    let mut ifr_name = [0 as libc::c_char; libc::IFNAMSIZ];
    for (dst, &src) in ifr_name.iter_mut().zip(name.as_bytes()) {
        *dst = src as libc::c_char;
    }
    let sock = Socket::new(Domain::IPV4, Type::DGRAM, None)?;
    let get = |cmd| {
        ethtool_get(&sock, &ifr_name, cmd)
            .map_err(|e| io::Error::new(e.kind(), format!("SIOCETHTOOL on {name:?}: {e}")))
    };
    Ok(Offloads {
        rx_checksum: get(ETHTOOL_GRXCSUM)?,
        tx_checksum: get(ETHTOOL_GTXCSUM)?,
        scatter_gather: get(ETHTOOL_GSG)?,
        tso: get(ETHTOOL_GTSO)?,
        gso: get(ETHTOOL_GGSO)?,
        gro: get(ETHTOOL_GGRO)?,
    })
}

/// Returns the MTU of interface `name` (from `/sys/class/net/<name>/mtu`).
///
/// # Errors
///
/// `InvalidInput` for an invalid name, `NotFound` for a missing interface,
/// `InvalidData` if the file does not contain a number.
pub fn interface_mtu(name: &str) -> io::Result<u32> {
    validate_name(name)?;
    let path = format!("/sys/class/net/{name}/mtu");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("reading {path}: {e}")))?;
    text.trim().parse().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{path}: not a number: {:?}", text.trim()),
        )
    })
}

/// Owner of a `getifaddrs` list; frees it on drop.
struct IfAddrs(*mut libc::ifaddrs);

impl Drop for IfAddrs {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the pointer came from a successful `getifaddrs` and is
            // freed exactly once.
            unsafe { libc::freeifaddrs(self.0) };
        }
    }
}

/// Extracts the IP address of a socket address, if it is AF_INET/AF_INET6.
///
/// # Safety
///
/// `sa` must be null or point to a valid socket address whose actual size
/// matches its `sa_family`.
unsafe fn sockaddr_ip(sa: *const libc::sockaddr) -> Option<IpAddr> {
    if sa.is_null() {
        return None;
    }
    // SAFETY: `sa` is non-null and valid per the caller's contract; every
    // socket address starts with `sa_family`.
    let family = libc::c_int::from(unsafe { (*sa).sa_family });
    match family {
        libc::AF_INET => {
            // SAFETY: the family says this is a `sockaddr_in`.
            let sin = unsafe { std::ptr::read_unaligned(sa.cast::<libc::sockaddr_in>()) };
            Some(IpAddr::V4(Ipv4Addr::from(
                sin.sin_addr.s_addr.to_ne_bytes(),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this is a `sockaddr_in6`.
            let sin6 = unsafe { std::ptr::read_unaligned(sa.cast::<libc::sockaddr_in6>()) };
            Some(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)))
        }
        _ => None,
    }
}

/// Returns the name of the interface that has local address `addr`
/// (`getifaddrs`), e.g. `"lo"` for `127.0.0.1`. IPv4-mapped IPv6 addresses
/// are looked up as IPv4. `Ok(None)` if no interface has it.
///
/// # Errors
///
/// Returns the `getifaddrs` error.
pub fn interface_for_addr(addr: IpAddr) -> io::Result<Option<String>> {
    let addr = addr.to_canonical();
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: `head` is a valid out-pointer; on success the list is owned by
    // `IfAddrs` below and freed exactly once.
    let rc = unsafe { libc::getifaddrs(&mut head) };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    let list = IfAddrs(head);
    let mut cur = list.0;
    while !cur.is_null() {
        // SAFETY: `cur` is a non-null node of the list, alive until `list`
        // is dropped at the end of this function.
        let ifa = unsafe { &*cur };
        // SAFETY: `ifa_addr` is null or a valid socket address of the size
        // its family implies, as guaranteed by getifaddrs.
        let ip = unsafe { sockaddr_ip(ifa.ifa_addr) };
        if ip == Some(addr) && !ifa.ifa_name.is_null() {
            // SAFETY: `ifa_name` is a non-null NUL-terminated string owned by
            // the list; it is copied before the list is freed.
            let name = unsafe { CStr::from_ptr(ifa.ifa_name) };
            return Ok(Some(name.to_string_lossy().into_owned()));
        }
        cur = ifa.ifa_next;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lo_offloads() {
        let o = interface_offloads("lo").unwrap();
        assert!(o.tx_checksum.is_some(), "{o:?}");
    }

    #[test]
    fn missing_interface_errors() {
        assert!(interface_offloads("nosuchif0").is_err());
        assert_eq!(
            interface_mtu("nosuchif0").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn bad_names_rejected() {
        for name in ["", "a/b", "../lo", ".", "..", "a\0b", "0123456789abcdef"] {
            assert_eq!(
                interface_offloads(name).unwrap_err().kind(),
                io::ErrorKind::InvalidInput,
                "{name:?}"
            );
            assert_eq!(
                interface_mtu(name).unwrap_err().kind(),
                io::ErrorKind::InvalidInput,
                "{name:?}"
            );
        }
        // 15 bytes is the longest valid name.
        assert_ne!(
            interface_mtu("0123456789abcde").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn lo_mtu() {
        assert_eq!(interface_mtu("lo").unwrap(), 65536);
    }

    #[test]
    fn addr_lookup() {
        let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
        assert_eq!(interface_for_addr(lo).unwrap().as_deref(), Some("lo"));
        let mapped = IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped());
        assert_eq!(interface_for_addr(mapped).unwrap().as_deref(), Some("lo"));
        let none = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 123));
        assert_eq!(interface_for_addr(none).unwrap(), None);
    }
}
