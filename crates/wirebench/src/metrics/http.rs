//! The HTTP side of the metrics endpoint: `GET /metrics` (and `HEAD`) answered with the
//! exposition, anything else with 404 or 405. One connection at a time: a scrape is small
//! and rare, and a client that sends nothing holds the endpoint for at most
//! [`REQUEST_DEADLINE`], reading at most [`MAX_REQUEST_BYTES`]; one that reads slowly holds it
//! for at most [`REQUEST_DEADLINE`] again while the answer is written.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::registry::{exposition, prometheus_text, Health};
use super::{process_figures, Shared, POLL};

/// A request's head (request line and headers) may be this long at most.
pub(crate) const MAX_REQUEST_BYTES: usize = 8192;

/// A request's head must arrive within this.
pub(crate) const REQUEST_DEADLINE: Duration = Duration::from_secs(2);

/// OpenMetrics' content type (what prometheus-client's encoder writes).
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The Prometheus text format's content type.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

pub(super) fn serve(listener: TcpListener, shared: &Shared, done: &AtomicBool) {
    while !done.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((stream, _)) => answer(stream, shared),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL / 4),
            Err(e) => {
                tracing::debug!("metrics endpoint accept: {e}");
                std::thread::sleep(POLL);
            }
        }
    }
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// `GET /metrics` (`head`: HEAD, no body; `openmetrics`: the Accept header names
    /// OpenMetrics, as Prometheus' scraper does; otherwise the Prometheus text format).
    Metrics { head: bool, openmetrics: bool },
    /// Another path.
    NotFound,
    /// Another method.
    BadMethod,
    /// Not HTTP, too long, or cut short.
    Malformed,
}

/// Reads a request's head from its first bytes.
pub(crate) fn parse(head: &[u8]) -> Request {
    let Some(line_end) = head.windows(2).position(|w| w == b"\r\n") else {
        return Request::Malformed;
    };
    let line = String::from_utf8_lossy(&head[..line_end]);
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Request::Malformed;
    };
    if !version.starts_with("HTTP/1.") || parts.next().is_some() {
        return Request::Malformed;
    }
    let path = target.split('?').next().unwrap_or("");
    let openmetrics = String::from_utf8_lossy(&head[line_end..])
        .lines()
        .filter_map(|l| l.split_once(':'))
        .any(|(k, v)| {
            k.trim().eq_ignore_ascii_case("accept") && v.contains("application/openmetrics-text")
        });
    match (method, path) {
        ("GET", "/metrics") => Request::Metrics {
            head: false,
            openmetrics,
        },
        ("HEAD", "/metrics") => Request::Metrics {
            head: true,
            openmetrics,
        },
        ("GET" | "HEAD", _) => Request::NotFound,
        _ => Request::BadMethod,
    }
}

/// Reads the head (up to the blank line), bounded by bytes and time.
fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let deadline = Instant::now() + REQUEST_DEADLINE;
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let left = deadline.checked_duration_since(Instant::now())?;
        stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .ok()?;
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 || buf.len() + n > MAX_REQUEST_BYTES {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(buf)
}

fn answer(mut stream: TcpStream, shared: &Shared) {
    let _ = stream.set_nonblocking(false);
    let req = read_head(&mut stream).map_or(Request::Malformed, |h| parse(&h));
    let plain = "text/plain; charset=utf-8";
    let (status, ctype, body, head) = match req {
        Request::Metrics {
            head,
            openmetrics: true,
        } => ("200 OK", OPENMETRICS, scrape(shared), head),
        Request::Metrics {
            head,
            openmetrics: false,
        } => (
            "200 OK",
            PROMETHEUS_TEXT,
            prometheus_text(&scrape(shared)),
            head,
        ),
        Request::NotFound => (
            "404 Not Found",
            plain,
            "only /metrics is served\n".into(),
            false,
        ),
        Request::BadMethod => (
            "405 Method Not Allowed",
            plain,
            "GET /metrics\n".into(),
            false,
        ),
        Request::Malformed => (
            "400 Bad Request",
            plain,
            "not an HTTP/1 request\n".into(),
            false,
        ),
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head {
        out.extend_from_slice(body.as_bytes());
    }
    write_by(&mut stream, &out, Instant::now() + REQUEST_DEADLINE);
}

/// Writes `out` unless `deadline` passes first: each write waits at most the time left, so a
/// scraper that reads a byte now and then cannot hold the one-at-a-time endpoint longer.
fn write_by(stream: &mut TcpStream, mut out: &[u8], deadline: Instant) {
    while !out.is_empty() {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return;
        };
        if stream
            .set_write_timeout(Some(left.max(Duration::from_millis(1))))
            .is_err()
        {
            return;
        }
        match stream.write(out) {
            Ok(0) | Err(_) => return,
            Ok(n) => out = &out[n..],
        }
    }
}

fn scrape(shared: &Shared) -> String {
    let health = shared
        .health
        .lock()
        .ok()
        .and_then(|h| h.as_ref().map(|f| f()))
        .map(|(stats, refusals)| {
            let (open_fds, resident_bytes) = process_figures();
            Health {
                stats,
                refusals,
                open_fds,
                resident_bytes,
            }
        });
    match shared.series.lock() {
        Ok(t) => exposition(&t, health.as_ref()),
        Err(_) => exposition(&Default::default(), health.as_ref()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read_strictly() {
        assert_eq!(
            parse(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Request::Metrics {
                head: false,
                openmetrics: false
            }
        );
        assert_eq!(
            parse(b"HEAD /metrics?x=1 HTTP/1.0\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n\r\n"),
            Request::Metrics {
                head: true,
                openmetrics: true
            }
        );
        assert_eq!(parse(b"GET / HTTP/1.1\r\n\r\n"), Request::NotFound);
        assert_eq!(parse(b"POST /metrics HTTP/1.1\r\n\r\n"), Request::BadMethod);
        assert_eq!(parse(b"GET /metrics\r\n\r\n"), Request::Malformed);
        assert_eq!(parse(b"\x16\x03\x01garbage"), Request::Malformed);
    }
}
