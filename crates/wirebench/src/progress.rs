//! A progress bar for a command that runs a while without live output (a test with `-i 0`,
//! or repeated with `--iterations`): shown only on a terminal with human output, advanced by
//! the clock over the time the command is expected to take, cleared when it ends.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Commands expected to take less than this show no bar.
pub const MIN_DURATION: Duration = Duration::from_secs(3);

/// A clock-driven bar; cleared on drop.
pub struct TimeBar {
    bar: ProgressBar,
    stop: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl TimeBar {
    /// A bar over `expected` if stdout is a terminal, the output is for a person and the
    /// command takes at least [`MIN_DURATION`]; `None` otherwise.
    pub fn start(expected: Duration, human: bool, what: &str) -> Option<TimeBar> {
        if !human || expected < MIN_DURATION || !std::io::stdout().is_terminal() {
            return None;
        }
        let total_ms = expected.as_millis() as u64;
        let bar = ProgressBar::new(total_ms);
        if let Ok(style) = ProgressStyle::with_template(&format!(
            "{{bar:30}} {what}: {{elapsed}} of about {:.0} s",
            expected.as_secs_f64()
        )) {
            bar.set_style(style);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (b, s) = (bar.clone(), Arc::clone(&stop));
        let t0 = Instant::now();
        let ticker = std::thread::Builder::new()
            .name("wb-progress".into())
            .spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    b.set_position((t0.elapsed().as_millis() as u64).min(total_ms));
                    std::thread::sleep(Duration::from_millis(200));
                }
            })
            .ok();
        Some(TimeBar { bar, stop, ticker })
    }
}

impl Drop for TimeBar {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        self.bar.finish_and_clear();
    }
}
