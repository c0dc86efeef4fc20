//! The memory a load holds besides its destinations, counted against
//! `LoaderOptions::max_bytes_in_flight`: the staging buffers (held for the loader's life),
//! the tasks' scratch (a chunk's source bytes to convert or gather), the aligned buffers of
//! direct reads, and components that can only be decoded whole. A task that needs memory
//! waits until enough is free (backpressure) instead of allocating past the budget; a need
//! larger than the whole budget is a `Limit` error naming the option.
//!
//! No deadlock: a task waits for memory only while it holds none (it gives its scratch
//! back before asking for more), so whoever holds memory is running and gives it back.

use std::sync::{Condvar, Mutex};

use crate::error::{Result, bail};

/// The budget of one loader: `limit` bytes, of which `fixed` (the staging buffers) are
/// held for good.
pub(crate) struct Budget {
    limit: u64,
    fixed: u64,
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Default)]
struct State {
    /// Bytes granted and not given back (besides `fixed`).
    held: u64,
    /// The most held at once since the last `take_peak`.
    peak: u64,
}

/// Bytes taken from a budget, given back when dropped.
pub(crate) struct Grant<'b> {
    budget: &'b Budget,
    bytes: u64,
}

impl Budget {
    /// A budget of `limit` bytes, `fixed` of them held for good.
    pub(crate) fn new(limit: u64, fixed: u64) -> Budget {
        Budget {
            limit,
            fixed,
            state: Mutex::new(State::default()),
            freed: Condvar::new(),
        }
    }

    /// What may be granted at once: the budget less what is held for good.
    pub(crate) fn available(&self) -> u64 {
        self.limit - self.fixed
    }

    /// `bytes` for `what`, waiting until they are free. `Limit` when they are more than the
    /// budget can ever grant.
    pub(crate) fn take(&self, bytes: u64, what: &str) -> Result<Grant<'_>> {
        if bytes > self.available() {
            bail!(
                Limit,
                "{what} needs {bytes} bytes at once, more than the {} bytes the load may hold \
                 (max_bytes_in_flight {}{}); raise max_bytes_in_flight",
                self.available(),
                self.limit,
                if self.fixed > 0 {
                    format!(", less {} of staging buffers", self.fixed)
                } else {
                    String::new()
                }
            );
        }
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while s.held + bytes > self.available() {
            s = self.freed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        s.held += bytes;
        s.peak = s.peak.max(s.held);
        Ok(Grant {
            budget: self,
            bytes,
        })
    }

    /// The most bytes held at once (the staging buffers included) since the last call;
    /// starts counting again from what is held now.
    pub(crate) fn take_peak(&self) -> u64 {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let peak = s.peak;
        s.peak = s.held;
        self.fixed + peak
    }

    fn give_back(&self, bytes: u64) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.held -= bytes;
        drop(s);
        self.freed.notify_all();
    }
}

impl<'b> Grant<'b> {
    /// The bytes granted.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Moves `bytes` of this grant (at most all of it) into a grant of their own.
    pub(crate) fn split(&mut self, bytes: u64) -> Grant<'b> {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        Grant {
            budget: self.budget,
            bytes,
        }
    }
}

impl Drop for Grant<'_> {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.budget.give_back(self.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takers_wait_for_what_others_give_back_and_the_peak_counts_staging() {
        let b = Budget::new(100, 20);
        assert_eq!(b.available(), 80);
        let e = b.take(81, "a component decoded whole").err().unwrap();
        assert_eq!(e.kind(), crate::error::ErrorKind::Limit);
        assert!(e.message().contains("max_bytes_in_flight"), "{e}");
        let first = b.take(60, "scratch").unwrap();
        let waited = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let g = b.take(40, "scratch").unwrap();
                assert!(waited.load(std::sync::atomic::Ordering::SeqCst));
                assert_eq!(g.bytes(), 40);
            });
            std::thread::sleep(std::time::Duration::from_millis(50));
            waited.store(true, std::sync::atomic::Ordering::SeqCst);
            drop(first);
        });
        assert_eq!(b.take_peak(), 80);
        assert_eq!(b.take_peak(), 20);
    }
}
