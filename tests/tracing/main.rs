//! Tracing for `log` users: without a subscriber, every line reaches a `log`
//! logger. A process of its own: a logger is set once per process, the test
//! reads every line the process logs, and tracing's `log` fallback stays on
//! only while no test of the process sets a subscriber. The spans a
//! subscriber sees are checked in `tracing_spans`.

mod log_bridge;
