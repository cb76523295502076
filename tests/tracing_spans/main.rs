//! A reconcile's tracing span: its controller, object, reason and result,
//! seen by a subscriber scoped to the test's thread.
//!
//! A process of its own: tracing caches whether each callsite is enabled
//! for the whole process, and a test on another thread that reaches a
//! callsite while this one's subscriber is being registered can leave it
//! disabled (the spans then never reach the subscriber).

#[path = "../common/mod.rs"]
mod common;

mod spans;
