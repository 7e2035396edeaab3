//! Length-prefixed frames.
//!
//! A frame is a 4-byte big-endian payload length followed by that many bytes of UTF-8 JSON
//! encoding exactly one [`Message`]. A length of zero is invalid, and every receiver enforces
//! a cap on the length. The cap is checked as soon as the four header bytes are known, before
//! any room for the payload is allocated.
//!
//! [`FrameDecoder`] is a sans-IO incremental decoder: the I/O layer [`feed`](FrameDecoder::feed)s
//! whatever bytes it read, then pops complete messages with
//! [`next_message`](FrameDecoder::next_message). [`wanted`](FrameDecoder::wanted) tells it how
//! many bytes complete the current header or payload, so it can read exactly that many.

use thiserror::Error;

use crate::message::{ErrorCode, ErrorMsg, Message};

/// Size of the length prefix.
pub const FRAME_HEADER_BYTES: usize = 4;
/// Default cap on a frame's payload length (1 MiB). Applies until a test is admitted.
pub const DEFAULT_MAX_FRAME_BYTES: u32 = 1 << 20;
/// No cap may be set above this (64 MiB).
pub const ABSOLUTE_MAX_FRAME_BYTES: u32 = 64 << 20;

/// When the decoder's buffer empties and its capacity is above this, the memory is released.
const KEEP_CAPACITY_BYTES: usize = 64 * 1024;

/// Why a frame was refused.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The header announced a zero-length payload.
    #[error("frame announces an empty payload (length 0)")]
    Empty,
    /// The header announced a payload longer than the cap.
    #[error("frame announces a {len}-byte payload, above the cap of {max} bytes")]
    TooLarge {
        /// Announced payload length.
        len: u64,
        /// The cap in force.
        max: u32,
    },
    /// The payload is not valid UTF-8 JSON for a [`Message`]. The text is serde_json's, and
    /// names the offending field, type and position.
    #[error("cannot decode frame payload: {0}")]
    Decode(String),
}

impl FrameError {
    /// The [`ErrorMsg`] to send to the peer before closing (code `bad_frame`).
    pub fn to_error_msg(&self) -> ErrorMsg {
        ErrorMsg {
            code: ErrorCode::BadFrame,
            field: None,
            limit: None,
            message: self.to_string(),
        }
    }
}

/// Encode `msg` as one frame (header and payload).
///
/// # Panics
///
/// If the JSON encoding is longer than `u32::MAX` bytes, which no [`Message`] built from
/// validated parts comes near. Frames longer than the peer's cap are encoded but the peer
/// refuses them.
pub fn encode(msg: &Message) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    encode_into(msg, &mut out);
    out
}

/// Append the frame encoding `msg` to `out`.
///
/// # Panics
///
/// As [`encode`].
pub fn encode_into(msg: &Message, out: &mut Vec<u8>) {
    let header_at = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER_BYTES]);
    // Serializing plain structs, enums, strings and numbers into a Vec cannot fail.
    serde_json::to_writer(&mut *out, msg).expect("serializing a Message cannot fail");
    let len = out.len() - header_at - FRAME_HEADER_BYTES;
    let len = u32::try_from(len).expect("frame payload longer than u32::MAX bytes");
    out[header_at..header_at + FRAME_HEADER_BYTES].copy_from_slice(&len.to_be_bytes());
}

/// Decode one frame payload (without its header).
pub fn decode_payload(payload: &[u8]) -> Result<Message, FrameError> {
    if payload.is_empty() {
        return Err(FrameError::Empty);
    }
    // serde_json validates UTF-8, rejects lone surrogates and out-of-range numbers, and stops
    // at 128 levels of nesting, so hostile payloads give an error rather than a panic.
    serde_json::from_slice(payload).map_err(|e| decode_error(payload, &e))
}

/// serde_json's message, plus the JSON path of the offending value (serde_json itself names
/// the field only for unknown, missing and duplicate fields).
fn decode_error(payload: &[u8], e: &serde_json::Error) -> FrameError {
    let mut text = e.to_string();
    if e.line() > 0 {
        let path = json_path_at(payload, byte_offset(payload, e.line(), e.column()));
        if !path.is_empty() {
            text.push_str(" (at `");
            text.push_str(&clip_front(&path, 200));
            text.push_str("`)");
        }
    }
    FrameError::Decode(text)
}

/// The last `max` bytes of `s` (at a character boundary), marked with `…` if shortened.
fn clip_front(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &s[start..])
}

/// Byte offset of serde_json's 1-based line and byte column.
fn byte_offset(text: &[u8], line: usize, column: usize) -> usize {
    let line_start = if line <= 1 {
        0
    } else {
        text.iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'\n')
            .nth(line - 2)
            .map_or(text.len(), |(i, _)| i + 1)
    };
    line_start.saturating_add(column).min(text.len())
}

/// The path (`test.flows`, `results.flows[0].tcp_info`) of the value being parsed at byte
/// `end` of `text`, which must be syntactically valid JSON up to there. Linear, no recursion.
fn json_path_at(text: &[u8], end: usize) -> String {
    enum Level {
        Object {
            key: Option<String>,
            expect_key: bool,
        },
        Array {
            index: usize,
        },
    }
    let mut stack: Vec<Level> = Vec::new();
    let mut i = 0;
    while i < end {
        match text[i] {
            b'{' => stack.push(Level::Object {
                key: None,
                expect_key: true,
            }),
            b'[' => stack.push(Level::Array { index: 0 }),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Level::Object { expect_key, .. }) => *expect_key = true,
                Some(Level::Array { index }) => *index += 1,
                None => {}
            },
            b':' => {
                if let Some(Level::Object { expect_key, .. }) = stack.last_mut() {
                    *expect_key = false;
                }
            }
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < text.len() && text[j] != b'"' {
                    j += if text[j] == b'\\' { 2 } else { 1 };
                }
                let stop = j.min(text.len());
                if let Some(Level::Object {
                    key,
                    expect_key: true,
                }) = stack.last_mut()
                {
                    let raw = &text[start..stop.min(start + 64)];
                    *key = Some(String::from_utf8_lossy(raw).into_owned());
                }
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    let mut path = String::new();
    for level in &stack {
        match level {
            Level::Object { key: Some(k), .. } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
            }
            Level::Object { key: None, .. } => {}
            Level::Array { index } => {
                path.push('[');
                path.push_str(&index.to_string());
                path.push(']');
            }
        }
    }
    path
}

/// Check an announced payload length against a cap.
fn check_len(len: u32, max: u32) -> Result<(), FrameError> {
    if len == 0 {
        Err(FrameError::Empty)
    } else if len > max {
        Err(FrameError::TooLarge {
            len: u64::from(len),
            max,
        })
    } else {
        Ok(())
    }
}

/// Incremental, sans-IO frame decoder.
///
/// Bytes go in with [`feed`](Self::feed), messages come out of
/// [`next_message`](Self::next_message). Each frame's length is checked against the cap as
/// soon as its header is complete; the buffer never grows beyond the bytes actually fed plus
/// the validated length of the frame being received. After any error the decoder is failed
/// for good: every later call returns the same error.
#[derive(Debug)]
pub struct FrameDecoder {
    max: u32,
    buf: Vec<u8>,
    /// Offset of the first frame not yet returned.
    start: usize,
    /// Offset of the frame being received. Frames in `start..tail` are complete and their
    /// headers validated; the frame at `tail` has an incomplete header or payload.
    tail: usize,
    failed: Option<FrameError>,
}

impl FrameDecoder {
    /// A decoder refusing payloads longer than `max_frame_bytes` (clamped to
    /// [`ABSOLUTE_MAX_FRAME_BYTES`]).
    pub fn new(max_frame_bytes: u32) -> Self {
        FrameDecoder {
            max: max_frame_bytes.min(ABSOLUTE_MAX_FRAME_BYTES),
            buf: Vec::new(),
            start: 0,
            tail: 0,
            failed: None,
        }
    }

    /// The cap in force.
    pub fn max(&self) -> u32 {
        self.max
    }

    /// Change the cap (clamped to [`ABSOLUTE_MAX_FRAME_BYTES`]). Headers already received are
    /// checked again: if one exceeds the new cap, the decoder fails with
    /// [`FrameError::TooLarge`] on the next call.
    pub fn set_max(&mut self, max: u32) {
        self.max = max.min(ABSOLUTE_MAX_FRAME_BYTES);
        if self.failed.is_some() {
            return;
        }
        // Re-check every buffered header; the last frame may be partial, so `at` can step
        // past the end of the buffer: compare, never subtract.
        let mut at = self.start;
        while at + FRAME_HEADER_BYTES <= self.buf.len() {
            let len = self.header_at(at);
            if let Err(e) = check_len(len, self.max) {
                self.failed = Some(e);
                return;
            }
            at += FRAME_HEADER_BYTES + len as usize;
        }
    }

    /// Append bytes read from the connection. Fails as soon as a header announces a length
    /// of zero or above the cap; the bytes after that header are not kept.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Result<(), FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.compact();
        // Everything in `bytes` is "fed": the buffer may grow to hold it.
        let fed_end = self.buf.len() + bytes.len();
        while !bytes.is_empty() {
            let have = self.buf.len() - self.tail;
            if have < FRAME_HEADER_BYTES {
                let take = (FRAME_HEADER_BYTES - have).min(bytes.len());
                self.append(&bytes[..take], fed_end);
                bytes = &bytes[take..];
                if self.buf.len() - self.tail == FRAME_HEADER_BYTES {
                    if let Err(e) = check_len(self.header_at(self.tail), self.max) {
                        self.failed = Some(e.clone());
                        return Err(e);
                    }
                }
            } else {
                let frame_end = self.tail + FRAME_HEADER_BYTES + self.header_at(self.tail) as usize;
                let take = (frame_end - self.buf.len()).min(bytes.len());
                self.append(&bytes[..take], fed_end.max(frame_end));
                bytes = &bytes[take..];
            }
            self.advance_tail();
        }
        Ok(())
    }

    /// Pop the next complete message, if one is buffered. A payload that does not decode
    /// fails the decoder with [`FrameError::Decode`].
    pub fn next_message(&mut self) -> Result<Option<Message>, FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.start == self.tail {
            return Ok(None);
        }
        let len = self.header_at(self.start) as usize;
        let body = self.start + FRAME_HEADER_BYTES;
        let result = decode_payload(&self.buf[body..body + len]);
        self.start = body + len;
        if self.start == self.buf.len() {
            self.reset_empty();
        }
        match result {
            Ok(msg) => Ok(Some(msg)),
            Err(e) => {
                self.failed = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Bytes still needed to complete the current header, or the current payload once its
    /// header is known. Reading exactly this many never reads past the frame. Zero after an
    /// error.
    pub fn wanted(&self) -> usize {
        if self.failed.is_some() {
            return 0;
        }
        let have = self.buf.len() - self.tail;
        if have < FRAME_HEADER_BYTES {
            FRAME_HEADER_BYTES - have
        } else {
            FRAME_HEADER_BYTES + self.header_at(self.tail) as usize - have
        }
    }

    /// Bytes fed and not yet returned as messages (headers included).
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The payload length in the header at `at` (four bytes must be present).
    fn header_at(&self, at: usize) -> u32 {
        let mut h = [0u8; FRAME_HEADER_BYTES];
        h.copy_from_slice(&self.buf[at..at + FRAME_HEADER_BYTES]);
        u32::from_be_bytes(h)
    }

    /// If the frame at `tail` is complete, move `tail` past it.
    fn advance_tail(&mut self) {
        let have = self.buf.len() - self.tail;
        if have >= FRAME_HEADER_BYTES
            && have == FRAME_HEADER_BYTES + self.header_at(self.tail) as usize
        {
            self.tail = self.buf.len();
        }
    }

    /// Append `bytes`, growing the buffer geometrically but never beyond `limit` (a length
    /// the buffer is known to reach: the end of the bytes fed or of a validated frame).
    fn append(&mut self, bytes: &[u8], limit: usize) {
        let needed = self.buf.len() + bytes.len();
        if needed > self.buf.capacity() {
            let target = needed.max((self.buf.capacity() * 2).min(limit));
            self.buf.reserve_exact(target - self.buf.len());
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Drop the frames already returned from the front of the buffer.
    fn compact(&mut self) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.tail -= self.start;
            self.start = 0;
        }
    }

    /// The buffer holds nothing unreturned: empty it, releasing a large allocation.
    fn reset_empty(&mut self) {
        if self.buf.capacity() > KEEP_CAPACITY_BYTES {
            self.buf = Vec::new();
        } else {
            self.buf.clear();
        }
        self.start = 0;
        self.tail = 0;
    }
}

impl Default for FrameDecoder {
    /// A decoder with the [`DEFAULT_MAX_FRAME_BYTES`] cap.
    fn default() -> Self {
        FrameDecoder::new(DEFAULT_MAX_FRAME_BYTES)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn set_max_with_a_partial_frame_buffered_does_not_panic() {
        let msg = super::Message::Bye(crate::message::Empty {});
        let bytes = super::encode(&msg);
        let mut dec = super::FrameDecoder::default();
        // Header plus part of the body: the re-scan must stop at the partial frame.
        dec.feed(&bytes[..super::FRAME_HEADER_BYTES + 2]).unwrap();
        dec.set_max(super::ABSOLUTE_MAX_FRAME_BYTES);
        dec.feed(&bytes[super::FRAME_HEADER_BYTES + 2..]).unwrap();
        assert_eq!(dec.next_message().unwrap(), Some(msg));
    }

    use super::*;
    use crate::message::{Busy, Empty, Hello};
    use crate::testutil::all_messages;

    fn header(len: u32) -> [u8; 4] {
        len.to_be_bytes()
    }

    fn decode_err(json: &str) -> String {
        match decode_payload(json.as_bytes()) {
            Err(FrameError::Decode(e)) => e,
            other => panic!("expected a decode error for {json}, got {other:?}"),
        }
    }

    #[test]
    fn every_variant_round_trips() {
        let msgs = all_messages();
        let mut stream = Vec::new();
        for msg in &msgs {
            let frame = encode(msg);
            let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
            assert_eq!(len, frame.len() - FRAME_HEADER_BYTES);
            assert_eq!(&decode_payload(&frame[4..]).unwrap(), msg);
            encode_into(msg, &mut stream);
        }
        // All frames in one feed.
        let mut dec = FrameDecoder::default();
        dec.feed(&stream).unwrap();
        for msg in &msgs {
            assert_eq!(&dec.next_message().unwrap().unwrap(), msg);
        }
        assert_eq!(dec.next_message(), Ok(None));
        assert_eq!(dec.buffered(), 0);
        // One byte at a time.
        let mut dec = FrameDecoder::default();
        let mut out = Vec::new();
        for b in &stream {
            dec.feed(std::slice::from_ref(b)).unwrap();
            while let Some(m) = dec.next_message().unwrap() {
                out.push(m);
            }
        }
        assert_eq!(out, msgs);
        // Exactly `wanted()` bytes at a time, as the I/O layer reads them.
        let mut dec = FrameDecoder::default();
        let mut out = Vec::new();
        let mut rest = &stream[..];
        while !rest.is_empty() {
            let n = dec.wanted().min(rest.len());
            assert!(n > 0);
            dec.feed(&rest[..n]).unwrap();
            rest = &rest[n..];
            while let Some(m) = dec.next_message().unwrap() {
                out.push(m);
            }
        }
        assert_eq!(out, msgs);
    }

    #[test]
    fn json_shape_is_externally_tagged() {
        let f = encode(&Message::Heartbeat(Empty {}));
        assert_eq!(&f[..4], &[0, 0, 0, 16]);
        assert_eq!(&f[4..], br#"{"heartbeat":{}}"#);
        let f = encode(&Message::Busy(Busy {
            running: 1,
            cap: 2,
            retry_after_ms: 3,
            scope: crate::message::BusyScope::Server,
        }));
        assert_eq!(
            &f[4..],
            br#"{"busy":{"running":1,"cap":2,"retry_after_ms":3,"scope":"server"}}"#
        );
    }

    #[test]
    fn wanted_tracks_header_and_body() {
        let frame = encode(&Message::Bye(Empty {}));
        let body = frame.len() - 4;
        let mut dec = FrameDecoder::default();
        assert_eq!(dec.wanted(), 4);
        dec.feed(&frame[..1]).unwrap();
        assert_eq!(dec.wanted(), 3);
        dec.feed(&frame[1..4]).unwrap();
        assert_eq!(dec.wanted(), body);
        dec.feed(&frame[4..6]).unwrap();
        assert_eq!(dec.wanted(), body - 2);
        assert_eq!(dec.next_message(), Ok(None));
        dec.feed(&frame[6..]).unwrap();
        assert_eq!(dec.wanted(), 4);
        assert_eq!(dec.buffered(), frame.len());
        assert_eq!(dec.next_message(), Ok(Some(Message::Bye(Empty {}))));
        assert_eq!(dec.buffered(), 0);
        // A complete frame plus part of the next.
        let mut two = frame.clone();
        two.extend_from_slice(&frame[..5]);
        dec.feed(&two).unwrap();
        assert_eq!(dec.wanted(), body - 1);
        assert_eq!(dec.next_message(), Ok(Some(Message::Bye(Empty {}))));
        assert_eq!(dec.next_message(), Ok(None));
        assert_eq!(dec.buffered(), 5);
        dec.feed(&frame[5..]).unwrap();
        assert_eq!(dec.next_message(), Ok(Some(Message::Bye(Empty {}))));
    }

    #[test]
    fn zero_length_is_refused() {
        let mut dec = FrameDecoder::default();
        assert_eq!(dec.feed(&header(0)), Err(FrameError::Empty));
        assert_eq!(decode_payload(b""), Err(FrameError::Empty));
    }

    #[test]
    fn oversized_lengths_are_refused_before_allocation() {
        for len in [1u32 << 31, u32::MAX, DEFAULT_MAX_FRAME_BYTES + 1] {
            let mut dec = FrameDecoder::default();
            let e = dec.feed(&header(len)).unwrap_err();
            assert_eq!(
                e,
                FrameError::TooLarge {
                    len: u64::from(len),
                    max: DEFAULT_MAX_FRAME_BYTES
                }
            );
            assert!(dec.buffered() <= 4);
            assert!(dec.buf.capacity() <= 16, "{}", dec.buf.capacity());
            // The bytes after the bad header are not kept.
            let mut dec = FrameDecoder::default();
            let mut bytes = header(len).to_vec();
            bytes.extend_from_slice(&[b'x'; 1000]);
            assert!(dec.feed(&bytes).is_err());
            assert!(dec.buffered() <= 4);
        }
        // Header dripped one byte at a time: refused on the fourth.
        let mut dec = FrameDecoder::default();
        let h = header(u32::MAX);
        for b in &h[..3] {
            dec.feed(std::slice::from_ref(b)).unwrap();
        }
        assert!(matches!(
            dec.feed(&h[3..]),
            Err(FrameError::TooLarge { .. })
        ));
    }

    #[test]
    fn length_at_cap_is_accepted_without_reserving_it() {
        let mut dec = FrameDecoder::new(1000);
        dec.feed(&header(1000)).unwrap();
        assert_eq!(dec.wanted(), 1000);
        assert!(dec.buf.capacity() <= 16);
        dec.feed(&[b' '; 10]).unwrap();
        // Growth is bounded by the bytes fed and the validated length.
        assert!(dec.buf.capacity() <= 4 + 1000);
        let mut dec = FrameDecoder::new(1000);
        assert!(matches!(
            dec.feed(&header(1001)),
            Err(FrameError::TooLarge {
                len: 1001,
                max: 1000
            })
        ));
    }

    #[test]
    fn slow_drip_grows_geometrically_within_the_frame() {
        let msg = Message::Hello(Hello {
            magic: "x".repeat(100_000),
            version: 1,
            software: String::new(),
        });
        let frame = encode(&msg);
        let mut dec = FrameDecoder::new(200_000);
        let mut reallocs = 0;
        let mut cap = dec.buf.capacity();
        for b in &frame {
            dec.feed(std::slice::from_ref(b)).unwrap();
            if dec.buf.capacity() != cap {
                reallocs += 1;
                cap = dec.buf.capacity();
            }
            assert!(cap <= frame.len());
        }
        assert!(reallocs < 40, "{reallocs}");
        assert_eq!(dec.next_message().unwrap(), Some(msg));
        // A large buffer is released once empty.
        assert_eq!(dec.buf.capacity(), 0);
    }

    #[test]
    fn errors_are_sticky() {
        let mut dec = FrameDecoder::default();
        let mut bytes = header(3).to_vec();
        bytes.extend_from_slice(b"{}}");
        dec.feed(&bytes).unwrap();
        let e = dec.next_message().unwrap_err();
        assert!(matches!(e, FrameError::Decode(_)));
        assert_eq!(dec.next_message(), Err(e.clone()));
        assert_eq!(dec.feed(&encode(&Message::Bye(Empty {}))), Err(e.clone()));
        assert_eq!(dec.wanted(), 0);
        let mut dec = FrameDecoder::default();
        let e = dec.feed(&header(0)).unwrap_err();
        assert_eq!(dec.next_message(), Err(e.clone()));
        assert_eq!(dec.feed(b"abc"), Err(e));
    }

    #[test]
    fn caps_are_clamped_and_rechecked() {
        assert_eq!(FrameDecoder::new(u32::MAX).max(), ABSOLUTE_MAX_FRAME_BYTES);
        let mut dec = FrameDecoder::default();
        dec.set_max(u32::MAX);
        assert_eq!(dec.max(), ABSOLUTE_MAX_FRAME_BYTES);
        dec.feed(&header(ABSOLUTE_MAX_FRAME_BYTES)).unwrap();
        let mut dec = FrameDecoder::default();
        assert!(dec.feed(&header(ABSOLUTE_MAX_FRAME_BYTES + 1)).is_err());
        // Raising the cap lets a big frame in.
        let mut dec = FrameDecoder::new(10);
        dec.set_max(100);
        dec.feed(&header(50)).unwrap();
        // Lowering it below a buffered header fails the decoder.
        dec.set_max(20);
        assert_eq!(
            dec.next_message(),
            Err(FrameError::TooLarge { len: 50, max: 20 })
        );
    }

    #[test]
    fn hostile_json_gives_clean_errors() {
        // serde_json's recursion limit (128) is in force: deep nesting is an error, not a
        // stack overflow, even where a value of any shape would be accepted.
        let deep = "[".repeat(100_000);
        let e = serde_json::from_str::<serde_json::Value>(&deep).unwrap_err();
        assert!(e.to_string().contains("recursion limit exceeded"), "{e}");
        let deep = "{\"a\":".repeat(100_000);
        let e = serde_json::from_str::<serde_json::Value>(&deep).unwrap_err();
        assert!(e.to_string().contains("recursion limit exceeded"), "{e}");
        // And in every position of a Message.
        for deep in [
            "[".repeat(100_000),
            "{\"a\":".repeat(100_000),
            format!("{{\"hello\":{{\"magic\":{}", "[".repeat(100_000)),
            format!("{{\"abort\":{}", "[".repeat(100_000)),
            format!(
                "{{\"results\":{{\"env\":{}",
                "{\"interface\":".repeat(100_000)
            ),
            format!("{{\"bye\":{{}}, \"x\": {}", "[".repeat(100_000)),
        ] {
            let e = decode_err(&deep);
            assert!(e.len() < 1000, "{e}");
        }
        // `cpu.system` (a wirebench-stats type) ignores unknown fields; serde_json skips an
        // ignored value iteratively, so even a deep one is no danger to the stack.
        let mut m = serde_json::to_value(Message::Results(Box::new(
            crate::testutil::full_side_report(wirebench_model::side::HostRole::Client),
        )))
        .unwrap();
        m["results"]["cpu"]["system"]["ignored"] = serde_json::json!([1]);
        let ok = m.to_string();
        assert!(decode_payload(ok.as_bytes()).is_ok());
        let balanced = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(decode_payload(ok.replacen("[1]", &balanced, 1).as_bytes()).is_ok());
        let e = decode_err(&ok.replacen("[1]", &"[".repeat(100_000), 1));
        assert!(e.len() < 1000, "{e}");
        // The same through the decoder.
        let mut dec = FrameDecoder::default();
        let payload = "[".repeat(100_000);
        dec.feed(&header(payload.len() as u32)).unwrap();
        dec.feed(payload.as_bytes()).unwrap();
        assert!(matches!(dec.next_message(), Err(FrameError::Decode(_))));

        // Invalid UTF-8 inside and outside strings.
        let e = decode_payload(b"{\"abort\":{\"reason\":\"\xff\xfe\"}}").unwrap_err();
        assert!(matches!(e, FrameError::Decode(_)), "{e}");
        assert!(decode_payload(b"\xff{}").is_err());
        assert!(decode_payload(b"{\"abort\":{\"reason\":\"\xed\xa0\x80\"}}").is_err());
        // Lone surrogate escapes.
        for lone in [
            r#""\ud800""#,
            r#""\ud800x""#,
            r#""\udc00""#,
            r#""\ud800\u0041""#,
        ] {
            let e = decode_err(&format!(r#"{{"abort":{{"reason":{lone}}}}}"#));
            assert!(e.contains("abort.reason"), "{e}");
        }
        // Numbers out of range.
        let e = decode_err(r#"{"busy":{"running":1,"cap":2,"retry_after_ms":1e999}}"#);
        assert!(e.contains("retry_after_ms"), "{e}");
        let e =
            decode_err(r#"{"busy":{"running":1,"cap":2,"retry_after_ms":18446744073709551616}}"#);
        assert!(e.contains("retry_after_ms"), "{e}");
        let e = decode_err(r#"{"busy":{"running":-1,"cap":2,"retry_after_ms":3}}"#);
        assert!(e.contains("running"), "{e}");
        let e = decode_err(r#"{"busy":{"running":4294967296,"cap":2,"retry_after_ms":3}}"#);
        assert!(e.contains("running"), "{e}");
        let e =
            decode_err(r#"{"busy":{"running":-9223372036854775809,"cap":2,"retry_after_ms":3}}"#);
        assert!(e.contains("running"), "{e}");
        let e = decode_err(r#"{"busy":{"running":1.5,"cap":2,"retry_after_ms":3}}"#);
        assert!(e.contains("running"), "{e}");
        // Trailing data, control characters, NUL, truncated input.
        assert!(decode_payload(br#"{"bye":{}} {"bye":{}}"#).is_err());
        assert!(decode_payload(b"{\"abort\":{\"reason\":\"a\x01\"}}").is_err());
        assert!(decode_payload(b"\0").is_err());
        assert!(decode_payload(br#"{"bye":{"#).is_err());
    }

    #[test]
    fn schema_errors_name_the_field() {
        let spec = serde_json::to_value(wirebench_model::spec::TestSpec::stream_default()).unwrap();
        let mut wrong = spec.clone();
        wrong["common"]["flows"] = serde_json::json!("x");
        let e =
            decode_err(&serde_json::json!({ "test": { "spec": wrong, "auth": null } }).to_string());
        assert!(e.contains("`test.spec.common.flows`"), "{e}");
        assert!(e.contains("invalid type"), "{e}");

        let e = decode_err(r#"{"hello":{"magic":1,"version":1,"software":""}}"#);
        assert!(
            e.starts_with("invalid type: integer `1`, expected a string"),
            "{e}"
        );
        assert!(e.contains("hello.magic"), "{e}");

        let mut unknown = spec.clone();
        unknown["foo"] = serde_json::json!(1);
        let e = decode_err(
            &serde_json::json!({ "test": { "spec": unknown, "auth": null } }).to_string(),
        );
        assert!(e.contains("unknown field `foo`"), "{e}");
        // A field of another workload is unknown too.
        let mut other = spec.clone();
        other["workload"]["stream"]["timeout_ms"] = serde_json::json!(100);
        let e =
            decode_err(&serde_json::json!({ "test": { "spec": other, "auth": null } }).to_string());
        assert!(e.contains("unknown field `timeout_ms`"), "{e}");

        let mut missing = spec.clone();
        missing["common"].as_object_mut().unwrap().remove("flows");
        let e = decode_err(
            &serde_json::json!({ "test": { "spec": missing, "auth": null } }).to_string(),
        );
        assert!(e.contains("missing field `flows`"), "{e}");

        let e = decode_err(r#"{"busy":{"running":1,"running":2,"cap":2,"retry_after_ms":3}}"#);
        assert!(e.contains("duplicate field `running`"), "{e}");

        let e = decode_err(r#"{"nope":{}}"#);
        assert!(e.contains("unknown variant `nope`"), "{e}");
        assert!(decode_payload(br#"{"bye":{},"hello":{}}"#).is_err());
        assert!(decode_payload(br#"{}"#).is_err());
        assert!(decode_payload(br#""bye""#).is_err());
        let e = decode_err(r#"{"bye":{"x":1}}"#);
        assert!(e.contains("unknown field `x`"), "{e}");

        // Nested arrays: the index is part of the path.
        let mut m = serde_json::to_value(Message::Results(Box::new(
            crate::testutil::full_side_report(wirebench_model::side::HostRole::Client),
        )))
        .unwrap();
        m["results"]["data"]["stream"]["flows"][0]["socket"]["tcp_info"]["rtt_us"] =
            serde_json::json!(-5);
        let e = decode_err(&m.to_string());
        assert!(
            e.contains("`results.data.stream.flows[0].socket.tcp_info.rtt_us`"),
            "{e}"
        );
    }

    #[test]
    fn path_finder_handles_escapes_and_lines() {
        let text = br#"{"a\"b": [1, {"c": "x,]}"}, 2], "d": "#;
        assert_eq!(json_path_at(text, text.len()), "d");
        assert_eq!(json_path_at(text, 12), "a\\\"b[1]");
        assert_eq!(byte_offset(b"ab\ncd\nef", 3, 1), 7);
        assert_eq!(byte_offset(b"ab", 9, 9), 2);
    }

    #[test]
    fn frame_error_maps_to_bad_frame() {
        let m = FrameError::TooLarge { len: 5, max: 4 }.to_error_msg();
        assert_eq!(m.code, ErrorCode::BadFrame);
        assert!(m.message.contains("above the cap"));
    }
}
