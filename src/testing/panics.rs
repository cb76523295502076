//! Panic capture: `#[actix::test]` passes even when an actor panics (actix#494);
//! the kit records every panic in the log of the thread it happens on, so it
//! can fail the test.
//!
//! Each thread has a log of its own (tests run in parallel, each on its own
//! thread: one test's panics must not fail another). A thread that works for
//! a test elsewhere (a controller arbiter the harness started) forwards its
//! panics to that test's log ([`forward_to`]); a panic carried back from a
//! blocking pool thread is recorded where it lands ([`record_resumed`]).

use std::cell::RefCell;
use std::sync::{Arc, Mutex, Once};

use tokio::sync::Notify;

/// The panics one test has seen, and a wake-up for those waiting on the next.
#[derive(Default)]
pub(crate) struct PanicLog {
    panics: Mutex<Vec<String>>,
    panicked: Notify,
}

impl PanicLog {
    fn push(&self, panic: String) {
        self.panics.lock().unwrap_or_else(|e| e.into_inner()).push(panic);
        self.panicked.notify_waiters();
    }

    fn len(&self) -> usize {
        self.panics.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

thread_local! {
    /// This thread's own log.
    static OWN: Arc<PanicLog> = Arc::new(PanicLog::default());
    /// Where this thread's panics go instead, if it works for another thread.
    static FORWARD: RefCell<Option<Arc<PanicLog>>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// The log this thread's panics go to.
fn target() -> Option<Arc<PanicLog>> {
    let forward = FORWARD.try_with(|f| f.borrow().clone()).ok().flatten();
    forward.or_else(|| OWN.try_with(Arc::clone).ok())
}

/// Installs (once per process) a panic hook that records every panic in the
/// log of the thread it happens on, then runs the previous hook.
pub(crate) fn capture() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(log) = target() {
                log.push(info.to_string());
            }
            previous(info);
        }));
    });
}

/// This thread's own log (for [`forward_to`] on the threads working for it).
pub(crate) fn this_thread() -> Arc<PanicLog> {
    OWN.with(Arc::clone)
}

/// Sends the panics of the current thread to `log` from now on.
pub(crate) fn forward_to(log: Arc<PanicLog>) {
    FORWARD.with(|f| *f.borrow_mut() = Some(log));
}

/// Records a panic the hook did not see here: one raised on a blocking pool
/// thread and resumed on this one (`resume_unwind` runs no hook), by its
/// payload. Nothing is kept, or formatted, unless the kit captures panics
/// (outside tests, nobody reads the logs).
pub(crate) fn record_resumed(payload: &(dyn std::any::Any + Send)) {
    if !HOOK.is_completed() {
        return;
    }
    if let Some(log) = target() {
        let message = crate::controller::host::panic_message(payload);
        log.push(format!("on a blocking pool thread: {message}"));
    }
}

/// How many panics this thread's log holds so far.
pub(crate) fn mark() -> usize {
    OWN.with(|log| log.len())
}

/// The panics this thread's log has seen since `mark`.
pub(crate) fn since(mark: usize) -> Vec<String> {
    OWN.with(|log| {
        log.panics.lock().unwrap_or_else(|e| e.into_inner()).iter().skip(mark).cloned().collect()
    })
}

/// Resolves once this thread's log holds more than `mark` panics.
pub(crate) async fn after(mark: usize) {
    let log = this_thread();
    loop {
        let next = log.panicked.notified();
        let mut next = std::pin::pin!(next);
        // Registered before the check: a panic between the two still wakes it.
        next.as_mut().enable();
        if log.len() > mark {
            return;
        }
        next.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forwarding_thread_records_its_panics_in_the_test_threads_log() {
        capture();
        let mark = mark();
        let log = this_thread();
        std::thread::spawn(move || {
            forward_to(log);
            let _ = std::panic::catch_unwind(|| panic!("on the arbiter"));
        })
        .join()
        .unwrap();
        // A thread that does not forward keeps its panics to itself.
        std::thread::spawn(|| {
            let _ = std::panic::catch_unwind(|| panic!("elsewhere"));
        })
        .join()
        .unwrap();
        let seen = since(mark);
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(seen[0].contains("on the arbiter"), "{seen:?}");
        record_resumed(&"resumed here");
        assert_eq!(since(mark).len(), 2);
    }
}
