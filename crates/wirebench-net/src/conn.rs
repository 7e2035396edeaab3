//! A framed control connection with bounded waits.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use wirebench_proto::frame::{self, FrameDecoder};
use wirebench_proto::message::Message;

use crate::NetError;

/// How long one control write may block.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// A control connection: frames out, frames in, never an unbounded wait.
pub struct Control {
    stream: TcpStream,
    decoder: FrameDecoder,
    scratch: Vec<u8>,
    out: Vec<u8>,
}

impl Control {
    /// Wrap a connected stream (its preamble already exchanged).
    pub fn new(stream: TcpStream, max_frame_bytes: u32) -> Self {
        let _ = stream.set_nodelay(true);
        let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
        Control {
            stream,
            decoder: FrameDecoder::new(max_frame_bytes),
            scratch: vec![0u8; 64 * 1024],
            out: Vec::new(),
        }
    }

    /// Raise or lower the frame cap (e.g. for a large results message).
    pub fn set_max_frame(&mut self, max: u32) {
        self.decoder.set_max(max);
    }

    /// The underlying stream.
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Send one message (bounded by [`WRITE_TIMEOUT`]).
    pub fn send(&mut self, msg: &Message) -> Result<(), NetError> {
        self.out.clear();
        frame::encode_into(msg, &mut self.out);
        self.stream
            .write_all(&self.out)
            .map_err(NetError::io("sending a control frame"))
    }

    /// Receive one message, waiting at most until `until`. `Ok(None)`: nothing complete yet.
    pub fn recv(&mut self, until: Instant) -> Result<Option<Message>, NetError> {
        loop {
            if let Some(m) = self.decoder.next_message()? {
                return Ok(Some(m));
            }
            let now = Instant::now();
            if now >= until {
                return Ok(None);
            }
            let wait = (until - now).max(Duration::from_millis(1));
            self.stream
                .set_read_timeout(Some(wait))
                .map_err(NetError::io("setting a read timeout"))?;
            let want = self.decoder.wanted().clamp(1, self.scratch.len());
            match self.stream.read(&mut self.scratch[..want]) {
                Ok(0) => return Err(NetError::PeerClosed),
                Ok(n) => self.decoder.feed(&self.scratch[..n])?,
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
