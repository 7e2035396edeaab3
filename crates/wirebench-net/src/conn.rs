//! A framed control connection with bounded waits.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use wirebench_proto::frame::{self, FrameDecoder};
use wirebench_proto::message::Message;

use crate::NetError;

/// How long a control write may go without any progress.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// A blocked write gives way to reading this often (see [`Control::send`]).
const SEND_SLICE: Duration = Duration::from_millis(20);

/// Most messages read ahead while a send was blocked, not yet returned by
/// [`Control::recv`].
const MAX_READ_AHEAD: usize = 100_000;

/// How many of the peer's first bytes a [`Control`] keeps.
pub const FIRST_BYTES: usize = 16;

/// A control connection: frames out, frames in, never an unbounded wait.
pub struct Control {
    stream: TcpStream,
    decoder: FrameDecoder,
    scratch: Vec<u8>,
    out: Vec<u8>,
    /// Messages that arrived while a send was blocked.
    ahead: std::collections::VecDeque<Message>,
    /// The first bytes the peer sent (at most [`FIRST_BYTES`]), to tell what it is when it
    /// does not speak the protocol.
    first: Vec<u8>,
}

impl Control {
    /// Wrap a connected stream (its preamble already exchanged).
    pub fn new(stream: TcpStream, max_frame_bytes: u32) -> Self {
        let _ = stream.set_nodelay(true);
        let _ = stream.set_write_timeout(Some(SEND_SLICE));
        Control {
            stream,
            decoder: FrameDecoder::new(max_frame_bytes),
            scratch: vec![0u8; 64 * 1024],
            out: Vec::new(),
            ahead: std::collections::VecDeque::new(),
            first: Vec::new(),
        }
    }

    /// The first bytes the peer sent (up to [`FIRST_BYTES`]).
    pub fn first_bytes(&self) -> &[u8] {
        &self.first
    }

    /// Raise or lower the frame cap (e.g. for a large results message).
    pub fn set_max_frame(&mut self, max: u32) {
        self.decoder.set_max(max);
    }

    /// The underlying stream.
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Send one message; fails once [`WRITE_TIMEOUT`] passes without progress.
    ///
    /// Both ends may send a large message at once (each end's `results`, megabytes for
    /// thousands of flows): if each only wrote, both would block on full socket buffers. So a
    /// write that blocks for [`SEND_SLICE`] gives way to reading whatever the peer sent; the
    /// messages read are kept, in order, for [`Control::recv`].
    pub fn send(&mut self, msg: &Message) -> Result<(), NetError> {
        self.out.clear();
        frame::encode_into(msg, &mut self.out);
        let mut off = 0;
        let mut progress = Instant::now();
        while off < self.out.len() {
            match self.stream.write(&self.out[off..]) {
                Ok(0) => {
                    return Err(NetError::io("sending a control frame")(
                        io::ErrorKind::WriteZero.into(),
                    ))
                }
                Ok(n) => {
                    off += n;
                    progress = Instant::now();
                }
                Err(e) if is_timeout(&e) => {
                    if progress.elapsed() >= WRITE_TIMEOUT {
                        return Err(NetError::io("sending a control frame")(e));
                    }
                    self.read_ahead()?;
                }
                Err(e) => return Err(NetError::io("sending a control frame")(e)),
            }
        }
        Ok(())
    }

    /// Take what the peer has sent so far (waiting at most 1 ms) into the read-ahead queue.
    fn read_ahead(&mut self) -> Result<(), NetError> {
        self.stream
            .set_read_timeout(Some(Duration::from_millis(1)))
            .map_err(NetError::io("setting a read timeout"))?;
        loop {
            while let Some(m) = self.decoder.next_message()? {
                if self.ahead.len() >= MAX_READ_AHEAD {
                    return Err(NetError::io("reading a control frame")(io::Error::new(
                        io::ErrorKind::OutOfMemory,
                        "the peer sent too many messages while we were sending",
                    )));
                }
                self.ahead.push_back(m);
            }
            let want = self.decoder.wanted().clamp(1, self.scratch.len());
            match self.stream.read(&mut self.scratch[..want]) {
                Ok(0) => return Err(NetError::PeerClosed),
                Ok(n) => self.decoder.feed(&self.scratch[..n])?,
                Err(e) if is_timeout(&e) => return Ok(()),
                Err(e) => return Err(NetError::io("reading a control frame")(e)),
            }
        }
    }

    /// Receive one message, waiting at most until `until`. `Ok(None)`: nothing complete yet.
    pub fn recv(&mut self, until: Instant) -> Result<Option<Message>, NetError> {
        if let Some(m) = self.ahead.pop_front() {
            return Ok(Some(m));
        }
        loop {
            if let Some(m) = self.decoder.next_message()? {
                return Ok(Some(m));
            }
            let now = Instant::now();
            if now >= until {
                return Ok(None);
            }
            // Wait with poll(2), whose timeout is a high-resolution timer: a socket read
            // timeout (SO_RCVTIMEO) counts in scheduler ticks (4 ms at HZ=250), which
            // stretched every 1 ms step of the control loops to up to 8 ms.
            let wait = until - now;
            let mut fds = [rustix::event::PollFd::new(
                &self.stream,
                rustix::event::PollFlags::IN,
            )];
            let timeout = rustix::event::Timespec {
                tv_sec: wait.as_secs().min(i64::MAX as u64) as i64,
                tv_nsec: i64::from(wait.subsec_nanos()),
            };
            match rustix::event::poll(&mut fds, Some(&timeout)) {
                Ok(0) => continue,
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(NetError::io("waiting for a control frame")(e.into())),
            }
            // Readable (data, EOF or an error): the read does not block; the timeout only
            // guards against a spurious wake-up.
            self.stream
                .set_read_timeout(Some(Duration::from_millis(1)))
                .map_err(NetError::io("setting a read timeout"))?;
            let want = self.decoder.wanted().clamp(1, self.scratch.len());
            match self.stream.read(&mut self.scratch[..want]) {
                Ok(0) => return Err(NetError::PeerClosed),
                Ok(n) => {
                    let keep = FIRST_BYTES.saturating_sub(self.first.len()).min(n);
                    self.first.extend_from_slice(&self.scratch[..keep]);
                    self.decoder.feed(&self.scratch[..n])?
                }
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(NetError::io("reading a control frame")(e)),
            }
        }
    }
}

/// A read timeout or an interrupted call: try again.
pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Wait until `buf.len()` bytes are queued on `stream` and copy them into `buf` without
/// consuming them, before `deadline` (absolute: trickled bytes do not extend it).
///
/// Used for handshakes: bytes a peer sent stay in the kernel queue, where the daemon's
/// eviction check ([`queued_bytes`]) can see them, until the connection is known to be kept.
pub fn peek_exact_by(stream: &TcpStream, buf: &mut [u8], deadline: Instant) -> io::Result<()> {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
        }
        stream.set_read_timeout(Some((deadline - now).max(Duration::from_millis(1))))?;
        let flags = rustix::net::RecvFlags::PEEK | rustix::net::RecvFlags::WAITALL;
        match rustix::net::recv(stream, &mut *buf, flags) {
            Ok((got, _)) if got >= buf.len() => return Ok(()),
            Ok((0, _)) => return Err(io::ErrorKind::UnexpectedEof.into()),
            // Fewer bytes: the timeout cut the wait (wait again until the deadline), or
            // the peer closed after a partial handshake (a peek would return at once forever).
            Ok(_) => {
                if peer_closed(stream) {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
            }
            Err(e) => {
                let e = io::Error::from(e);
                if !is_timeout(&e) {
                    return Err(e);
                }
            }
        }
    }
}

/// The peer has shut its sending side down (or the connection is gone): no more bytes come.
fn peer_closed(stream: &TcpStream) -> bool {
    use rustix::event::{poll, PollFd, PollFlags};
    let mut fds = [PollFd::new(stream, PollFlags::IN | PollFlags::RDHUP)];
    let zero = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    match poll(&mut fds, Some(&zero)) {
        Ok(_) => fds[0]
            .revents()
            .intersects(PollFlags::RDHUP | PollFlags::HUP | PollFlags::ERR),
        Err(_) => true,
    }
}

/// Bytes received on `stream` and not read yet (`FIONREAD`); 0 if the socket cannot say.
pub fn queued_bytes(stream: &TcpStream) -> usize {
    rustix::io::ioctl_fionread(stream).map_or(0, |n| n as usize)
}

/// Read exactly `buf.len()` bytes before `deadline` (absolute: trickled bytes do not extend it).
pub fn read_exact_by(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        let now = Instant::now();
        if now >= deadline {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
        }
        stream.set_read_timeout(Some((deadline - now).max(Duration::from_millis(1))))?;
        match stream.read(&mut buf[got..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if is_timeout(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Most bytes read from a data connection to find why the server refused it.
const REFUSAL_MAX_BYTES: u32 = 4096;

/// Did the server refuse this data connection? The daemon never sends anything on a data
/// connection before the test starts, except one `error` frame when it refuses the
/// connection (a connection cap) before closing it. Returns that error, or an I/O error if
/// the server closed the connection without one; `None` while nothing has arrived.
pub fn data_refusal(stream: &TcpStream) -> Option<NetError> {
    if queued_bytes(stream) == 0 {
        return peer_closed(stream).then(|| {
            NetError::io("a data connection")(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the server closed a data connection before the test started",
            ))
        });
    }
    let mut dec = FrameDecoder::new(REFUSAL_MAX_BYTES);
    let mut buf = [0u8; REFUSAL_MAX_BYTES as usize];
    let deadline = Instant::now() + Duration::from_millis(200);
    let mut s = stream;
    while Instant::now() < deadline {
        let _ = stream.set_read_timeout(Some(Duration::from_millis(50)));
        let want = dec.wanted().min(buf.len());
        let n = match s.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if is_timeout(&e) => continue,
            Err(e) => return Some(NetError::io("a data connection")(e)),
        };
        if dec.feed(&buf[..n]).is_err() {
            break;
        }
        match dec.next_message() {
            Ok(Some(Message::Error(e))) => {
                return Some(NetError::Session(
                    wirebench_proto::session::SessionError::Refused(e),
                ))
            }
            Ok(Some(_)) | Err(_) => break,
            Ok(None) => {}
        }
    }
    Some(NetError::io("a data connection")(io::Error::new(
        io::ErrorKind::InvalidData,
        "the server sent something other than an error on a data connection",
    )))
}
