//! A one-line progress bar on stderr: count, rate, elapsed time and ETA,
//! redrawn at most a few times a second and finished with a newline.

use std::io::Write;
use std::time::{Duration, Instant};

pub struct Progress {
    label: String,
    unit: &'static str,
    started: Instant,
    last_draw: Option<Instant>,
}

impl Progress {
    pub fn new(label: impl Into<String>, unit: &'static str) -> Self {
        Progress {
            label: label.into(),
            unit,
            started: Instant::now(),
            last_draw: None,
        }
    }

    /// Reports `done` of `total`; `extra` (e.g. a loss) follows the counts.
    pub fn update(&mut self, done: usize, total: usize, extra: &str) {
        let now = Instant::now();
        let finished = done >= total;
        if !finished && self.last_draw.is_some_and(|t| now - t < Duration::from_millis(200)) {
            return;
        }
        self.last_draw = Some(now);
        let elapsed = now - self.started;
        let rate = done as f64 / elapsed.as_secs_f64().max(1e-9);
        // Too early for a rate: the first items say nothing yet.
        let settled = done > 0 && elapsed > Duration::from_millis(500);
        let (rate_text, eta) = if settled {
            (
                format!("{rate:.1}"),
                clock(Duration::from_secs_f64((total - done.min(total)) as f64 / rate)),
            )
        } else {
            ("?".to_string(), "?".to_string())
        };
        const WIDTH: usize = 24;
        let filled = (WIDTH * done).checked_div(total).unwrap_or(WIDTH).min(WIDTH);
        let bar = format!("{}{}", "#".repeat(filled), "-".repeat(WIDTH - filled));
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r{} [{bar}] {done}/{total} {}{extra}  {rate_text} {}/s  {} elapsed, ETA {eta}   ",
            self.label,
            self.unit,
            self.unit,
            clock(elapsed)
        );
        if finished {
            let _ = writeln!(err);
        }
        let _ = err.flush();
    }
}

/// `h:mm:ss`, or `m:ss` under an hour.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}
