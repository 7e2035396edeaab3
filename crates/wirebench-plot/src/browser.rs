//! Headless Chromium as a checker for generated pages: screenshot a page, collect what it
//! logged to the console, and (feature `png-check`, on by default) measure how much of the
//! screenshot is drawn.
//!
//! Chromium 156 (Debian) writes console messages of every level to its stderr log as
//! `[…:INFO:CONSOLE:<line>] "<message>", source: <url> (<line>)` when started with
//! `--enable-logging=stderr --v=0`; the level of the message is not shown. Reports contain no
//! script, so any console message is a finding (a Content-Security-Policy violation from a
//! forbidden load shows up there too).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Why a browser check could not be run.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// No Chromium binary was found.
    #[error(
        "headless Chromium not found (tried {tried}); install Debian's `chromium` package or set \
         WIREBENCH_CHROMIUM to the binary"
    )]
    NotFound {
        /// Paths tried, comma-separated.
        tried: String,
    },
    /// Spawning or talking to the browser failed.
    #[error("running {binary}: {source}")]
    Io {
        /// The binary.
        binary: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The browser did not finish in time (it was killed).
    #[error("chromium did not finish within {secs} s on {page} (killed)")]
    TimedOut {
        /// Time limit.
        secs: u64,
        /// The page.
        page: String,
    },
    /// The browser exited with an error status.
    #[error("chromium exited with {status} on {page}; stderr tail: {stderr_tail}")]
    Failed {
        /// Exit status.
        status: String,
        /// The page.
        page: String,
        /// Last lines of its stderr.
        stderr_tail: String,
    },
    /// The browser exited but wrote no screenshot.
    #[error("chromium wrote no screenshot to {png}; stderr tail: {stderr_tail}")]
    NoScreenshot {
        /// Expected screenshot path.
        png: String,
        /// Last lines of its stderr.
        stderr_tail: String,
    },
    /// The screenshot could not be decoded.
    #[error("decoding screenshot {png}: {reason}")]
    Decode {
        /// The screenshot.
        png: String,
        /// Decoder message.
        reason: String,
    },
}

/// A located Chromium binary and how to run it.
#[derive(Clone, Debug)]
pub struct Chromium {
    /// The binary.
    pub binary: PathBuf,
    /// Window size in CSS pixels (the screenshot size).
    pub window_px: (u32, u32),
    /// Time limit of one run.
    pub timeout: Duration,
}

/// What one page load produced.
#[derive(Clone, Debug)]
pub struct PageRun {
    /// Where the screenshot was written.
    pub png: PathBuf,
    /// Console messages the page logged (any level), in order.
    pub console: Vec<String>,
    /// Chromium's whole stderr (noise from D-Bus etc. included).
    pub stderr: String,
    /// Wall time of the run.
    pub elapsed: Duration,
}

const CANDIDATES: [&str; 3] = [
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
];

static RUN: AtomicU64 = AtomicU64::new(0);

impl Chromium {
    /// Finds Chromium: `$WIREBENCH_CHROMIUM` if set (and then only that), else Debian's
    /// `/usr/bin/chromium` (or `chromium-browser`, `google-chrome`). Window 1000×1400, time
    /// limit 60 s.
    pub fn find() -> Result<Chromium, BrowserError> {
        let mut tried = vec![];
        // An explicit choice is the only candidate: no silent fallback to another browser.
        let candidates: Vec<PathBuf> = match std::env::var_os("WIREBENCH_CHROMIUM") {
            Some(p) => vec![PathBuf::from(p)],
            None => CANDIDATES.iter().map(PathBuf::from).collect(),
        };
        for p in candidates {
            if p.is_file() {
                return Ok(Chromium {
                    binary: p,
                    window_px: (1000, 1400),
                    timeout: Duration::from_secs(60),
                });
            }
            tried.push(p.display().to_string());
        }
        Err(BrowserError::NotFound {
            tried: tried.join(", "),
        })
    }

    /// The same browser with another window size.
    pub fn with_window(mut self, width_px: u32, height_px: u32) -> Chromium {
        self.window_px = (width_px, height_px);
        self
    }

    /// Loads `page` (a local file) headless, writes a screenshot to `png` and returns the
    /// console messages. Uses a fresh profile directory, no network features, no GPU; kills
    /// its own process group when the time limit passes.
    pub fn screenshot(&self, page: &Path, png: &Path) -> Result<PageRun, BrowserError> {
        let io = |source| BrowserError::Io {
            binary: self.binary.display().to_string(),
            source,
        };
        let page_abs = std::fs::canonicalize(page).map_err(io)?;
        let url = file_url(&page_abs);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let work = std::env::temp_dir().join(format!(
            "wirebench-chromium-{}-{}-{}",
            std::process::id(),
            RUN.fetch_add(1, Ordering::Relaxed),
            nanos
        ));
        std::fs::create_dir_all(&work).map_err(io)?;
        let result = self.run(&work, &url, png, &page_abs);
        let _ = std::fs::remove_dir_all(&work);
        result
    }

    fn run(
        &self,
        work: &Path,
        url: &str,
        png: &Path,
        page: &Path,
    ) -> Result<PageRun, BrowserError> {
        use std::os::unix::process::CommandExt as _;
        let io = |source| BrowserError::Io {
            binary: self.binary.display().to_string(),
            source,
        };
        if png.exists() {
            std::fs::remove_file(png).map_err(io)?;
        }
        let err_path = work.join("stderr.log");
        let err_file = std::fs::File::create(&err_path).map_err(io)?;
        let start = Instant::now();
        let mut child = Command::new(&self.binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--enable-logging=stderr",
                "--v=0",
            ])
            .arg(format!(
                "--user-data-dir={}",
                work.join("profile").display()
            ))
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!(
                "--window-size={},{}",
                self.window_px.0, self.window_px.1
            ))
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err_file)
            .process_group(0)
            .spawn()
            .map_err(io)?;
        let status = loop {
            if let Some(s) = child.try_wait().map_err(io)? {
                break s;
            }
            if start.elapsed() > self.timeout {
                // The browser leads its own process group: end that group, by its id.
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .status();
                let _ = child.kill();
                let _ = child.wait();
                return Err(BrowserError::TimedOut {
                    secs: self.timeout.as_secs(),
                    page: page.display().to_string(),
                });
            }
            std::thread::sleep(Duration::from_millis(25));
        };
        end_group(child.id());
        let mut stderr = String::new();
        if let Ok(mut f) = std::fs::File::open(&err_path) {
            let mut bytes = vec![];
            let _ = f.read_to_end(&mut bytes);
            stderr = String::from_utf8_lossy(&bytes).into_owned();
        }
        if !status.success() {
            return Err(BrowserError::Failed {
                status: status.to_string(),
                page: page.display().to_string(),
                stderr_tail: tail(&stderr),
            });
        }
        if !png.is_file() {
            return Err(BrowserError::NoScreenshot {
                png: png.display().to_string(),
                stderr_tail: tail(&stderr),
            });
        }
        Ok(PageRun {
            png: png.to_path_buf(),
            console: console_messages(&stderr),
            stderr,
            elapsed: start.elapsed(),
        })
    }
}

/// Ends what is left of the browser's process group `pgid` once its first process exited
/// (zygote, renderer and utility processes linger for about a second, busy): TERM, then KILL
/// after 2 s, and returns when the group is gone (at most 5 s), so that a caller's next step
/// (a measurement) does not share the CPUs with a browser shutting down.
fn end_group(pgid: u32) {
    let group = format!("-{pgid}");
    let alive = || {
        Command::new("kill")
            .args(["-0", "--", &group])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let start = Instant::now();
    let mut signal = "-TERM";
    while alive() && start.elapsed() < Duration::from_secs(5) {
        let _ = Command::new("kill")
            .args([signal, "--", &group])
            .stderr(Stdio::null())
            .status();
        if start.elapsed() > Duration::from_secs(2) {
            signal = "-KILL";
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Chromium {
    /// Rasterises a figure to PNG (the cheap PNG path: plotters' bitmap backend would need a
    /// font engine and font files). Writes a one-figure page next to `png` (same name,
    /// `.html`), screenshots it at the figure's size and returns the run.
    pub fn svg_to_png(&self, svg: &crate::Svg, png: &Path) -> Result<PageRun, BrowserError> {
        let (w, h) = svg.size_px().unwrap_or((800, 480));
        let page = png.with_extension("html");
        let html = format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"/><title>figure</title>\
             <style>html,body{{margin:0;background:#fff}}svg{{display:block}}</style></head>\
             <body>{}</body></html>",
            svg.inline_html()
        );
        std::fs::write(&page, html).map_err(|source| BrowserError::Io {
            binary: self.binary.display().to_string(),
            source,
        })?;
        self.clone().with_window(w, h).screenshot(&page, png)
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.contains("dbus")).collect();
    lines[lines.len().saturating_sub(6)..].join(" | ")
}

/// `file://` URL of an absolute path, percent-encoding what a URL path cannot hold.
pub fn file_url(path: &Path) -> String {
    let mut url = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            url.push(char::from(b));
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

/// Console messages in a Chromium stderr log (`…:CONSOLE:<n>] "<message>", source: …`).
pub fn console_messages(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(|l| match l.find("] ") {
            Some(i) => l[i + 2..].to_string(),
            None => l.to_string(),
        })
        .collect()
}

/// How much of a screenshot is drawn.
#[cfg(feature = "png-check")]
#[derive(Clone, Copy, Debug)]
pub struct Ink {
    /// Image width.
    pub width_px: u32,
    /// Image height.
    pub height_px: u32,
    /// The most frequent colour, taken as background.
    pub background_rgb: (u8, u8, u8),
    /// Fraction of pixels differing from the background by more than 24 in some channel.
    pub fraction: f64,
}

/// Decodes a PNG and measures its [`Ink`].
#[cfg(feature = "png-check")]
pub fn ink(png_path: &Path) -> Result<Ink, BrowserError> {
    let dec = |reason: String| BrowserError::Decode {
        png: png_path.display().to_string(),
        reason,
    };
    let file = std::fs::File::open(png_path).map_err(|e| dec(e.to_string()))?;
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(|e| dec(e.to_string()))?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| dec("image too large".into()))?;
    let mut buf = vec![0; size];
    let info = reader
        .next_frame(&mut buf)
        .map_err(|e| dec(e.to_string()))?;
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        png::ColorType::Grayscale => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Indexed => return Err(dec("indexed colour after expansion".into())),
    };
    let px: Vec<(u8, u8, u8)> = buf[..info.buffer_size()]
        .chunks_exact(channels)
        .map(|c| match channels {
            1 | 2 => (c[0], c[0], c[0]),
            _ => (c[0], c[1], c[2]),
        })
        .collect();
    if px.is_empty() {
        return Err(dec("no pixels".into()));
    }
    let mut counts = std::collections::HashMap::new();
    for p in &px {
        *counts.entry(*p).or_insert(0u64) += 1;
    }
    let bg = counts
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .map(|(c, _)| c)
        .unwrap_or((255, 255, 255));
    let differs = |p: &(u8, u8, u8)| {
        p.0.abs_diff(bg.0) > 24 || p.1.abs_diff(bg.1) > 24 || p.2.abs_diff(bg.2) > 24
    };
    let inked = px.iter().filter(|p| differs(p)).count();
    Ok(Ink {
        width_px: info.width,
        height_px: info.height,
        background_rgb: bg,
        fraction: inked as f64 / px.len() as f64,
    })
}

/// Result of [`check_page`].
#[cfg(feature = "png-check")]
#[derive(Clone, Debug)]
pub struct PageCheck {
    /// The browser run.
    pub run: PageRun,
    /// How much of the screenshot is drawn.
    pub ink: Ink,
}

#[cfg(feature = "png-check")]
impl PageCheck {
    /// Problems found: console messages, and a screenshot with less than `min_ink` of its
    /// pixels drawn. Empty when the page looks fine.
    pub fn problems(&self, min_ink: f64) -> Vec<String> {
        let mut p: Vec<String> = self
            .run
            .console
            .iter()
            .map(|m| format!("console: {m}"))
            .collect();
        if self.ink.fraction < min_ink {
            p.push(format!(
                "screenshot {} is nearly blank: {:.2} % of pixels drawn (need {:.2} %)",
                self.run.png.display(),
                self.ink.fraction * 100.0,
                min_ink * 100.0
            ));
        }
        p
    }
}

/// Screenshots `page` with `browser` into `png` and measures the result.
#[cfg(feature = "png-check")]
pub fn check_page(browser: &Chromium, page: &Path, png: &Path) -> Result<PageCheck, BrowserError> {
    let run = browser.screenshot(page, png)?;
    let ink = ink(png)?;
    Ok(PageCheck { run, ink })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_console_lines_of_chromium_156() {
        let log = "[1:2:1124/115344.2:ERROR:dbus/bus.cc:405] Failed to connect\n\
                   [1:1:1124/115344.5:INFO:CONSOLE:1] \"boom\", source: file:///t.html (1)\n";
        assert_eq!(
            console_messages(log),
            vec!["\"boom\", source: file:///t.html (1)".to_string()]
        );
    }

    #[test]
    fn file_urls_are_percent_encoded() {
        assert_eq!(
            file_url(Path::new("/tmp/a b#c.html")),
            "file:///tmp/a%20b%23c.html"
        );
    }
}
