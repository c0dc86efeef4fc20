//! A progress line on stderr for long operations: bytes done of the total, redrawn in
//! place with '\r' at most every 100 ms, and only once the operation has run for half a
//! second (quick ones print nothing). Only when stderr is a terminal and not `--quiet`.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::text::human_size;

const FIRST_DRAW: Duration = Duration::from_millis(500);
const REDRAW: Duration = Duration::from_millis(100);

pub struct Progress {
    label: &'static str,
    total: u64,
    done: u64,
    enabled: bool,
    start: Instant,
    last_draw: Option<Instant>,
    drawn_width: usize,
}

impl Progress {
    /// A progress line for `total` bytes, shown when stderr is a terminal and not `quiet`.
    pub fn new(label: &'static str, total: u64, quiet: bool) -> Progress {
        Progress {
            label,
            total,
            done: 0,
            enabled: !quiet && std::io::stderr().is_terminal(),
            start: Instant::now(),
            last_draw: None,
            drawn_width: 0,
        }
    }

    /// Counts `bytes` more as done and redraws when due.
    pub fn add(&mut self, bytes: u64) {
        self.done = self.done.saturating_add(bytes);
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        let due = match self.last_draw {
            None => now.duration_since(self.start) >= FIRST_DRAW,
            Some(last) => now.duration_since(last) >= REDRAW,
        };
        if due {
            self.last_draw = Some(now);
            let line = render(self.label, self.done, self.total);
            let pad = self.drawn_width.saturating_sub(line.len());
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r{line}{}", " ".repeat(pad));
            let _ = err.flush();
            self.drawn_width = line.len();
        }
    }

    /// Erases the line, if one was drawn.
    pub fn clear(&mut self) {
        if self.drawn_width > 0 {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r{}\r", " ".repeat(self.drawn_width));
            let _ = err.flush();
            self.drawn_width = 0;
            self.last_draw = None;
            self.start = Instant::now();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}

/// "converting  42%  1.2 GiB / 2.9 GiB".
pub fn render(label: &str, done: u64, total: u64) -> String {
    let percent = if total == 0 {
        100
    } else {
        (done.min(total) as u128 * 100 / total as u128) as u64
    };
    format!(
        "{label} {percent:>3}%  {} / {}",
        human_size(done),
        human_size(total)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_shows_percent_and_sizes() {
        assert_eq!(
            render("verifying", 3 << 29, 3 << 30),
            "verifying  50%  1.5 GiB / 3.0 GiB"
        );
        assert_eq!(render("converting", 0, 0), "converting 100%  0 B / 0 B");
        assert_eq!(render("merging", 7, 10), "merging  70%  7 B / 10 B");
    }

    #[test]
    fn nothing_is_drawn_when_disabled() {
        let mut p = Progress::new("x", 10, true);
        p.add(5);
        assert_eq!(p.drawn_width, 0);
    }
}
