//! IP-level socket options that socket2 does not wrap: the pacing cap (`SO_MAX_PACING_RATE`)
//! and path-MTU discovery (`IP_MTU_DISCOVER` / `IPV6_MTU_DISCOVER`, "don't fragment").

use std::io;
use std::os::fd::AsFd;

use crate::sockopt::setsockopt as set;

/// Cap the socket's pacing rate at `bytes_per_s` (`SO_MAX_PACING_RATE`; TCP paces itself
/// without the fq qdisc since Linux 4.13). Rates above what a u32 holds use the 64-bit form.
pub fn set_max_pacing_rate<F: AsFd>(sock: &F, bytes_per_s: u64) -> io::Result<()> {
    let fd = sock.as_fd();
    match u32::try_from(bytes_per_s) {
        Ok(v) => set(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, v),
        Err(_) => set(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, bytes_per_s),
    }
}

/// Set the Don't Fragment behaviour: path-MTU discovery always on (`IP_PMTUDISC_DO`), for
/// IPv4 and, on an IPv6 socket, IPv6.
pub fn set_dont_fragment<F: AsFd>(sock: &F, ipv6: bool) -> io::Result<()> {
    let fd = sock.as_fd();
    if ipv6 {
        set(
            fd,
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_DO,
        )
    } else {
        set(
            fd,
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_DO,
        )
    }
}

/// The socket's `IP_MTU_DISCOVER` mode (`IP_PMTUDISC_DO` = 2 when Don't Fragment is set).
pub fn mtu_discover<F: AsFd>(sock: &F) -> io::Result<i32> {
    crate::sockopt::getsockopt_int(sock.as_fd(), libc::IPPROTO_IP, libc::IP_MTU_DISCOVER)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    #[test]
    fn options_take_effect() {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        set_dont_fragment(&s, false).unwrap();
        assert_eq!(mtu_discover(&s).unwrap(), libc::IP_PMTUDISC_DO);
        set_max_pacing_rate(&s, 12_500_000).unwrap();
        set_max_pacing_rate(&s, 1 << 40).unwrap();
    }
}
