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
pub fn byte_offset(text: &[u8], line: usize, column: usize) -> usize {
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
pub fn json_path_at(text: &[u8], end: usize) -> String {
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

    /// Bytes this decoder holds reserved (its buffer's capacity, at least [`Self::buffered`]):
    /// what the peer's frames cost this end in memory.
    pub fn reserved_bytes(&self) -> usize {
        self.buf.capacity()
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
