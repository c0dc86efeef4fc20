//! A progress bar on stderr for long operations (indicatif): bytes done of the total,
//! redrawn in place at most ten times a second, and only once the operation has run for
//! half a second (quick ones print nothing). Only when stderr is a terminal and not
//! `--quiet`; erased when the operation ends, however it ends.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressState, ProgressStyle};

use crate::text::human_size;

const FIRST_DRAW: Duration = Duration::from_millis(500);
const REDRAWS_PER_SECOND: u8 = 10;

/// "converting [=======>            ]  42%  1.2 GiB / 2.9 GiB  ETA 3s".
const TEMPLATE: &str = "{msg} [{bar:30}] {percent:>3}%  {done} / {total}  ETA {eta}";

pub struct Progress {
    bar: ProgressBar,
    /// When the bar should appear on stderr; `None` once it has (or if it never will).
    show_at: Option<Instant>,
}

impl Progress {
    /// A progress bar for `total` bytes, shown when stderr is a terminal and not `quiet`.
    pub fn new(label: &'static str, total: u64, quiet: bool) -> Progress {
        let enabled = !quiet && std::io::stderr().is_terminal();
        Progress {
            bar: bar(label, total, ProgressDrawTarget::hidden()),
            show_at: enabled.then(|| Instant::now() + FIRST_DRAW),
        }
    }

    /// Counts `bytes` more as done; the bar redraws itself when due.
    pub fn add(&mut self, bytes: u64) {
        self.bar.inc(bytes);
        if self.show_at.is_some_and(|at| Instant::now() >= at) {
            self.show_at = None;
            self.bar
                .set_draw_target(ProgressDrawTarget::stderr_with_hz(REDRAWS_PER_SECOND));
        }
    }

    /// Erases the bar, if it was drawn.
    pub fn clear(&mut self) {
        self.show_at = None;
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}

/// A bar for `total` bytes drawing to `target`, erased when finished or dropped.
fn bar(label: &'static str, total: u64, target: ProgressDrawTarget) -> ProgressBar {
    let size = |get: fn(&ProgressState) -> u64| {
        move |state: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&human_size(get(state)));
        }
    };
    let style = ProgressStyle::with_template(TEMPLATE)
        .expect("a valid template")
        .progress_chars("=> ")
        .with_key("done", size(|s| s.pos()))
        .with_key("total", size(|s| s.len().unwrap_or(0)));
    ProgressBar::with_draw_target(Some(total), target)
        .with_style(style)
        .with_message(label)
        .with_finish(ProgressFinish::AndClear)
}

#[cfg(test)]
mod tests {
    use super::*;
    use indicatif::TermLike;
    use std::fmt::Write as _;
    use std::sync::{Arc, Mutex};

    /// A terminal that records what is written to it.
    #[derive(Debug, Default, Clone)]
    struct Screen(Arc<Mutex<String>>);

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            100
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            let _ = writeln!(self.0.lock().unwrap(), "{s}");
            Ok(())
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push_str(s);
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            self.0.lock().unwrap().push_str("<clear>");
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_bar_shows_percent_and_sizes_and_is_erased() {
        let screen = Screen::default();
        let b = bar(
            "verifying",
            3 << 30,
            ProgressDrawTarget::term_like(Box::new(screen.clone())),
        );
        b.set_position(3 << 29);
        b.tick();
        let drawn = screen.0.lock().unwrap().clone();
        let line = drawn.rsplit("<clear>").next().unwrap();
        assert!(
            line.starts_with(
                "verifying [===============>              ]  50%  1.5 GiB / 3.0 GiB  ETA "
            ),
            "{drawn:?}"
        );
        drop(b);
        assert!(screen.0.lock().unwrap().ends_with("<clear>"), "erased");
    }

    #[test]
    fn nothing_is_drawn_when_quiet() {
        let mut p = Progress::new("x", 10, true);
        p.add(5);
        assert!(p.show_at.is_none());
        assert!(p.bar.is_hidden());
        assert_eq!(p.bar.position(), 5);
    }
}
