//! A background thread of a mount that wakes after a wait, does one step, and stops
//! promptly when asked: the periodic checkpointer and the GC cleaner are two.
//!
//! [`Worker::stop`] (also on drop) wakes the thread and joins it, so no step runs once
//! it returns: the mount stops its workers before the unmount checkpoint.

use std::io;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// A running worker thread.
pub(crate) struct Worker {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts thread `name`: it sleeps `first_wait`, then runs `step`, which returns
    /// the next wait, or `None` to end the thread.
    pub(crate) fn start(
        name: &str,
        first_wait: Duration,
        mut step: impl FnMut() -> Option<Duration> + Send + 'static,
    ) -> io::Result<Worker> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new().name(name.into()).spawn(move || {
            let (stopped, wake) = &*flag;
            let mut wait = first_wait;
            loop {
                let guard = stopped.lock().unwrap_or_else(PoisonError::into_inner);
                let (guard, _) = wake
                    .wait_timeout_while(guard, wait, |stopped| !*stopped)
                    .unwrap_or_else(PoisonError::into_inner);
                if *guard {
                    return;
                }
                drop(guard);
                match step() {
                    Some(next) => wait = next,
                    None => return,
                }
            }
        })?;
        Ok(Worker {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops the thread and waits for it (for a step it is running to end).
    pub(crate) fn stop(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        let (flag, wake) = &*self.stop;
        *flag.lock().unwrap_or_else(PoisonError::into_inner) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            // A panic in the thread has already been printed; go on to unmount.
            let _ = thread.join();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}
