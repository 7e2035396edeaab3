//! Loopback tests of the kernel data paths in `wirebench_sys::datapath`.
//!
//! Each test moves `N` bytes of random content over a 127.0.0.1 TCP
//! connection through the path under test and checks the exact byte count
//! on both sides and the content (or, for discard paths, the count and the
//! kernel's TCP counters). Every loop is bounded by socket timeouts or
//! deadlines. A path the kernel does not support must fail with
//! `ErrorKind::Unsupported`; the test then prints why and stops there.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use socket2::{Domain, Socket, Type};
use wirebench_sys::datapath::{
    enable_zerocopy, fill_random, probe, recv_discard, sendfile, MemFile, SpliceDiscard,
    SpliceSender, UringReceiver, UringSendOp, UringSender, ZeroCopyCompletions, ZeroCopyReceiver,
    DEFAULT_PIPE_SIZE, DEFAULT_ZC_CHUNK,
};
use wirebench_sys::tcp::{set_rcvlowat, tcp_info};

/// Bytes moved per test.
const N: usize = 64 << 20;
/// Socket send/receive timeout: bounds every blocking call.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Upper bound of one transfer.
const DEADLINE: Duration = Duration::from_secs(60);

fn set_timeouts(s: &TcpStream) {
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
}

/// A connected loopback pair (client, server) with timeouts.
fn pair() -> (TcpStream, TcpStream) {
    let (client, server) = wirebench_testkit::net::loopback_pair();
    set_timeouts(&client);
    set_timeouts(&server);
    (client, server)
}

/// A loopback pair whose segments carry exactly one page of payload
/// (`TCP_MAXSEG` = 4096 + 12 bytes of timestamp option), as the kernel's
/// `tcp_mmap` selftest does, so received payload can be page-aligned.
fn pair_page_mss() -> (TcpStream, TcpStream) {
    let mss = 4096 + 12;
    let listener = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    listener.set_tcp_mss(mss).unwrap();
    listener
        .bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())
        .unwrap();
    listener.listen(1).unwrap();
    let client = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    client.set_tcp_mss(mss).unwrap();
    client.connect(&listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    let (client, server) = (TcpStream::from(client), TcpStream::from(server));
    set_timeouts(&client);
    set_timeouts(&server);
    (client, server)
}

/// `len` random bytes.
fn random_bytes(len: usize) -> Arc<Vec<u8>> {
    let mut v = vec![0u8; len];
    fill_random(&mut v);
    Arc::new(v)
}

/// Whether `chunk` equals `pattern` repeated, starting at stream position
/// `pos`.
fn cyclic_matches(pattern: &[u8], mut pos: usize, mut chunk: &[u8]) -> bool {
    while !chunk.is_empty() {
        let off = pos % pattern.len();
        let n = chunk.len().min(pattern.len() - off);
        if chunk[..n] != pattern[off..off + n] {
            return false;
        }
        chunk = &chunk[n..];
        pos += n;
    }
    true
}

/// The slice of `pattern` (repeated) starting at stream position `pos`,
/// at most `left` bytes long and not wrapping.
fn cyclic_slice(pattern: &[u8], pos: usize, left: usize) -> &[u8] {
    let off = pos % pattern.len();
    &pattern[off..pattern.len().min(off.saturating_add(left))]
}

/// Reads `sock` with plain reads until EOF, checking the content against
/// `pattern` repeated; returns the byte count.
fn read_verify(sock: &mut TcpStream, pattern: &[u8]) -> usize {
    let deadline = Instant::now() + DEADLINE;
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0;
    loop {
        assert!(Instant::now() < deadline, "receiver deadline");
        let n = sock.read(&mut buf).expect("plain read");
        if n == 0 {
            return total;
        }
        assert!(
            cyclic_matches(pattern, total, &buf[..n]),
            "content mismatch in bytes {total}..{}",
            total + n
        );
        total += n;
    }
}

/// Writes `total` bytes of `pattern` repeated with plain writes, then
/// shuts down the write side.
fn spawn_plain_writer(
    mut sock: TcpStream,
    pattern: Arc<Vec<u8>>,
    total: usize,
) -> thread::JoinHandle<TcpStream> {
    thread::spawn(move || {
        let mut sent = 0;
        while sent < total {
            let chunk = cyclic_slice(&pattern, sent, total - sent);
            sock.write_all(chunk).expect("plain write");
            sent += chunk.len();
        }
        sock.shutdown(Shutdown::Write).unwrap();
        sock
    })
}

/// `Some(v)` if supported; `None` after printing why not, which must be an
/// `Unsupported` error; panics on any other error.
fn supported<T>(what: &str, r: io::Result<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            assert_eq!(
                e.kind(),
                io::ErrorKind::Unsupported,
                "{what} failed with a non-Unsupported error: {e}"
            );
            // A kernel without the feature skips, unless the environment requires it.
            wirebench_sys::require::capability(what, false, &e.to_string());
            None
        }
    }
}

/// Waits until the sender's bytes are all acknowledged, then checks the
/// TCP counters of both sides against `n`. The counters may include the
/// sequence numbers of the SYN (sender side) and of the FIN.
fn assert_tcp_consumed(sender: &TcpStream, receiver: &TcpStream, n: usize) {
    let n = n as u64;
    let deadline = Instant::now() + IO_TIMEOUT;
    let acked = loop {
        let acked = tcp_info(sender).unwrap().bytes_acked.unwrap();
        if acked > n || Instant::now() > deadline {
            break acked;
        }
        thread::sleep(Duration::from_millis(5));
    };
    assert!((n..=n + 2).contains(&acked), "sender bytes_acked {acked}");
    let received = tcp_info(receiver).unwrap().bytes_received.unwrap();
    assert!(
        (n..=n + 1).contains(&received),
        "receiver bytes_received {received}"
    );
}

#[test]
fn sendfile_moves_exact_content() {
    let file = Arc::new(MemFile::random(N).unwrap());
    let (client, mut server) = pair();
    let f = Arc::clone(&file);
    let sender = thread::spawn(move || {
        let deadline = Instant::now() + DEADLINE;
        let mut off = 0;
        while off < N {
            assert!(Instant::now() < deadline, "sender deadline");
            let n = sendfile(&client, &f, off as u64, N - off).expect("sendfile");
            assert!(n > 0, "sendfile sent nothing at {off}");
            off += n;
        }
        // Past the end of the file: nothing to send.
        assert_eq!(sendfile(&client, &f, N as u64, 10).unwrap(), 0);
        client.shutdown(Shutdown::Write).unwrap();
        off
    });
    let received = read_verify(&mut server, file.as_bytes());
    assert_eq!(sender.join().unwrap(), N);
    assert_eq!(received, N);
}

#[test]
fn splice_send_moves_exact_content() {
    // Not a multiple of the page size: pages straddle calls.
    let pattern = random_bytes((1 << 20) + 123);
    let (client, mut server) = pair();
    let p = Arc::clone(&pattern);
    let sender = thread::spawn(move || {
        let mut tx = SpliceSender::new(DEFAULT_PIPE_SIZE).unwrap();
        eprintln!("splice pipe size: {} bytes", tx.pipe_size());
        let deadline = Instant::now() + DEADLINE;
        let mut sent = 0;
        while sent < N {
            assert!(Instant::now() < deadline, "sender deadline");
            let n = tx
                .send(&client, cyclic_slice(&p, sent, N - sent))
                .expect("splice send");
            assert!(n > 0);
            sent += n;
        }
        client.shutdown(Shutdown::Write).unwrap();
        sent
    });
    let received = read_verify(&mut server, &pattern);
    assert_eq!(sender.join().unwrap(), N);
    assert_eq!(received, N);
}

/// On a non-blocking socket whose peer does not read, sends end with
/// `WouldBlock`; bytes left in the pipe must be dropped so that the stream
/// stays in order when the caller resends them.
#[test]
fn splice_send_partial_sends_keep_stream_order() {
    let pattern = random_bytes(300_007);
    let (client, mut server) = pair();
    let mut tx = SpliceSender::new(DEFAULT_PIPE_SIZE).unwrap();
    client.set_nonblocking(true).unwrap();
    let mut sent = 0;
    let mut would_block = 0;
    for _ in 0..10_000 {
        match tx.send(&client, cyclic_slice(&pattern, sent, usize::MAX)) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                would_block += 1;
                if would_block == 3 {
                    break;
                }
            }
            Err(e) => panic!("splice send: {e}"),
        }
    }
    assert_eq!(would_block, 3, "the socket never filled up");
    let total = sent + 5 * pattern.len();
    let p = Arc::clone(&pattern);
    let sender = thread::spawn(move || {
        client.set_nonblocking(false).unwrap();
        while sent < total {
            sent += tx
                .send(&client, cyclic_slice(&p, sent, total - sent))
                .unwrap();
        }
        client.shutdown(Shutdown::Write).unwrap();
        sent
    });
    assert_eq!(read_verify(&mut server, &pattern), total);
    assert_eq!(sender.join().unwrap(), total);
}

#[test]
fn splice_discard_consumes_exact_count() {
    let (client, server) = pair();
    let writer = spawn_plain_writer(client, random_bytes(1 << 20), N);
    let mut rx = SpliceDiscard::new(DEFAULT_PIPE_SIZE).unwrap();
    let deadline = Instant::now() + DEADLINE;
    let mut total = 0;
    loop {
        assert!(Instant::now() < deadline, "receiver deadline");
        match rx.recv(&server, usize::MAX).expect("splice recv") {
            0 => break,
            n => total += n,
        }
    }
    let client = writer.join().unwrap();
    assert_eq!(total, N);
    assert_tcp_consumed(&client, &server, N);
}

#[test]
fn recv_trunc_discards_exact_count() {
    let (client, server) = pair();
    let writer = spawn_plain_writer(client, random_bytes(1 << 20), N);
    let deadline = Instant::now() + DEADLINE;
    let mut total = 0;
    loop {
        assert!(Instant::now() < deadline, "receiver deadline");
        match recv_discard(&server, 1 << 20).expect("recv MSG_TRUNC") {
            0 => break,
            n => total += n,
        }
    }
    let client = writer.join().unwrap();
    assert_eq!(total, N);
    assert_tcp_consumed(&client, &server, N);
}

#[test]
fn recv_discard_rejects_udp() {
    let udp = std::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let err = recv_discard(&udp, 100).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

/// Sends `total` bytes of `pattern` repeated with `MSG_ZEROCOPY`, waits for
/// every completion; returns the tracker.
fn zerocopy_send_all(sock: &TcpStream, pattern: &[u8], total: usize) -> ZeroCopyCompletions {
    let mut zc = ZeroCopyCompletions::new();
    let deadline = Instant::now() + DEADLINE;
    let mut sent = 0;
    while sent < total {
        assert!(Instant::now() < deadline, "sender deadline");
        // At most 256 KiB per send, so there are many notifications.
        let chunk = cyclic_slice(pattern, sent, (total - sent).min(256 * 1024));
        match zc.send(sock, chunk) {
            Ok(n) => sent += n,
            // Too many notifications outstanding (optmem): drain, retry.
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                zc.wait(sock, Duration::from_millis(100)).unwrap();
            }
            Err(e) => panic!("MSG_ZEROCOPY send: {e}"),
        }
        zc.poll(sock).unwrap();
    }
    zc.wait_all(sock, IO_TIMEOUT).expect("all completions");
    zc
}

#[test]
fn msg_zerocopy_completes_every_send() {
    let pattern = random_bytes(1 << 20);
    let (client, mut server) = pair();
    if supported("SO_ZEROCOPY", enable_zerocopy(&client)).is_none() {
        return;
    }
    let p = Arc::clone(&pattern);
    let sender = thread::spawn(move || {
        let zc = zerocopy_send_all(&client, &p, N);
        client.shutdown(Shutdown::Write).unwrap();
        zc
    });
    let received = read_verify(&mut server, &pattern);
    let zc = sender.join().unwrap();
    eprintln!(
        "MSG_ZEROCOPY: {} sends, {} notifications, {} zerocopy, {} copied",
        zc.sent(),
        zc.notifications(),
        zc.completed_zerocopy(),
        zc.completed_copied()
    );
    assert_eq!(received, N);
    assert!(zc.sent() > 0);
    assert_eq!(zc.outstanding(), 0);
    assert_eq!(zc.completed_zerocopy() + zc.completed_copied(), zc.sent());
    assert!(zc.notifications() <= zc.sent());
}

/// Receives everything with `TCP_ZEROCOPY_RECEIVE`, verifying content;
/// returns (mapped, copied) byte counts.
fn zc_receive_all(server: &TcpStream, pattern: &[u8]) -> Option<(usize, usize)> {
    let mut rx = supported(
        "TCP_ZEROCOPY_RECEIVE",
        ZeroCopyReceiver::new(server, DEFAULT_ZC_CHUNK),
    )?;
    set_rcvlowat(server, (DEFAULT_ZC_CHUNK / 4) as u32).unwrap();
    let mut copy = vec![0u8; 256 * 1024];
    let deadline = Instant::now() + DEADLINE;
    let (mut mapped, mut copied) = (0, 0);
    loop {
        assert!(Instant::now() < deadline, "receiver deadline");
        let r = rx.recv(server, &mut copy).expect("zerocopy recv");
        if r.eof {
            assert_eq!((r.mapped_bytes, r.copied_bytes), (0, 0));
            return Some((mapped, copied));
        }
        let pos = mapped + copied;
        assert_eq!(rx.mapped().len(), r.mapped_bytes);
        assert!(
            cyclic_matches(pattern, pos, rx.mapped()),
            "mapped bytes differ at {pos}"
        );
        let pos = pos + r.mapped_bytes;
        assert!(
            cyclic_matches(pattern, pos, &copy[..r.copied_bytes]),
            "copied bytes differ at {pos}"
        );
        mapped += r.mapped_bytes;
        copied += r.copied_bytes;
    }
}

fn report_zc(label: &str, mapped: usize, copied: usize) {
    eprintln!(
        "TCP_ZEROCOPY_RECEIVE ({label}): {mapped} mapped + {copied} copied bytes, {:.1}% mapped",
        100.0 * mapped as f64 / (mapped + copied) as f64
    );
}

#[test]
fn zerocopy_receive_plain_writer() {
    let pattern = random_bytes(1 << 20);
    let (client, server) = pair();
    let writer = spawn_plain_writer(client, Arc::clone(&pattern), N);
    let Some((mapped, copied)) = zc_receive_all(&server, &pattern) else {
        return;
    };
    writer.join().unwrap();
    report_zc("plain writer, default MSS", mapped, copied);
    assert_eq!(mapped + copied, N);
}

#[test]
fn zerocopy_receive_page_sized_segments() {
    // MSG_ZEROCOPY over loopback makes the kernel copy the payload into fresh
    // pages, one page per 4 KiB segment: receive side can map them.
    let pattern = random_bytes(1 << 20);
    let (client, server) = pair_page_mss();
    enable_zerocopy(&client).unwrap();
    let p = Arc::clone(&pattern);
    let sender = thread::spawn(move || {
        zerocopy_send_all(&client, &p, N);
        client.shutdown(Shutdown::Write).unwrap();
    });
    let Some((mapped, copied)) = zc_receive_all(&server, &pattern) else {
        return;
    };
    sender.join().unwrap();
    report_zc("MSG_ZEROCOPY writer, MSS = 4096 + 12", mapped, copied);
    assert_eq!(mapped + copied, N);
    assert!(mapped > 0, "no page was mapped");
}

/// Sends `N` bytes with a `UringSender` using `op`; checks the content.
fn uring_send_test(op: UringSendOp) {
    let (client, mut server) = pair();
    let Some(mut tx) = supported("io_uring", UringSender::new(&client, (256 << 10) + 77, 4)) else {
        return;
    };
    if op == UringSendOp::SendZc && !tx.supports_send_zc() {
        assert!(supported("io_uring SEND_ZC", tx.set_op(op)).is_none());
        return;
    }
    tx.set_op(op).unwrap();
    let pattern = tx.buffer().to_vec();
    let sender = thread::spawn(move || {
        let deadline = Instant::now() + DEADLINE;
        let mut sent = 0;
        while sent < N {
            assert!(Instant::now() < deadline, "sender deadline");
            sent += tx
                .send((N - sent) as u64, IO_TIMEOUT)
                .expect("io_uring send");
        }
        tx.finish(IO_TIMEOUT).expect("finish");
        // The sender holds a duplicate descriptor: shut down explicitly.
        client.shutdown(Shutdown::Write).unwrap();
        (sent, tx.stats())
    });
    let received = read_verify(&mut server, &pattern);
    let (sent, stats) = sender.join().unwrap();
    eprintln!("io_uring {op:?}: {stats:?}");
    assert_eq!(sent, N);
    assert_eq!(received, N);
    assert_eq!(stats.bytes, N as u64);
    if op == UringSendOp::SendZc {
        assert!(stats.zc_notifications > 0);
    }
}

#[test]
fn uring_send_op_send() {
    uring_send_test(UringSendOp::Send);
}

#[test]
fn uring_send_op_write_fixed() {
    uring_send_test(UringSendOp::WriteFixed);
}

#[test]
fn uring_send_op_send_zc() {
    uring_send_test(UringSendOp::SendZc);
}

/// `set_max_send_len` cuts every operation to at most that length; the stream
/// stays the buffer repeated, in order.
#[test]
fn uring_send_max_send_len() {
    const TOTAL: usize = 8 << 20;
    const MAX: usize = 16 << 10;
    let (client, mut server) = pair();
    let Some(mut tx) = supported("io_uring", UringSender::new(&client, (256 << 10) + 77, 4)) else {
        return;
    };
    tx.set_max_send_len(MAX);
    let pattern = tx.buffer().to_vec();
    let sender = thread::spawn(move || {
        let mut sent = 0;
        while sent < TOTAL {
            sent += tx
                .send((TOTAL - sent) as u64, IO_TIMEOUT)
                .expect("io_uring send");
        }
        tx.finish(IO_TIMEOUT).expect("finish");
        client.shutdown(Shutdown::Write).unwrap();
        (sent, tx.stats())
    });
    let received = read_verify(&mut server, &pattern);
    let (sent, stats) = sender.join().unwrap();
    assert_eq!((sent, received), (TOTAL, TOTAL));
    assert!(
        stats.completions >= (TOTAL / MAX) as u64,
        "{} completions for {TOTAL} bytes in sends of at most {MAX}",
        stats.completions
    );
}

/// Dropping a sender whose sends cannot complete (the peer never reads)
/// cancels them instead of hanging.
#[test]
fn uring_sender_drop_with_sends_in_flight() {
    let (client, _server) = pair();
    let Some(mut tx) = supported("io_uring", UringSender::new(&client, 8 << 20, 4)) else {
        return;
    };
    let start = Instant::now();
    let mut total = 0;
    for _ in 0..20 {
        match tx.send(u64::MAX, Duration::from_millis(50)) {
            Ok(n) => total += n,
            Err(e) if e.kind() == io::ErrorKind::TimedOut => break,
            Err(e) => panic!("io_uring send: {e}"),
        }
    }
    assert!(
        tx.in_flight() > 0,
        "sends completed although nobody reads ({total} bytes)"
    );
    drop(tx);
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "drop took {:?}",
        start.elapsed()
    );
}

#[test]
fn uring_receive_exact_content() {
    let pattern = random_bytes((1 << 20) + 5);
    let (client, server) = pair();
    let Some(mut rx) = supported("io_uring", UringReceiver::new(&server, 64 << 10, 16)) else {
        return;
    };
    let writer = spawn_plain_writer(client, Arc::clone(&pattern), N);
    let deadline = Instant::now() + DEADLINE;
    let mut total = 0;
    loop {
        assert!(Instant::now() < deadline, "receiver deadline");
        let n = rx.recv(IO_TIMEOUT).expect("io_uring recv");
        if n == 0 {
            break;
        }
        assert_eq!(rx.data().len(), n);
        assert!(
            cyclic_matches(&pattern, total, rx.data()),
            "content differs at {total}"
        );
        total += n;
    }
    writer.join().unwrap();
    eprintln!(
        "io_uring recv: {} completions, multishot {}, out of buffers {} times",
        rx.completions(),
        rx.multishot(),
        rx.out_of_buffers()
    );
    assert_eq!(total, N);
    // Stays at end of stream.
    assert_eq!(rx.recv(Duration::from_millis(10)).unwrap(), 0);
}

#[test]
fn probe_reports_support() {
    let s = probe();
    eprintln!("datapath support: {s:#?}");
    // Anything unsupported must be so for an `Unsupported` reason, not a bug.
    for (path, err) in &s.errors {
        assert!(err.starts_with("Unsupported"), "{path} failed: {err}");
    }
    assert!(
        s.sendfile && s.splice_send && s.splice_recv && s.recv_trunc,
        "{s:?}"
    );
}

/// With no data and a short receive timeout, every receive path gives up
/// with `WouldBlock` (socket timeout) or `TimedOut` (io_uring) in time.
#[test]
fn receive_paths_time_out_without_data() {
    let (_client, server) = pair();
    let short = Duration::from_millis(100);
    server.set_read_timeout(Some(short)).unwrap();
    let would_block = |what: &str, e: io::Error| {
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{what}: {e}");
    };
    let start = Instant::now();
    would_block("recv_discard", recv_discard(&server, 4096).unwrap_err());
    let mut discard = SpliceDiscard::new(DEFAULT_PIPE_SIZE).unwrap();
    would_block("splice", discard.recv(&server, 4096).unwrap_err());
    let mut zc = ZeroCopyReceiver::new(&server, DEFAULT_ZC_CHUNK).unwrap();
    let mut copy = [0u8; 4096];
    would_block("zerocopy", zc.recv(&server, &mut copy).unwrap_err());
    assert!(zc.mapped().is_empty());
    let mut rx = UringReceiver::new(&server, 4096, 4).unwrap();
    let e = rx.recv(short).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::TimedOut, "io_uring: {e}");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

/// A socket that cannot do it reports `Unsupported`, so callers fall back.
#[test]
fn zerocopy_receive_on_udp_is_unsupported() {
    let udp = std::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let err = ZeroCopyReceiver::new(&udp, DEFAULT_ZC_CHUNK).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::Unsupported, "{err}");
}
