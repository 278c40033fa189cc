//! Progress on stderr: a bar (count, rate, elapsed time, ETA) when stderr is a
//! terminal; in logs and pipes only the line that ends the work, so a captured
//! log holds one line per finished step rather than redraws.

use std::cell::Cell;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};

pub struct Progress {
    bar: ProgressBar,
    label: String,
    unit: &'static str,
    /// When the first update came and what it counted.
    first: Cell<Option<(Instant, usize)>>,
}

impl Progress {
    pub fn new(label: impl Into<String>, unit: &'static str, total: usize) -> Self {
        let label = label.into();
        // Dropped unfinished (an error on the way), the bar clears itself.
        let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr_with_hz(5))
            .with_finish(ProgressFinish::AndClear);
        let template =
            format!("{{prefix}} [{{bar:24}}] {{pos}}/{{len}} {unit}{{msg}}  {{per_sec}}  {{elapsed}}, ETA {{eta}}");
        bar.set_style(
            ProgressStyle::with_template(&template)
                .expect("a valid template")
                .progress_chars("#>-"),
        );
        bar.set_prefix(label.clone());
        Progress {
            bar,
            label,
            unit,
            first: Cell::new(None),
        }
    }

    /// Reports `done` items; `extra` (e.g. a loss) follows the counts.
    pub fn update(&self, done: usize, extra: &str) {
        if self.first.get().is_none() {
            self.first.set(Some((Instant::now(), done)));
        }
        self.bar.set_position(done as u64);
        self.bar.set_message(extra.to_string());
    }

    /// Clears the bar and prints `line` in its place.
    pub fn finish_with(&self, line: &str) {
        self.bar.finish_and_clear();
        eprintln!("{line}");
    }

    /// Clears the bar and prints the count and the time taken.
    pub fn finish(&self) {
        let line = self.count_and_time();
        self.finish_with(&line);
    }

    /// [`Self::finish`] with the rate after the first update (in inference,
    /// after the first batch: kernel compilation and file reading apart),
    /// where later updates came.
    pub fn finish_with_rate(&self) {
        let mut line = self.count_and_time();
        let total = self.bar.length().unwrap_or(0) as usize;
        if let Some((start, first)) = self.first.get().filter(|&(_, first)| first < total) {
            let rate = (total - first) as f64 / start.elapsed().as_secs_f64();
            line += &format!("; {rate:.1} {}/s after the first batch", self.unit);
        }
        self.finish_with(&line);
    }

    fn count_and_time(&self) -> String {
        let total = self.bar.length().unwrap_or(0);
        format!(
            "{}: {total}/{total} {} in {}",
            self.label,
            self.unit,
            clock(self.bar.elapsed())
        )
    }
}

/// `h:mm:ss`, or `m:ss` under an hour.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}
