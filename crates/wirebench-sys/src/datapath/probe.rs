//! [`probe()`]: which data paths the running kernel supports, found by
//! trying each briefly on a loopback TCP connection.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::time::Duration;

use super::{
    enable_zerocopy, recv_discard, sendfile, MemFile, SpliceDiscard, SpliceSender, UringReceiver,
    UringSendOp, UringSender, ZeroCopyCompletions, ZeroCopyReceiver, DEFAULT_PIPE_SIZE,
};

/// Bytes moved by each probe (fits the default socket buffers, so one
/// thread can send and then receive).
const PROBE_BYTES: usize = 64 * 1024;
/// Socket timeouts and completion waits of the probes.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Which data paths work on the running kernel. `errors` explains every
/// `false`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DatapathSupport {
    /// `sendfile` from a memfd to a TCP socket.
    pub sendfile: bool,
    /// `vmsplice` + `splice` into a TCP socket.
    pub splice_send: bool,
    /// `splice` from a TCP socket into a pipe.
    pub splice_recv: bool,
    /// `recv(MSG_TRUNC)` discarding TCP data.
    pub recv_trunc: bool,
    /// `MSG_ZEROCOPY` with completion notifications.
    pub msg_zerocopy: bool,
    /// `TCP_ZEROCOPY_RECEIVE` (mmap of a TCP socket).
    pub tcp_zerocopy_receive: bool,
    /// io_uring send (registered buffer, `SEND`).
    pub io_uring_send: bool,
    /// io_uring `SEND_ZC`.
    pub io_uring_send_zc: bool,
    /// io_uring receive with provided buffers.
    pub io_uring_recv: bool,
    /// Why each unsupported path failed: (field name, `"<ErrorKind>: <message>"`),
    /// e.g. `("io_uring_send", "Unsupported: io_uring_setup ...")`. A kind
    /// other than `Unsupported` means the path exists but misbehaved.
    pub errors: Vec<(&'static str, String)>,
}

/// Tries every data path on a loopback connection (a few milliseconds in
/// total; at most a few seconds if something hangs) and reports which work.
pub fn probe() -> DatapathSupport {
    let mut s = DatapathSupport::default();
    s.sendfile = check(&mut s.errors, "sendfile", probe_sendfile);
    s.splice_send = check(&mut s.errors, "splice_send", probe_splice_send);
    s.splice_recv = check(&mut s.errors, "splice_recv", |c, srv| {
        let mut rx = SpliceDiscard::new(DEFAULT_PIPE_SIZE)?;
        expect_discard(c, |n| rx.recv(srv, n))
    });
    s.recv_trunc = check(&mut s.errors, "recv_trunc", |c, srv| {
        expect_discard(c, |n| recv_discard(srv, n))
    });
    s.msg_zerocopy = check(&mut s.errors, "msg_zerocopy", probe_msg_zerocopy);
    s.tcp_zerocopy_receive = check(&mut s.errors, "tcp_zerocopy_receive", probe_zc_receive);
    s.io_uring_send = check(&mut s.errors, "io_uring_send", |c, srv| {
        probe_uring_send(c, srv, UringSendOp::Send)
    });
    s.io_uring_send_zc = check(&mut s.errors, "io_uring_send_zc", |c, srv| {
        probe_uring_send(c, srv, UringSendOp::SendZc)
    });
    s.io_uring_recv = check(&mut s.errors, "io_uring_recv", probe_uring_recv);
    s
}

/// Runs `f` on a fresh loopback pair; records the error if it fails.
fn check(
    errors: &mut Vec<(&'static str, String)>,
    name: &'static str,
    f: impl FnOnce(&mut TcpStream, &mut TcpStream) -> io::Result<()>,
) -> bool {
    let res = loopback_pair().and_then(|(mut c, mut s)| f(&mut c, &mut s));
    if let Err(e) = &res {
        errors.push((name, format!("{:?}: {e}", e.kind())));
    }
    res.is_ok()
}

fn loopback_pair() -> io::Result<(TcpStream, TcpStream)> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let client = TcpStream::connect(listener.local_addr()?)?;
    let (server, _) = listener.accept()?;
    for s in [&client, &server] {
        s.set_read_timeout(Some(PROBE_TIMEOUT))?;
        s.set_write_timeout(Some(PROBE_TIMEOUT))?;
    }
    Ok((client, server))
}

fn mismatch(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{what}: data mismatch"))
}

/// Reads `expected.len()` bytes from `sock` and compares.
fn expect_bytes(sock: &mut TcpStream, expected: &[u8]) -> io::Result<()> {
    let mut got = vec![0u8; expected.len()];
    sock.read_exact(&mut got)?;
    if got == expected {
        Ok(())
    } else {
        Err(mismatch("received"))
    }
}

/// Writes `PROBE_BYTES` on `tx` and consumes them with `discard`.
fn expect_discard(
    tx: &mut TcpStream,
    mut discard: impl FnMut(usize) -> io::Result<usize>,
) -> io::Result<()> {
    tx.write_all(&[0x5a; PROBE_BYTES])?;
    let mut left = PROBE_BYTES;
    while left > 0 {
        match discard(left)? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => left -= n.min(left),
        }
    }
    Ok(())
}

fn probe_sendfile(c: &mut TcpStream, s: &mut TcpStream) -> io::Result<()> {
    let file = MemFile::random(PROBE_BYTES)?;
    let mut off = 0;
    while off < PROBE_BYTES {
        match sendfile(c, &file, off as u64, PROBE_BYTES - off)? {
            0 => return Err(io::ErrorKind::WriteZero.into()),
            n => off += n,
        }
    }
    expect_bytes(s, file.as_bytes())
}

fn probe_splice_send(c: &mut TcpStream, s: &mut TcpStream) -> io::Result<()> {
    let mut buf = vec![0u8; PROBE_BYTES];
    super::fill_random(&mut buf);
    let mut tx = SpliceSender::new(DEFAULT_PIPE_SIZE)?;
    let mut off = 0;
    while off < PROBE_BYTES {
        off += tx.send(c, &buf[off..])?;
    }
    expect_bytes(s, &buf)
}

fn probe_msg_zerocopy(c: &mut TcpStream, s: &mut TcpStream) -> io::Result<()> {
    let buf = vec![0x3cu8; PROBE_BYTES];
    enable_zerocopy(c)?;
    let mut zc = ZeroCopyCompletions::new();
    let mut off = 0;
    while off < PROBE_BYTES {
        off += zc.send(c, &buf[off..])?;
    }
    zc.wait_all(c, PROBE_TIMEOUT)?;
    expect_bytes(s, &buf)
}

fn probe_zc_receive(c: &mut TcpStream, s: &mut TcpStream) -> io::Result<()> {
    let mut rx = ZeroCopyReceiver::new(s, PROBE_BYTES)?;
    let buf = vec![0x42u8; PROBE_BYTES];
    c.write_all(&buf)?;
    let mut copy = vec![0u8; PROBE_BYTES];
    let mut got = 0;
    while got < PROBE_BYTES {
        let r = rx.recv(s, &mut copy)?;
        if r.eof {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if rx
            .mapped()
            .iter()
            .chain(&copy[..r.copied_bytes])
            .any(|&b| b != 0x42)
        {
            return Err(mismatch("TCP_ZEROCOPY_RECEIVE"));
        }
        got += r.mapped_bytes + r.copied_bytes;
    }
    Ok(())
}

fn probe_uring_send(c: &mut TcpStream, s: &mut TcpStream, op: UringSendOp) -> io::Result<()> {
    let mut tx = UringSender::new(c, PROBE_BYTES, 2)?;
    tx.set_op(op)?;
    let mut sent = 0;
    while sent < PROBE_BYTES {
        sent += tx.send((PROBE_BYTES - sent) as u64, PROBE_TIMEOUT)?;
    }
    tx.finish(PROBE_TIMEOUT)?;
    expect_bytes(s, tx.buffer())
}

fn probe_uring_recv(c: &mut TcpStream, s: &mut TcpStream) -> io::Result<()> {
    let mut rx = UringReceiver::new(s, 16 * 1024, 8)?;
    let buf = vec![0x77u8; PROBE_BYTES];
    c.write_all(&buf)?;
    let mut got = 0;
    while got < PROBE_BYTES {
        match rx.recv(PROBE_TIMEOUT)? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            _ if rx.data().iter().any(|&b| b != 0x77) => return Err(mismatch("io_uring recv")),
            n => got += n,
        }
    }
    Ok(())
}
