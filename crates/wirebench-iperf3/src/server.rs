//! The server side of one iperf3 control connection, as a state machine with no I/O.
//!
//! The caller reads bytes from the socket and hands them to [`ServerConn::handle_bytes`],
//! which returns the [`ServerEvent`]s they completed; it carries out the test and tells the
//! machine what happened ([`ServerConn::create_streams`], [`ServerConn::test_started`],
//! [`ServerConn::send_results`], [`ServerConn::refuse`]); and it writes whatever
//! [`ServerConn::take_output`] returns. Time is passed in: [`ServerConn::poll`] fails when the
//! current phase's deadline has passed, and [`ServerConn::deadline`] says when that is.
//!
//! ```text
//! Cookie ─37 bytes─► Params ─JSON─► Setup ─create_streams─► Streams ─test_started─► Running
//!   Running ─TEST_END─► ClientResults ─JSON─► ServerResults ─send_results─► Done ─IPERF_DONE─► Closed
//!   CLIENT_TERMINATE in any phase after the cookie, or refuse(): Closed
//! ```
//!
//! Input is buffered only up to the message being read: a JSON message's length is checked
//! against its cap before any room is made for it.

use std::time::{Duration, Instant};

use crate::params::Params;
use crate::results::Results;
use crate::wire::{
    encode_json, encode_server_error, json_length, max_results_bytes, Cookie, ErrorCode,
    ProtoError, State, COOKIE_BYTES, LENGTH_PREFIX_BYTES, MAX_PARAMS_BYTES,
};

/// Where the conversation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerPhase {
    /// Reading the 37-byte cookie.
    Cookie,
    /// `PARAM_EXCHANGE` sent; reading the parameters.
    Params,
    /// Parameters read; the caller checks them and prepares the test.
    Setup,
    /// `CREATE_STREAMS` sent; the caller collects the data streams.
    Streams,
    /// `TEST_START`/`TEST_RUNNING` sent; waiting for `TEST_END`.
    Running,
    /// `EXCHANGE_RESULTS` sent; reading the client's results.
    ClientResults,
    /// The client's results read; the caller sends the server's.
    ServerResults,
    /// `DISPLAY_RESULTS` sent; waiting for `IPERF_DONE`.
    Done,
    /// Over.
    Closed,
}

impl ServerPhase {
    fn name(self) -> &'static str {
        match self {
            ServerPhase::Cookie => "reading the cookie",
            ServerPhase::Params => "reading the parameters",
            ServerPhase::Setup => "setting the test up",
            ServerPhase::Streams => "collecting the data streams",
            ServerPhase::Running => "running the test",
            ServerPhase::ClientResults => "reading the client's results",
            ServerPhase::ServerResults => "sending the server's results",
            ServerPhase::Done => "waiting for IPERF_DONE",
            ServerPhase::Closed => "closed",
        }
    }
}

/// What the client's bytes completed.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// The cookie arrived (`PARAM_EXCHANGE` is queued).
    Cookie(Cookie),
    /// The parameters arrived: check them, then [`ServerConn::create_streams`] or
    /// [`ServerConn::refuse`].
    Params(Box<Params>),
    /// The client ended the test (`EXCHANGE_RESULTS` is queued): stop the data streams.
    TestEnd,
    /// The client's results arrived: send the server's with [`ServerConn::send_results`].
    ClientResults(Box<Results>),
    /// The client was interrupted (`CLIENT_TERMINATE`); the conversation is over.
    ClientTerminate,
    /// `IPERF_DONE`: the test is complete.
    Done,
}

/// The machine's deadlines.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// From the connection's acceptance to the end of the parameters (absolute).
    pub handshake: Duration,
    /// For each message after that (the client's results, `IPERF_DONE`), from when it became
    /// due.
    pub reply: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            handshake: Duration::from_secs(10),
            reply: Duration::from_secs(10),
        }
    }
}

/// One control connection's server side.
#[derive(Debug)]
pub struct ServerConn {
    phase: ServerPhase,
    timeouts: Timeouts,
    deadline: Option<Instant>,
    /// Bytes of the message being read.
    inbuf: Vec<u8>,
    /// The length of the JSON body being read, once its prefix is in.
    body_len: Option<usize>,
    /// Streams of the test (for the results cap).
    streams: u32,
    out: Vec<u8>,
}

impl ServerConn {
    /// A connection accepted at `now`.
    pub fn new(now: Instant, timeouts: Timeouts) -> ServerConn {
        ServerConn {
            phase: ServerPhase::Cookie,
            timeouts,
            deadline: Some(now + timeouts.handshake),
            inbuf: Vec::with_capacity(COOKIE_BYTES),
            body_len: None,
            streams: 1,
            out: Vec::new(),
        }
    }

    /// The current phase.
    pub fn phase(&self) -> ServerPhase {
        self.phase
    }

    /// When the current phase times out, if it does.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Bytes to write to the client (drained).
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// How many bytes the machine wants next (never more than the current message's rest),
    /// so that the caller reads no further than the current message.
    pub fn wanted(&self) -> usize {
        match self.phase {
            ServerPhase::Cookie => COOKIE_BYTES - self.inbuf.len(),
            ServerPhase::Params | ServerPhase::ClientResults => match self.body_len {
                None => LENGTH_PREFIX_BYTES - self.inbuf.len(),
                Some(n) => n - self.inbuf.len(),
            },
            ServerPhase::Closed => 0,
            _ => 1,
        }
    }

    /// Fails if the current phase's deadline has passed.
    pub fn poll(&mut self, now: Instant) -> Result<(), ProtoError> {
        match self.deadline {
            Some(d) if now >= d => {
                let phase = self.phase;
                self.phase = ServerPhase::Closed;
                if phase == ServerPhase::Cookie {
                    self.out
                        .extend_from_slice(&encode_server_error(ErrorCode::RecvCookie));
                }
                Err(ProtoError::Timeout(phase.name()))
            }
            _ => Ok(()),
        }
    }

    /// Feed bytes read from the client. Every byte is consumed; an error closes the machine.
    pub fn handle_bytes(
        &mut self,
        now: Instant,
        mut bytes: &[u8],
    ) -> Result<Vec<ServerEvent>, ProtoError> {
        let mut events = Vec::new();
        while !bytes.is_empty() {
            let take = self.wanted().min(bytes.len());
            if take == 0 {
                return Err(self.fail(ProtoError::UnexpectedBytes(self.phase.name())));
            }
            let (now_bytes, rest) = bytes.split_at(take);
            bytes = rest;
            match self.step(now, now_bytes) {
                Ok(Some(e)) => events.push(e),
                Ok(None) => {}
                Err(e) => return Err(self.fail(e)),
            }
        }
        Ok(events)
    }

    fn fail(&mut self, e: ProtoError) -> ProtoError {
        self.phase = ServerPhase::Closed;
        self.deadline = None;
        e
    }

    fn step(&mut self, now: Instant, b: &[u8]) -> Result<Option<ServerEvent>, ProtoError> {
        match self.phase {
            ServerPhase::Cookie => {
                self.inbuf.extend_from_slice(b);
                if self.inbuf.len() < COOKIE_BYTES {
                    return Ok(None);
                }
                let mut raw = [0u8; COOKIE_BYTES];
                raw.copy_from_slice(&self.inbuf);
                self.inbuf.clear();
                let cookie = Cookie::decode(&raw)?;
                self.out.push(State::ParamExchange.byte());
                self.phase = ServerPhase::Params;
                Ok(Some(ServerEvent::Cookie(cookie)))
            }
            ServerPhase::Params => {
                let Some(body) = self.json(b, MAX_PARAMS_BYTES, "parameters")? else {
                    return Ok(None);
                };
                let p = match Params::decode(&body) {
                    Ok(p) => p,
                    Err(e) => {
                        self.out
                            .extend_from_slice(&encode_server_error(ErrorCode::RecvParams));
                        return Err(e);
                    }
                };
                self.streams = p.stream_count();
                self.phase = ServerPhase::Setup;
                self.deadline = None;
                Ok(Some(ServerEvent::Params(Box::new(p))))
            }
            ServerPhase::ClientResults => {
                let cap = max_results_bytes(self.streams, false);
                let Some(body) = self.json(b, cap, "results")? else {
                    return Ok(None);
                };
                let r = Results::decode(&body)?;
                self.phase = ServerPhase::ServerResults;
                self.deadline = None;
                Ok(Some(ServerEvent::ClientResults(Box::new(r))))
            }
            phase => {
                let s = State::from_byte(b[0])?;
                match (phase, s) {
                    (_, State::ClientTerminate) => {
                        self.phase = ServerPhase::Closed;
                        self.deadline = None;
                        Ok(Some(ServerEvent::ClientTerminate))
                    }
                    (ServerPhase::Running, State::TestEnd) => {
                        self.out.push(State::ExchangeResults.byte());
                        self.phase = ServerPhase::ClientResults;
                        self.deadline = Some(now + self.timeouts.reply);
                        Ok(Some(ServerEvent::TestEnd))
                    }
                    (ServerPhase::Done, State::IperfDone) => {
                        self.phase = ServerPhase::Closed;
                        self.deadline = None;
                        Ok(Some(ServerEvent::Done))
                    }
                    (phase, got) => Err(ProtoError::UnexpectedState {
                        got,
                        phase: phase.name(),
                    }),
                }
            }
        }
    }

    /// Collect a length-prefixed JSON body; `None` until complete.
    fn json(
        &mut self,
        b: &[u8],
        cap: u32,
        what: &'static str,
    ) -> Result<Option<Vec<u8>>, ProtoError> {
        self.inbuf.extend_from_slice(b);
        match self.body_len {
            None => {
                if self.inbuf.len() < LENGTH_PREFIX_BYTES {
                    return Ok(None);
                }
                let mut p = [0u8; LENGTH_PREFIX_BYTES];
                p.copy_from_slice(&self.inbuf);
                self.inbuf.clear();
                let n = match json_length(p, cap, what) {
                    Ok(n) => n,
                    Err(e) => {
                        if what == "parameters" {
                            self.out
                                .extend_from_slice(&encode_server_error(ErrorCode::RecvParams));
                        }
                        return Err(e);
                    }
                };
                if n == 0 {
                    return Err(ProtoError::BadJson {
                        what,
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

    fn expect(&self, phase: ServerPhase, what: &'static str) -> Result<(), ProtoError> {
        if self.phase == phase {
            Ok(())
        } else {
            Err(ProtoError::Misuse(what))
        }
    }

    /// The parameters are accepted and the data listener is ready: queue `CREATE_STREAMS`.
    /// `deadline` bounds the stream collection.
    pub fn create_streams(&mut self, deadline: Instant) -> Result<(), ProtoError> {
        self.expect(ServerPhase::Setup, "create_streams outside setup")?;
        self.out.push(State::CreateStreams.byte());
        self.phase = ServerPhase::Streams;
        self.deadline = Some(deadline);
        Ok(())
    }

    /// Every stream is in and the server's side runs: queue `TEST_START`, `TEST_RUNNING`.
    /// The test has no deadline here; the caller bounds it (duration and grace).
    pub fn test_started(&mut self) -> Result<(), ProtoError> {
        self.expect(ServerPhase::Streams, "test_started outside stream creation")?;
        self.out.push(State::TestStart.byte());
        self.out.push(State::TestRunning.byte());
        self.phase = ServerPhase::Running;
        self.deadline = None;
        Ok(())
    }

    /// Queue the server's results and `DISPLAY_RESULTS`.
    pub fn send_results(&mut self, now: Instant, r: &Results) -> Result<(), ProtoError> {
        self.expect(
            ServerPhase::ServerResults,
            "send_results before the client's",
        )?;
        self.out.extend_from_slice(&encode_json(&r.encode()));
        self.out.push(State::DisplayResults.byte());
        self.phase = ServerPhase::Done;
        self.deadline = Some(now + self.timeouts.reply);
        Ok(())
    }

    /// Refuse the test with `SERVER_ERROR` and `code`; the conversation is over.
    pub fn refuse(&mut self, code: ErrorCode) {
        self.out.extend_from_slice(&encode_server_error(code));
        self.phase = ServerPhase::Closed;
        self.deadline = None;
    }

    /// Refuse with `ACCESS_DENIED` (iperf3's "server is busy"); the conversation is over.
    pub fn deny(&mut self) {
        self.out.push(State::AccessDenied.byte());
        self.phase = ServerPhase::Closed;
        self.deadline = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::encode_json;

    const PARAMS: &str = r#"{"tcp":true,"omit":0,"time":2,"num":0,"blockcount":0,"parallel":2,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;

    fn cookie() -> Vec<u8> {
        let mut c = b"xdq4b7my7u5qsv23wqji2imxgyu6luvpaiuf".to_vec();
        c.push(0);
        c
    }

    fn results() -> Results {
        Results::decode(br#"{"cpu_util_total":1,"cpu_util_user":0.5,"cpu_util_system":0.5,"sender_has_retransmits":1,"streams":[{"id":1,"bytes":10,"retransmits":0,"jitter":0,"errors":0,"packets":0}]}"#).unwrap()
    }

    /// A whole test, fed one byte at a time, gives the bytes of the transcript in the notes.
    #[test]
    fn a_whole_test_byte_by_byte() {
        let t0 = Instant::now();
        let mut s = ServerConn::new(t0, Timeouts::default());
        let mut input = cookie();
        input.extend(encode_json(PARAMS));
        let mut events = Vec::new();
        for b in &input {
            events.extend(s.handle_bytes(t0, std::slice::from_ref(b)).unwrap());
        }
        assert_eq!(s.take_output(), [0x09]);
        assert!(matches!(&events[0], ServerEvent::Cookie(c) if c.as_str().starts_with("xdq4")));
        let ServerEvent::Params(p) = &events[1] else {
            panic!("{events:?}")
        };
        assert_eq!(p.parallel, 2);
        s.create_streams(t0 + Duration::from_secs(5)).unwrap();
        s.test_started().unwrap();
        assert_eq!(s.take_output(), [0x0a, 0x01, 0x02]);
        let ev = s.handle_bytes(t0, &[0x04]).unwrap();
        assert_eq!(ev, [ServerEvent::TestEnd]);
        assert_eq!(s.take_output(), [0x0d]);
        let ev = s
            .handle_bytes(t0, &encode_json(&results().encode()))
            .unwrap();
        assert!(matches!(&ev[0], ServerEvent::ClientResults(_)));
        s.send_results(t0, &results()).unwrap();
        let out = s.take_output();
        assert_eq!(out.last(), Some(&0x0e));
        assert_eq!(s.handle_bytes(t0, &[0x10]).unwrap(), [ServerEvent::Done]);
        assert_eq!(s.phase(), ServerPhase::Closed);
    }

    #[test]
    fn a_huge_length_is_refused_before_allocation() {
        let t0 = Instant::now();
        let mut s = ServerConn::new(t0, Timeouts::default());
        s.handle_bytes(t0, &cookie()).unwrap();
        let e = s.handle_bytes(t0, &[0xff, 0xff, 0xff, 0xf0]).unwrap_err();
        assert!(matches!(e, ProtoError::TooLong { .. }), "{e}");
        assert!(s.inbuf.capacity() < 1024);
        assert_eq!(s.take_output(), [0x09, 0xfe, 0, 0, 0, 114, 0, 0, 0, 0]);
    }

    #[test]
    fn a_silent_client_times_out_with_recv_cookie() {
        let t0 = Instant::now();
        let mut s = ServerConn::new(t0, Timeouts::default());
        s.handle_bytes(t0, &cookie()[..10]).unwrap();
        assert!(s.poll(t0 + Duration::from_secs(9)).is_ok());
        assert!(s.poll(t0 + Duration::from_secs(10)).is_err());
        assert_eq!(s.take_output(), [0xfe, 0, 0, 0, 106, 0, 0, 0, 0]);
    }

    #[test]
    fn a_state_out_of_turn_is_an_error() {
        let t0 = Instant::now();
        let mut s = ServerConn::new(t0, Timeouts::default());
        s.handle_bytes(t0, &cookie()).unwrap();
        s.handle_bytes(t0, &encode_json(PARAMS)).unwrap();
        assert!(s.handle_bytes(t0, &[0x04]).is_err());
        assert_eq!(s.phase(), ServerPhase::Closed);
    }

    #[test]
    fn client_terminate_ends_any_phase() {
        let t0 = Instant::now();
        let mut s = ServerConn::new(t0, Timeouts::default());
        s.handle_bytes(t0, &cookie()).unwrap();
        s.handle_bytes(t0, &encode_json(PARAMS)).unwrap();
        s.create_streams(t0).unwrap();
        assert_eq!(
            s.handle_bytes(t0, &[0x0c]).unwrap(),
            [ServerEvent::ClientTerminate]
        );
    }
}
