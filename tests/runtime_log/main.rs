//! What `runtime.settled()` logs when it waits without progress, read through
//! a `log` logger. A process of its own: a logger is set once per process,
//! the test counts every such warning the process logs, and tracing's `log`
//! fallback stays on only while no test of the process sets a subscriber.

mod settled_patience;
