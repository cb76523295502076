//! Panic capture: `#[actix::test]` passes even when an actor panics (actix#494);
//! the kit records every panic on the test's thread so it can fail the test.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Once;

use tokio::sync::Notify;

thread_local! {
    static PANICS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    static PANICKED: Rc<Notify> = Rc::new(Notify::new());
}

static HOOK: Once = Once::new();

/// Installs (once per process) a panic hook that records every panic on the
/// thread it happens on, then runs the previous hook.
pub(crate) fn capture() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = PANICS.try_with(|p| p.borrow_mut().push(info.to_string()));
            let _ = PANICKED.try_with(|n| n.notify_waiters());
            previous(info);
        }));
    });
}

/// How many panics this thread has seen so far.
pub(crate) fn mark() -> usize {
    PANICS.with(|p| p.borrow().len())
}

/// The panics this thread has seen since `mark`.
pub(crate) fn since(mark: usize) -> Vec<String> {
    PANICS.with(|p| p.borrow().iter().skip(mark).cloned().collect())
}

/// Resolves once this thread has seen more than `mark` panics.
pub(crate) async fn after(mark: usize) {
    let notify = PANICKED.with(Rc::clone);
    loop {
        let next = notify.notified();
        if self::mark() > mark {
            return;
        }
        next.await;
    }
}
