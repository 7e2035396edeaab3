//! Socket options a [`TestSpec`] asks for, applied the same way on both ends.

use socket2::SockRef;
use std::os::fd::AsFd;
use wirebench_proto::spec::TestSpec;

use crate::NetError;

/// Apply window (SO_SNDBUF/SO_RCVBUF), congestion control and TCP_NODELAY to a data socket.
/// Call before `connect` on the client so the window scale is chosen with the buffer in place.
pub fn apply<F: AsFd>(sock: &F, spec: &TestSpec) -> Result<(), NetError> {
    let s = SockRef::from(sock);
    if let Some(w) = spec.window_bytes {
        s.set_send_buffer_size(w as usize)
            .map_err(|e| NetError::SocketOption(format!("SO_SNDBUF {w}: {e}")))?;
        s.set_recv_buffer_size(w as usize)
            .map_err(|e| NetError::SocketOption(format!("SO_RCVBUF {w}: {e}")))?;
    }
    if let Some(cc) = &spec.congestion {
        wirebench_sys::tcp::set_congestion(sock, cc).map_err(|e| {
            let avail =
                wirebench_sys::host::read_sysctl("net.ipv4.tcp_available_congestion_control")
                    .unwrap_or_default();
            NetError::SocketOption(format!(
                "congestion control '{cc}' is not usable here ({e}); available: {avail}"
            ))
        })?;
    }
    if spec.nodelay {
        s.set_tcp_nodelay(true)
            .map_err(|e| NetError::SocketOption(format!("TCP_NODELAY: {e}")))?;
    }
    Ok(())
}
