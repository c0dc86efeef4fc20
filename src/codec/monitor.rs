//! A mutex and a condition variable over one value, made of pthread's, for the frame
//! pipeline of `FrameEncoder::compress`. std's `Mutex` and `Condvar` are atomics and raw
//! futex calls, which valgrind's thread checkers don't model: helgrind and DRD saw no
//! happens-before edge in them and reported every frame a worker handed to the thread
//! that writes it as a race (95 and 62 reports). pthread's mutex and condition variable
//! they model, so the pipeline's synchronisation is checked by them instead of being
//! suppressed. Nothing else differs: lock, wait (which may wake spuriously: callers loop
//! on their condition), notify all (with the lock held).

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};

/// The pthread objects, boxed so that they never move once used.
struct Raw {
    mutex: UnsafeCell<libc::pthread_mutex_t>,
    cond: UnsafeCell<libc::pthread_cond_t>,
}

/// A value guarded by a pthread mutex, with a condition variable to wait on.
pub(crate) struct Monitor<T> {
    raw: Box<Raw>,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through a guard, which holds the mutex.
unsafe impl<T: Send> Sync for Monitor<T> {}
// SAFETY: as for `std::sync::Mutex<T>`: the value moves with the monitor.
unsafe impl<T: Send> Send for Monitor<T> {}

/// The monitor's value while its mutex is held; dropping it unlocks.
pub(crate) struct Guard<'m, T> {
    monitor: &'m Monitor<T>,
}

impl<T> Monitor<T> {
    pub(crate) fn new(value: T) -> Monitor<T> {
        Monitor {
            raw: Box::new(Raw {
                mutex: UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER),
                cond: UnsafeCell::new(libc::PTHREAD_COND_INITIALIZER),
            }),
            value: UnsafeCell::new(value),
        }
    }

    /// Waits for the mutex.
    pub(crate) fn lock(&self) -> Guard<'_, T> {
        // SAFETY: an initialised mutex that never moves; unlocked by the guard's drop.
        let rc = unsafe { libc::pthread_mutex_lock(self.raw.mutex.get()) };
        assert_eq!(rc, 0, "pthread_mutex_lock");
        Guard { monitor: self }
    }
}

impl<T> Drop for Monitor<T> {
    fn drop(&mut self) {
        // SAFETY: nobody holds or waits on them: the monitor is dropped (`&mut self`).
        unsafe {
            libc::pthread_cond_destroy(self.raw.cond.get());
            libc::pthread_mutex_destroy(self.raw.mutex.get());
        }
    }
}

impl<'m, T> Guard<'m, T> {
    /// Wakes every thread waiting in `wait`, with the mutex held (they run once it is
    /// unlocked; helgrind calls a signal without the lock dubious).
    pub(crate) fn notify_all(&self) {
        // SAFETY: an initialised condition variable that never moves.
        let rc = unsafe { libc::pthread_cond_broadcast(self.monitor.raw.cond.get()) };
        assert_eq!(rc, 0, "pthread_cond_broadcast");
    }

    /// Unlocks, waits for `notify_all` (or a spurious wake-up), locks again.
    pub(crate) fn wait(self) -> Guard<'m, T> {
        let raw = &self.monitor.raw;
        // SAFETY: this thread holds the mutex (the guard); both objects never move.
        let rc = unsafe { libc::pthread_cond_wait(raw.cond.get(), raw.mutex.get()) };
        assert_eq!(rc, 0, "pthread_cond_wait");
        self
    }
}

impl<T> Deref for Guard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the mutex.
        unsafe { &*self.monitor.value.get() }
    }
}

impl<T> DerefMut for Guard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the mutex, and `&mut self` makes this the only reference.
        unsafe { &mut *self.monitor.value.get() }
    }
}

impl<T> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: this thread locked it (the guard exists only while it does).
        let rc = unsafe { libc::pthread_mutex_unlock(self.monitor.raw.mutex.get()) };
        debug_assert_eq!(rc, 0, "pthread_mutex_unlock");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads handing a counter around in turn: each waits for its number, adds one,
    /// wakes the others. Every value is seen once, in order.
    #[test]
    fn threads_take_turns_through_the_monitor() {
        let m = Monitor::new((0usize, Vec::new()));
        let threads = 4;
        std::thread::scope(|s| {
            for t in 0..threads {
                let m = &m;
                s.spawn(move || {
                    for round in 0..50 {
                        let turn = round * threads + t;
                        let mut g = m.lock();
                        while g.0 != turn {
                            g = g.wait();
                        }
                        g.1.push(turn);
                        g.0 += 1;
                        g.notify_all();
                    }
                });
            }
        });
        let g = m.lock();
        assert_eq!(g.0, 200);
        assert_eq!(g.1, (0..200).collect::<Vec<_>>());
    }
}
