//! Sockets for tests that need a connected pair without a daemon.

use std::net::{TcpListener, TcpStream};

/// A connected TCP pair on 127.0.0.1: (the connecting end, the accepted end).
pub fn loopback_pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a loopback listener");
    let c = TcpStream::connect(l.local_addr().expect("listener address")).expect("connect");
    let (s, _) = l.accept().expect("accept");
    (c, s)
}
