//! The client side of one iperf3 control connection, as a state machine with no I/O.
//!
//! [`ClientConn::new`] queues the cookie; the caller writes whatever
//! [`ClientConn::take_output`] returns, reads bytes from the server (at most
//! [`ClientConn::wanted`] at a time, so nothing past the current message is read) and hands
//! them to [`ClientConn::handle_bytes`], which returns the [`ClientEvent`]s they completed. It
//! carries out the test and tells the machine what happened ([`ClientConn::test_end`],
//! [`ClientConn::send_results`], [`ClientConn::terminate`]). Time is passed in:
//! [`ClientConn::poll`] fails once the current phase's deadline has passed.
//!
//! ```text
//! Cookie sent ─PARAM_EXCHANGE─► (params sent) ─CREATE_STREAMS─► Streams ─TEST_START─►
//!   Starting ─TEST_RUNNING─► Running ─test_end()─► AwaitExchange ─EXCHANGE_RESULTS─►
//!   ClientResults ─send_results()─► ServerResults ─JSON─► AwaitDisplay ─DISPLAY_RESULTS─►
//!   (IPERF_DONE sent) Closed
//! ACCESS_DENIED, SERVER_ERROR (+ codes), SERVER_TERMINATE, terminate(): Closed
//! ```
//!
//! The server's results are read with a cap that depends on the test's stream count, checked
//! on the length prefix before any room is made for the body.

use std::time::{Duration, Instant};

use crate::params::Params;
use crate::results::Results;
use crate::wire::{
    encode_json, json_length, max_results_bytes, Cookie, ProtoError, State, LENGTH_PREFIX_BYTES,
};

/// Where the conversation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientPhase {
    /// Cookie sent; waiting for `PARAM_EXCHANGE`.
    AwaitParamExchange,
    /// Parameters sent; waiting for `CREATE_STREAMS`.
    AwaitCreateStreams,
    /// The caller opens the data streams; waiting for `TEST_START`.
    Streams,
    /// `TEST_START` read; waiting for `TEST_RUNNING`.
    Starting,
    /// The test runs; the caller ends it with [`ClientConn::test_end`].
    Running,
    /// `TEST_END` sent; waiting for `EXCHANGE_RESULTS`.
    AwaitExchange,
    /// The caller sends this end's results ([`ClientConn::send_results`]).
    ClientResults,
    /// Reading the server's results.
    ServerResults,
    /// The server's results read; waiting for `DISPLAY_RESULTS`.
    AwaitDisplay,
    /// `SERVER_ERROR` read; reading its code.
    ErrorCode,
    /// The code read; reading the errno that most versions send after it.
    ErrorErrno,
    /// Over.
    Closed,
}

impl ClientPhase {
    /// What the client is doing, for messages.
    pub fn name(self) -> &'static str {
        match self {
            ClientPhase::AwaitParamExchange => "waiting for the server to accept the test",
            ClientPhase::AwaitCreateStreams => "waiting for the server to accept the parameters",
            ClientPhase::Streams => "opening the data streams",
            ClientPhase::Starting | ClientPhase::Running => "running the test",
            ClientPhase::AwaitExchange => "waiting for the server to ask for the results",
            ClientPhase::ClientResults => "sending the results",
            ClientPhase::ServerResults => "reading the server's results",
            ClientPhase::AwaitDisplay => "waiting for the end of the results exchange",
            ClientPhase::ErrorCode | ClientPhase::ErrorErrno => "reading the server's error",
            ClientPhase::Closed => "closed",
        }
    }
}

/// What bytes from the server completed.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientEvent {
    /// `CREATE_STREAMS`: open the data streams now, in order, each starting with the cookie.
    CreateStreams,
    /// `TEST_START`: every stream is accepted; the test's clock starts.
    TestStart,
    /// `TEST_RUNNING`: the data may flow.
    TestRunning,
    /// `EXCHANGE_RESULTS`: send this end's results ([`ClientConn::send_results`]).
    ExchangeResults,
    /// The server's results.
    ServerResults(Box<Results>),
    /// `DISPLAY_RESULTS`: the exchange is over; `IPERF_DONE` is queued. Close after writing it.
    Done,
    /// `ACCESS_DENIED`: the server is busy with another test (or refused a data stream).
    AccessDenied,
    /// `SERVER_ERROR` with iperf3's error number and, when the server sent one, its errno.
    ServerError {
        /// iperf3's `i_errno`.
        code: i32,
        /// The OS error number, if sent (3.12 sends none after an authentication failure).
        errno: Option<i32>,
    },
    /// `SERVER_TERMINATE`: the server is exiting; `IPERF_DONE` is queued.
    ServerTerminate,
}

/// The machine's deadlines.
#[derive(Debug, Clone, Copy)]
pub struct ClientTimeouts {
    /// From the start to `CREATE_STREAMS`, and again from there to `TEST_RUNNING`.
    pub handshake: Duration,
    /// For each message after `TEST_END`, from when it became due.
    pub reply: Duration,
}

impl Default for ClientTimeouts {
    fn default() -> Self {
        ClientTimeouts {
            handshake: Duration::from_secs(10),
            reply: Duration::from_secs(10),
        }
    }
}

/// One control connection's client side.
#[derive(Debug)]
pub struct ClientConn {
    phase: ClientPhase,
    timeouts: ClientTimeouts,
    deadline: Option<Instant>,
    params: String,
    /// Streams of the test (for the results cap).
    streams: u32,
    /// The server's results may carry its output (`get_server_output`).
    server_output: bool,
    inbuf: Vec<u8>,
    body_len: Option<usize>,
    error_code: i32,
    out: Vec<u8>,
}

impl ClientConn {
    /// A conversation started at `now` on a fresh connection: the cookie is queued.
    pub fn new(now: Instant, cookie: Cookie, params: &Params, timeouts: ClientTimeouts) -> Self {
        ClientConn {
            phase: ClientPhase::AwaitParamExchange,
            timeouts,
            deadline: Some(now + timeouts.handshake),
            params: params.encode(),
            streams: params.stream_count(),
            server_output: params.get_server_output,
            inbuf: Vec::new(),
            body_len: None,
            error_code: 0,
            out: cookie.encode().to_vec(),
        }
    }

    /// The current phase.
    pub fn phase(&self) -> ClientPhase {
        self.phase
    }

    /// When the current phase times out, if it does.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Bytes to write to the server (drained).
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// How many bytes the machine wants next (never past the current message).
    pub fn wanted(&self) -> usize {
        match self.phase {
            ClientPhase::ServerResults => match self.body_len {
                None => LENGTH_PREFIX_BYTES - self.inbuf.len(),
                Some(n) => n - self.inbuf.len(),
            },
            ClientPhase::ErrorCode | ClientPhase::ErrorErrno => 4 - self.inbuf.len(),
            ClientPhase::ClientResults | ClientPhase::Closed => 0,
            _ => 1,
        }
    }

    /// Fails once the current phase's deadline has passed (the machine closes).
    pub fn poll(&mut self, now: Instant) -> Result<(), ProtoError> {
        match self.deadline {
            Some(d) if now >= d => {
                let phase = self.phase;
                self.close();
                Err(ProtoError::Timeout(phase.name()))
            }
            _ => Ok(()),
        }
    }

    fn close(&mut self) {
        self.phase = ClientPhase::Closed;
        self.deadline = None;
    }

    /// The server closed the connection. A `SERVER_ERROR` without its errno is complete then
    /// (returned as its event); anywhere else the end is an error naming the phase.
    pub fn eof(&mut self) -> Result<Option<ClientEvent>, ProtoError> {
        let phase = self.phase;
        self.close();
        match phase {
            ClientPhase::ErrorErrno if self.inbuf.is_empty() => {
                Ok(Some(ClientEvent::ServerError {
                    code: self.error_code,
                    errno: None,
                }))
            }
            ClientPhase::Closed => Ok(None),
            p => Err(ProtoError::PeerClosed(p.name())),
        }
    }

    /// Feed bytes read from the server. Every byte is consumed; an error closes the machine.
    pub fn handle_bytes(
        &mut self,
        now: Instant,
        mut bytes: &[u8],
    ) -> Result<Vec<ClientEvent>, ProtoError> {
        let mut events = Vec::new();
        while !bytes.is_empty() {
            let take = self.wanted().min(bytes.len());
            if take == 0 {
                let e = ProtoError::UnexpectedBytes(self.phase.name());
                self.close();
                return Err(e);
            }
            let (now_bytes, rest) = bytes.split_at(take);
            bytes = rest;
            match self.step(now, now_bytes) {
                Ok(Some(e)) => events.push(e),
                Ok(None) => {}
                Err(e) => {
                    self.close();
                    return Err(e);
                }
            }
        }
        Ok(events)
    }

    fn step(&mut self, now: Instant, b: &[u8]) -> Result<Option<ClientEvent>, ProtoError> {
        match self.phase {
            ClientPhase::ServerResults => {
                let cap = max_results_bytes(self.streams, self.server_output);
                let Some(body) = self.json(b, cap)? else {
                    return Ok(None);
                };
                let r = Results::decode(&body)?;
                self.phase = ClientPhase::AwaitDisplay;
                self.deadline = Some(now + self.timeouts.reply);
                Ok(Some(ClientEvent::ServerResults(Box::new(r))))
            }
            ClientPhase::ErrorCode | ClientPhase::ErrorErrno => {
                self.inbuf.extend_from_slice(b);
                if self.inbuf.len() < 4 {
                    return Ok(None);
                }
                let mut v = [0u8; 4];
                v.copy_from_slice(&self.inbuf);
                self.inbuf.clear();
                let v = i32::from_be_bytes(v);
                if self.phase == ClientPhase::ErrorCode {
                    self.error_code = v;
                    self.phase = ClientPhase::ErrorErrno;
                    return Ok(None);
                }
                self.close();
                Ok(Some(ClientEvent::ServerError {
                    code: self.error_code,
                    errno: Some(v),
                }))
            }
            phase => self.state(now, phase, State::from_byte(b[0])?),
        }
    }

    fn state(
        &mut self,
        now: Instant,
        phase: ClientPhase,
        s: State,
    ) -> Result<Option<ClientEvent>, ProtoError> {
        let ev = match (phase, s) {
            (_, State::AccessDenied) => {
                self.close();
                ClientEvent::AccessDenied
            }
            (_, State::ServerError) => {
                self.phase = ClientPhase::ErrorCode;
                self.deadline = Some(now + self.timeouts.reply);
                return Ok(None);
            }
            (_, State::ServerTerminate) => {
                self.out.push(State::IperfDone.byte());
                self.close();
                ClientEvent::ServerTerminate
            }
            (ClientPhase::AwaitParamExchange, State::ParamExchange) => {
                self.out.extend_from_slice(&encode_json(&self.params));
                self.phase = ClientPhase::AwaitCreateStreams;
                return Ok(None);
            }
            (ClientPhase::AwaitCreateStreams, State::CreateStreams) => {
                self.phase = ClientPhase::Streams;
                self.deadline = Some(now + self.timeouts.handshake);
                ClientEvent::CreateStreams
            }
            (ClientPhase::Streams, State::TestStart) => {
                self.phase = ClientPhase::Starting;
                ClientEvent::TestStart
            }
            (ClientPhase::Starting, State::TestRunning) => {
                self.phase = ClientPhase::Running;
                self.deadline = None;
                ClientEvent::TestRunning
            }
            (ClientPhase::AwaitExchange, State::ExchangeResults) => {
                self.phase = ClientPhase::ClientResults;
                self.deadline = None;
                ClientEvent::ExchangeResults
            }
            (ClientPhase::AwaitDisplay, State::DisplayResults) => {
                self.out.push(State::IperfDone.byte());
                self.close();
                ClientEvent::Done
            }
            (phase, got) => {
                return Err(ProtoError::UnexpectedState {
                    got,
                    phase: phase.name(),
                })
            }
        };
        Ok(Some(ev))
    }

    /// Collect a length-prefixed JSON body; `None` until complete.
    fn json(&mut self, b: &[u8], cap: u32) -> Result<Option<Vec<u8>>, ProtoError> {
        self.inbuf.extend_from_slice(b);
        match self.body_len {
            None => {
                if self.inbuf.len() < LENGTH_PREFIX_BYTES {
                    return Ok(None);
                }
                let mut p = [0u8; LENGTH_PREFIX_BYTES];
                p.copy_from_slice(&self.inbuf);
                self.inbuf.clear();
                let n = json_length(p, cap, "server results")?;
                if n == 0 {
                    return Err(ProtoError::BadJson {
                        what: "server results",
                        detail: "empty message".into(),
                    });
                }
                self.inbuf.reserve_exact(n);
                self.body_len = Some(n);
                Ok(None)
            }
            Some(n) if self.inbuf.len() >= n => {
                self.body_len = None;
                Ok(Some(std::mem::take(&mut self.inbuf)))
            }
            Some(_) => Ok(None),
        }
    }

    /// The caller's test is over (time, bytes or an interrupt): queue `TEST_END`.
    pub fn test_end(&mut self, now: Instant) -> Result<(), ProtoError> {
        if self.phase != ClientPhase::Running {
            return Err(ProtoError::Misuse("test_end outside a running test"));
        }
        self.out.push(State::TestEnd.byte());
        self.phase = ClientPhase::AwaitExchange;
        self.deadline = Some(now + self.timeouts.reply);
        Ok(())
    }

    /// Queue this end's results (after [`ClientEvent::ExchangeResults`]).
    pub fn send_results(&mut self, now: Instant, r: &Results) -> Result<(), ProtoError> {
        if self.phase != ClientPhase::ClientResults {
            return Err(ProtoError::Misuse("send_results before EXCHANGE_RESULTS"));
        }
        self.out.extend_from_slice(&encode_json(&r.encode()));
        self.phase = ClientPhase::ServerResults;
        self.deadline = Some(now + self.timeouts.reply);
        Ok(())
    }

    /// The user interrupted the test: queue `CLIENT_TERMINATE`; the conversation is over.
    pub fn terminate(&mut self) {
        if self.phase != ClientPhase::Closed {
            self.out.push(State::ClientTerminate.byte());
        }
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Direction;

    fn cookie() -> Cookie {
        Cookie::from_random([7; 36])
    }

    fn params() -> Params {
        Params {
            time_s: 2,
            parallel: 2,
            direction: Direction::Reverse,
            client_version: Some("wirebench".into()),
            ..Params::default()
        }
    }

    /// The server's results of the 3.12 capture in the protocol notes (section 15).
    const SEEN_3_12: &str = r#"{"cpu_util_total":29.189028428616059,"cpu_util_user":1.6672789753202126,"cpu_util_system":27.5215995001562,"sender_has_retransmits":18446744073709551615,"congestion_used":"bbr","streams":[{"id":1,"bytes":2880569344,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.000604}]}"#;

    fn mine() -> Results {
        Results::decode(br#"{"cpu_util_total":1,"cpu_util_user":0.5,"cpu_util_system":0.5,"sender_has_retransmits":1,"streams":[{"id":1,"bytes":10,"retransmits":0,"jitter":0,"errors":0,"packets":0}]}"#).unwrap()
    }

    /// The server's side of a whole test, as the notes' transcript has it.
    fn server_bytes() -> Vec<u8> {
        let mut b = vec![0x09, 0x0a, 0x01, 0x02, 0x0d];
        b.extend(encode_json(SEEN_3_12));
        b.push(0x0e);
        b
    }

    /// A whole test fed one byte at a time writes the transcript's client bytes.
    #[test]
    fn a_whole_test_byte_by_byte() {
        let t0 = Instant::now();
        let mut c = ClientConn::new(t0, cookie(), &params(), ClientTimeouts::default());
        let mut written = c.take_output();
        assert_eq!(written.len(), 37);
        assert_eq!(written[36], 0);
        let mut events = Vec::new();
        for (i, b) in server_bytes().iter().enumerate() {
            events.extend(c.handle_bytes(t0, std::slice::from_ref(b)).unwrap());
            written.extend(c.take_output());
            match c.phase() {
                ClientPhase::Running => c.test_end(t0).unwrap(),
                ClientPhase::ClientResults => c.send_results(t0, &mine()).unwrap(),
                _ => {}
            }
            written.extend(c.take_output());
            assert!(c.wanted() > 0 || i + 1 == server_bytes().len(), "{i}");
        }
        assert_eq!(events[0], ClientEvent::CreateStreams);
        assert_eq!(events[1], ClientEvent::TestStart);
        assert_eq!(events[2], ClientEvent::TestRunning);
        assert_eq!(events[3], ClientEvent::ExchangeResults);
        let ClientEvent::ServerResults(r) = &events[4] else {
            panic!("{events:?}")
        };
        assert_eq!(r.streams[0].bytes, 2_880_569_344);
        assert_eq!(r.sender_has_retransmits, -1);
        assert_eq!(events[5], ClientEvent::Done);
        assert_eq!(c.phase(), ClientPhase::Closed);
        // cookie | params | TEST_END | results | IPERF_DONE
        let params = encode_json(&params().encode());
        assert_eq!(&written[37..37 + params.len()], &params[..]);
        let p = Params::decode(&params[4..]).unwrap();
        assert_eq!(p.direction, Direction::Reverse);
        let rest = &written[37 + params.len()..];
        assert_eq!(rest[0], 0x04);
        assert_eq!(&rest[1..rest.len() - 1], &encode_json(&mine().encode())[..]);
        assert_eq!(rest.last(), Some(&0x10));
    }

    #[test]
    fn busy_is_access_denied() {
        let t0 = Instant::now();
        let mut c = ClientConn::new(t0, cookie(), &params(), ClientTimeouts::default());
        assert_eq!(
            c.handle_bytes(t0, &[0xff]).unwrap(),
            [ClientEvent::AccessDenied]
        );
        assert_eq!(c.phase(), ClientPhase::Closed);
        assert!(c.handle_bytes(t0, &[0x09]).is_err());
    }

    #[test]
    fn server_errors_with_and_without_errno() {
        let t0 = Instant::now();
        let mut c = ClientConn::new(t0, cookie(), &params(), ClientTimeouts::default());
        let ev = c
            .handle_bytes(t0, &[0x09, 0xfe, 0, 0, 0, 202, 0, 0, 0, 98])
            .unwrap();
        assert_eq!(
            ev,
            [ClientEvent::ServerError {
                code: 202,
                errno: Some(98)
            }]
        );
        let mut c = ClientConn::new(t0, cookie(), &params(), ClientTimeouts::default());
        assert!(c
            .handle_bytes(t0, &[0x09, 0xfe, 0, 0, 0, 142])
            .unwrap()
            .is_empty());
        assert_eq!(
            c.eof().unwrap(),
            Some(ClientEvent::ServerError {
                code: 142,
                errno: None
            })
        );
    }

    #[test]
    fn eof_before_param_exchange_names_the_phase() {
        let t0 = Instant::now();
        let mut c = ClientConn::new(t0, cookie(), &params(), ClientTimeouts::default());
        let e = c.eof().unwrap_err();
        assert_eq!(
            e,
            ProtoError::PeerClosed("waiting for the server to accept the test")
        );
    }

    #[test]
    fn a_huge_results_length_is_refused_before_allocation() {
        let t0 = Instant::now();
        let mut c = ClientConn::new(t0, cookie(), &params(), ClientTimeouts::default());
        c.handle_bytes(t0, &[0x09, 0x0a, 0x01, 0x02]).unwrap();
        c.test_end(t0).unwrap();
        c.handle_bytes(t0, &[0x0d]).unwrap();
        c.send_results(t0, &mine()).unwrap();
        let e = c.handle_bytes(t0, &[0xff, 0xff, 0xff, 0xf0]).unwrap_err();
        assert!(matches!(e, ProtoError::TooLong { .. }), "{e}");
        assert!(c.inbuf.capacity() < 1024);
        assert_eq!(c.phase(), ClientPhase::Closed);
    }

    #[test]
    fn states_out_of_turn_and_timeouts() {
        let t0 = Instant::now();
        let mut c = ClientConn::new(t0, cookie(), &params(), ClientTimeouts::default());
        assert!(c.handle_bytes(t0, &[0x01]).is_err());
        let mut c = ClientConn::new(t0, cookie(), &params(), ClientTimeouts::default());
        assert!(c.poll(t0 + Duration::from_secs(9)).is_ok());
        assert!(c.poll(t0 + Duration::from_secs(10)).is_err());
        assert_eq!(c.phase(), ClientPhase::Closed);
        // Bytes while this end owes its results are a protocol error.
        let mut c = ClientConn::new(t0, cookie(), &params(), ClientTimeouts::default());
        c.handle_bytes(t0, &[0x09, 0x0a, 0x01, 0x02]).unwrap();
        assert!(c.poll(t0 + Duration::from_secs(3600)).is_ok());
        c.test_end(t0).unwrap();
        c.handle_bytes(t0, &[0x0d]).unwrap();
        assert!(c.handle_bytes(t0, &[0x0e]).is_err());
    }

    #[test]
    fn server_terminate_queues_iperf_done() {
        let t0 = Instant::now();
        let mut c = ClientConn::new(t0, cookie(), &params(), ClientTimeouts::default());
        c.handle_bytes(t0, &[0x09, 0x0a, 0x01, 0x02]).unwrap();
        let _ = c.take_output();
        assert_eq!(
            c.handle_bytes(t0, &[0x0b]).unwrap(),
            [ClientEvent::ServerTerminate]
        );
        assert_eq!(c.take_output(), [0x10]);
        let mut c = ClientConn::new(t0, cookie(), &params(), ClientTimeouts::default());
        let _ = c.take_output();
        c.terminate();
        assert_eq!(c.take_output(), [0x0c]);
    }
}
