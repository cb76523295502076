//! An etcd state when etcd is not there: unreachable at open, killed mid-run
//! and restarted on the same data directory.
//!
//! Opening fails with a typed [`StorageFailure::Unavailable`] within the
//! connect timeout. While etcd is down, writes fail with the same typed
//! error, bounded by the request timeout; reads still come from the cache.
//! When etcd is back, the **same** `State` (no reopen) writes again, a watch
//! that was open before the outage converges to the true state (changes
//! another client made right after the restart included), and every write
//! acknowledged before the kill is still there.
//!
//! Every wait has a deadline and waits on a reply or a watch event, never on
//! a clock.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{Read, Write as _};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use cosi_runtime::StorageFailure;
use cosi_runtime::prelude::*;
use cosi_runtime::state::etcd::etcd_revision;
use cosi_runtime::state::{EtcdConfig, WatchOptions, WatchStream};
use cosi_runtime::testing::conformance::{IntSpec, NS};
use cosi_runtime::testing::etcd::TestEtcd;
use futures::StreamExt;
use futures::channel::mpsc::unbounded;

/// The request timeout of [`TestEtcd::config`].
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// What a failing write may take beyond the request timeout before the test
/// calls it a hang (scheduling on a busy machine).
const GRACE: Duration = Duration::from_secs(3);
/// How long a watch event or a reply may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(60);

fn ptr(id: &str) -> Pointer {
    Pointer::typed::<IntSpec>(NS, id).erase()
}

fn kind() -> Kind {
    Kind::of::<IntSpec>(NS)
}

fn int(id: &str, v: i64) -> Resource<IntSpec> {
    Resource::new(NS, id, IntSpec(v))
}

fn value(r: &AnyResource) -> i64 {
    r.typed::<IntSpec>().expect("an IntSpec").spec().0
}

fn unique_prefix(test: &str) -> String {
    format!("{test}-{:08x}", fastrand::u32(..))
}

fn block_on<F: std::future::Future<Output = ()>>(test: F) {
    actix::System::new().block_on(test);
}

async fn open(config: EtcdConfig) -> State {
    State::builder().etcd(config).open().await.expect("open the etcd state")
}

/// id → value, as a list of the kind reads it.
async fn contents(state: &State) -> BTreeMap<String, i64> {
    let all = state.list(&kind(), &LabelQuery::all()).await.expect("list");
    all.iter().map(|r| (r.id().to_owned(), value(r))).collect()
}

/// A watch's view of the kind: applies each event, as a watcher keeps a copy.
struct View {
    watch: WatchStream,
    seen: BTreeMap<String, i64>,
}

impl View {
    /// Watches the kind from its bootstrap.
    async fn open(state: &State) -> View {
        let watch = state
            .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::bootstrap())
            .await
            .expect("watch");
        let mut view = View { watch, seen: BTreeMap::new() };
        while !matches!(view.next().await, Event::Bootstrapped(_)) {}
        view
    }

    /// Takes one event and applies it.
    async fn next(&mut self) -> Event {
        let event = match tokio::time::timeout(DEADLINE, self.watch.next()).await {
            Ok(Some(event)) => event,
            Ok(None) => panic!("the watch ended"),
            Err(_) => panic!("no watch event within {DEADLINE:?}; the view is {:?}", self.seen),
        };
        match &event {
            Event::Created(r) | Event::Updated { new: r, .. } => {
                self.seen.insert(r.id().to_owned(), value(r));
            }
            Event::Destroyed(r) => {
                self.seen.remove(r.id());
            }
            Event::Bootstrapped(_) => {}
        }
        event
    }

    /// Takes events until the view is `expected`.
    async fn converge_to(&mut self, expected: &BTreeMap<String, i64>) {
        while &self.seen != expected {
            self.next().await;
        }
    }
}

/// Runs a write that must fail because etcd is down: a typed
/// [`StorageFailure::Unavailable`], within the request timeout (plus grace
/// for a busy machine), never a hang.
async fn fails_unavailable<T: std::fmt::Debug>(
    what: &str,
    write: impl std::future::Future<Output = Result<T, Error>>,
) {
    let started = Instant::now();
    let Ok(result) = tokio::time::timeout(REQUEST_TIMEOUT + GRACE, write).await else {
        panic!("{what} hung for more than {:?} while etcd was down", REQUEST_TIMEOUT + GRACE);
    };
    let err = result.expect_err("a write while etcd is down fails");
    assert_eq!(err.storage_failure(), Some(StorageFailure::Unavailable), "{what}: {err}");
    eprintln!("{what} failed in {:?}: {err}", started.elapsed());
}

/// A loopback port nobody listens on.
fn closed_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a loopback port");
    listener.local_addr().expect("a local address").port()
}

/// A TCP proxy in front of etcd that can stop passing bytes on (a stuck
/// etcd, or a network partition that drops nothing and answers nothing).
struct Proxy {
    port: u16,
    frozen: Arc<(Mutex<bool>, Condvar)>,
    /// Bytes passed on from etcd to the client so far.
    down: Arc<AtomicU64>,
}

impl Proxy {
    /// Forwards every connection on a free loopback port to `upstream`.
    fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a loopback port");
        let port = listener.local_addr().expect("a local address").port();
        let frozen = Arc::new((Mutex::new(false), Condvar::new()));
        let down = Arc::new(AtomicU64::new(0));
        let (gate, counted) = (frozen.clone(), down.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(server) = TcpStream::connect((Ipv4Addr::LOCALHOST, upstream)) else {
                    continue;
                };
                let (c, s) =
                    (client.try_clone().expect("clone"), server.try_clone().expect("clone"));
                let (g1, g2, counted) = (gate.clone(), gate.clone(), counted.clone());
                std::thread::spawn(move || pump(client, server, &g1, None));
                std::thread::spawn(move || pump(s, c, &g2, Some(&counted)));
            }
        });
        Proxy { port, frozen, down }
    }

    /// Bytes passed on from etcd to the client so far.
    fn down(&self) -> u64 {
        self.down.load(Ordering::SeqCst)
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Holds every byte from now on, in both directions (the connections stay open).
    fn freeze(&self) {
        *self.frozen.0.lock().expect("the gate") = true;
    }

    /// Passes the held bytes on, and everything after them.
    fn thaw(&self) {
        *self.frozen.0.lock().expect("the gate") = false;
        self.frozen.1.notify_all();
    }
}

/// Copies `from` to `to`, holding each chunk while the gate is frozen, and
/// counting the bytes passed on in `count`.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    gate: &(Mutex<bool>, Condvar),
    count: Option<&AtomicU64>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let frozen = gate.0.lock().expect("the gate");
        drop(gate.1.wait_while(frozen, |frozen| *frozen).expect("the gate"));
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
        if let Some(count) = count {
            count.fetch_add(n as u64, Ordering::SeqCst);
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// Nobody listens at the endpoint: `open` fails with a typed
/// `Unavailable`, within the connect timeout (the request timeout, much
/// longer, does not bound it).
#[test]
fn open_fails_unavailable_within_the_connect_timeout_when_nobody_listens() {
    let connect = Duration::from_secs(1);
    let config = EtcdConfig::new([format!("http://127.0.0.1:{}", closed_port())])
        .prefix(unique_prefix("closed"))
        .connect_timeout(connect)
        .request_timeout(Duration::from_secs(60));
    block_on(async move {
        let started = Instant::now();
        let err = State::builder().etcd(config).open().await.expect_err("nothing to connect to");
        let took = started.elapsed();
        assert_eq!(err.storage_failure(), Some(StorageFailure::Unavailable), "{err}");
        assert!(took < connect + GRACE, "open gave up after {took:?}, connect timeout {connect:?}");
        eprintln!("open failed in {took:?}: {err}");
    });
}

/// Something accepts connections at the endpoint but never answers (a
/// stuck server, a black hole): `open` still fails with a typed
/// `Unavailable` within the connect timeout.
#[test]
fn open_fails_unavailable_within_the_connect_timeout_when_etcd_does_not_answer() {
    // Bound, never accepted: the kernel completes the handshakes, nothing answers.
    let silent = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a loopback port");
    let port = silent.local_addr().expect("a local address").port();
    let connect = Duration::from_secs(1);
    let config = EtcdConfig::new([format!("http://127.0.0.1:{port}")])
        .prefix(unique_prefix("silent"))
        .connect_timeout(connect)
        .request_timeout(Duration::from_secs(60));
    block_on(async move {
        let started = Instant::now();
        let err = State::builder().etcd(config).open().await.expect_err("nobody answers");
        let took = started.elapsed();
        assert_eq!(err.storage_failure(), Some(StorageFailure::Unavailable), "{err}");
        assert!(took < connect + GRACE, "open gave up after {took:?}, connect timeout {connect:?}");
        eprintln!("open failed in {took:?}: {err}");
    });
    drop(silent);
}

/// etcd is killed: every kind of write fails with a typed `Unavailable`
/// within the request timeout while reads still answer from the cache; etcd
/// restarts on the same data: the same `State` writes again, and what was
/// acknowledged before the kill is all there.
#[test]
fn writes_fail_unavailable_during_an_outage_and_succeed_again_on_the_same_state() {
    let Some(mut etcd) = TestEtcd::start() else { return };
    let prefix = unique_prefix("writes");
    block_on(async move {
        let state = open(etcd.config(&prefix)).await;
        let mut view = View::open(&state).await;
        for (i, id) in ["a", "b", "c", "d"].into_iter().enumerate() {
            state.create(int(id, i as i64), None).await.expect("create");
        }
        let b = state
            .modify(&ptr("b"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 10, None)
            .await
            .expect("modify");
        let acked: BTreeMap<String, i64> =
            [("a", 0), ("b", 10), ("c", 2), ("d", 3)].map(|(k, v)| (k.to_owned(), v)).into();
        view.converge_to(&acked).await;

        etcd.kill();
        fails_unavailable("create", state.create(int("e", 4), None)).await;
        fails_unavailable(
            "modify",
            state.modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 20, None),
        )
        .await;
        let mut b_next = b.clone();
        b_next.spec_mut().0 = 11;
        fails_unavailable("update", state.update(b_next.clone(), None)).await;
        fails_unavailable("destroy", state.destroy(&ptr("c"), None)).await;
        // Nothing failed was applied; reads answer from the cache meanwhile.
        assert_eq!(contents(&state).await, acked, "the cache holds what was acknowledged");

        etcd.restart();
        // Another client writes right after the restart; once this state's
        // watch sees that, its change feed is back.
        let other = open(etcd.config(&prefix)).await;
        assert_eq!(contents(&other).await, acked, "every acknowledged write survived");
        other.create(int("beacon", 99), None).await.expect("a write after the restart");
        let mut expected = acked.clone();
        expected.insert("beacon".into(), 99);
        view.converge_to(&expected).await;

        // The same State writes again: every kind of write, no reopen.
        state.create(int("e", 4), None).await.expect("create after the restart");
        state
            .modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 20, None)
            .await
            .expect("modify after the restart");
        let b_stored = state.update(b_next, None).await.expect("update after the restart");
        assert_eq!(b_stored.version().get(), 3, "the update was based on version 2");
        state.destroy(&ptr("c"), None).await.expect("destroy after the restart");
        expected.extend([("e".into(), 4), ("a".into(), 20), ("b".into(), 11)]);
        expected.remove("c");
        assert_eq!(contents(&state).await, expected, "this state reads its own writes");
        view.converge_to(&expected).await;
        other.close().await.expect("close");
        let fresh = open(etcd.config(&prefix)).await;
        assert_eq!(contents(&fresh).await, expected, "etcd holds the same");
        fresh.close().await.expect("close");
        state.close().await.expect("close");
    });
}

/// A watch opened before etcd was killed converges to the true state when
/// it is back: changes another client made right after the restart (an
/// update, a destroy, a create, then a compaction of etcd's history, so the
/// feed may have to list again) reach it, and so do this state's own writes.
#[test]
fn a_watch_open_before_an_outage_converges_to_the_true_state() {
    let Some(mut etcd) = TestEtcd::start() else { return };
    let prefix = unique_prefix("converge");
    block_on(async move {
        let state = open(etcd.config(&prefix)).await;
        let mut view = View::open(&state).await;
        let mut expected = BTreeMap::new();
        for i in 0..6 {
            state.create(int(&format!("r{i}"), i), None).await.expect("create");
            expected.insert(format!("r{i}"), i);
        }
        view.converge_to(&expected).await;

        etcd.kill();
        etcd.restart();
        // Right after the restart, while this state's feed is reconnecting.
        let other = open(etcd.config(&prefix)).await;
        other
            .modify(&ptr("r0"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 100, None)
            .await
            .expect("update");
        other.destroy(&ptr("r1"), None).await.expect("destroy");
        let last = other.create(int("r9", 9), None).await.expect("create");
        let mut raw = etcd_client::Client::connect([etcd.endpoint()], None).await.expect("connect");
        raw.compact(etcd_revision(last.metadata().revision()) as i64, None).await.expect("compact");
        expected.insert("r0".into(), 100);
        expected.remove("r1");
        expected.insert("r9".into(), 9);

        view.converge_to(&expected).await;
        assert_eq!(contents(&state).await, expected, "this state's cache converged too");
        let fresh = open(etcd.config(&prefix)).await;
        assert_eq!(contents(&fresh).await, expected, "and it is the true state");

        // This state writes again, and its watch and the others' see it.
        state
            .modify(&ptr("r2"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 200, None)
            .await
            .expect("a write after the outage");
        expected.insert("r2".into(), 200);
        view.converge_to(&expected).await;
        let mut other_view = View::open(&other).await;
        other_view.converge_to(&expected).await;
        for s in [other, fresh, state] {
            s.close().await.expect("close");
        }
    });
}

/// Writers to 8 counters keep `modify`ing them; etcd is killed after a
/// random number of acknowledged writes. Every writer then stops on a typed
/// `Unavailable` error (none hangs); after the restart every acknowledged
/// write is there and each counter's value still equals its version
/// (nothing lost, nothing applied twice).
#[test]
fn writes_acknowledged_before_a_kill_mid_run_are_there_after_the_restart() {
    const WRITERS: usize = 8;
    let Some(mut etcd) = TestEtcd::start() else { return };
    let prefix = unique_prefix("midrun");
    block_on(async move {
        let state = open(etcd.config(&prefix)).await;
        let acked: Rc<RefCell<BTreeMap<String, u64>>> = Rc::default();
        let (ticks, mut ticked) = unbounded::<()>();
        let (stops, mut stopped) = unbounded::<(usize, Error)>();
        for w in 0..WRITERS {
            let (state, acked, ticks, stops) =
                (state.clone(), acked.clone(), ticks.clone(), stops.clone());
            actix_rt::spawn(async move {
                let counter = ptr(&format!("counter-{w}"));
                loop {
                    let write = state.modify(
                        &counter,
                        |r: &mut Resource<IntSpec>| r.spec_mut().0 += 1,
                        None,
                    );
                    let Ok(written) = tokio::time::timeout(REQUEST_TIMEOUT + GRACE, write).await
                    else {
                        panic!("writer {w}: a write hung while etcd was down");
                    };
                    match written {
                        Ok(stored) => {
                            assert_eq!(stored.spec().0 as u64, stored.version().get());
                            acked
                                .borrow_mut()
                                .insert(counter.id().to_owned(), stored.version().get());
                            let _ = ticks.unbounded_send(());
                        }
                        Err(e) => {
                            let _ = stops.unbounded_send((w, e));
                            return;
                        }
                    }
                }
            });
        }
        // Kill after a random number of acknowledged writes: a random moment
        // of the run, chosen by events rather than by a clock.
        let kill_after = fastrand::usize(50..400);
        for _ in 0..kill_after {
            ticked.next().await.expect("the writers run");
        }
        etcd.kill();
        let at_kill = acked.borrow().clone();
        for _ in 0..WRITERS {
            let Ok(Some((w, err))) = tokio::time::timeout(DEADLINE, stopped.next()).await else {
                panic!("a writer neither failed nor hung past its deadline");
            };
            assert_eq!(
                err.storage_failure(),
                Some(StorageFailure::Unavailable),
                "writer {w}: {err}"
            );
        }
        let acked = acked.borrow().clone();
        eprintln!(
            "killed after {kill_after} acknowledged writes; {} in all before the writers stopped",
            acked.values().sum::<u64>()
        );
        assert!(acked.values().sum::<u64>() >= at_kill.values().sum::<u64>());

        etcd.restart();
        let fresh = open(etcd.config(&prefix)).await;
        let stored = fresh.list(&kind(), &LabelQuery::all()).await.expect("list");
        let stored: BTreeMap<String, (u64, i64)> =
            stored.iter().map(|r| (r.id().to_owned(), (r.version().get(), value(r)))).collect();
        for (id, version) in &acked {
            let (v, value) = stored.get(id).copied().unwrap_or_default();
            assert!(v >= *version, "{id}: acknowledged at version {version}, found {v}");
            assert_eq!(value as u64, v, "{id}: one increment per version");
        }
        // The same state serves again: its cache converges (the other
        // client's write shows that its feed is back), and it writes.
        fresh.create(int("beacon", 0), None).await.expect("a write after the restart");
        let mut truth: BTreeMap<String, i64> =
            stored.iter().map(|(id, (_, value))| (id.clone(), *value)).collect();
        truth.insert("beacon".into(), 0);
        let mut view = View::open(&state).await;
        view.converge_to(&truth).await;
        let after = state
            .modify(&ptr("counter-0"), |r: &mut Resource<IntSpec>| r.spec_mut().0 += 1, None)
            .await
            .expect("a write after the restart");
        assert_eq!(after.spec().0, truth.get("counter-0").copied().unwrap_or(0) + 1);
        fresh.close().await.expect("close");
        state.close().await.expect("close");
    });
}

/// etcd stops answering without closing anything (a stuck server, a
/// partition): writes in flight fail with a typed `Unavailable` once the
/// request timeout has passed, none hangs; reads answer from the cache.
/// When the bytes flow again, a write that timed out may still be committed
/// (etcd's own caveat): the caller retries each, the rules make the retries
/// safe, and the same `State` converges and writes on.
#[test]
fn writes_fail_unavailable_within_the_request_timeout_while_etcd_does_not_answer() {
    let Some(etcd) = TestEtcd::start() else { return };
    let port: u16 =
        etcd.endpoint().rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port");
    let proxy = Proxy::start(port);
    let prefix = unique_prefix("stuck");
    let config = EtcdConfig::new([proxy.endpoint()])
        .prefix(prefix.clone())
        .connect_timeout(REQUEST_TIMEOUT)
        .request_timeout(REQUEST_TIMEOUT);
    block_on(async move {
        let state = open(config).await;
        let mut view = View::open(&state).await;
        state.create(int("a", 1), None).await.expect("create");
        state.create(int("b", 2), None).await.expect("create");
        let mut expected: BTreeMap<String, i64> = [("a".to_owned(), 1), ("b".to_owned(), 2)].into();
        view.converge_to(&expected).await;

        proxy.freeze();
        // Three writes in flight at once, to three resources.
        let (a, b) = (ptr("a"), ptr("b"));
        let create = fails_unavailable("create", state.create(int("c", 3), None));
        let modify = fails_unavailable(
            "modify",
            state.modify(&a, |r: &mut Resource<IntSpec>| r.spec_mut().0 = 10, None),
        );
        let destroy = fails_unavailable("destroy", state.destroy(&b, None));
        futures::join!(create, modify, destroy);
        assert_eq!(contents(&state).await, expected, "reads answer from the cache meanwhile");

        proxy.thaw();
        // The timed-out writes may reach etcd now, or may never have: the
        // caller retries them, and the rules make the retries safe whatever
        // happened (a create that finds the resource, a destroy that does not).
        match state.create(int("c", 3), None).await {
            Ok(_) => {}
            Err(e) => assert!(e.is_already_exists(), "retried create: {e}"),
        }
        state
            .modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 10, None)
            .await
            .expect("retried modify");
        match state.destroy(&ptr("b"), None).await {
            Ok(()) => {}
            Err(e) => assert!(e.is_not_found(), "retried destroy: {e}"),
        }
        expected = [("a".to_owned(), 10), ("c".to_owned(), 3)].into();
        view.converge_to(&expected).await;
        assert_eq!(contents(&state).await, expected, "the cache converged");
        let other = open(etcd.config(&prefix)).await;
        assert_eq!(contents(&other).await, expected, "and etcd holds the same");

        // The same state writes on.
        state
            .modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 20, None)
            .await
            .expect("a write once etcd answers again");
        expected.insert("a".into(), 20);
        view.converge_to(&expected).await;
        other.close().await.expect("close");
        state.close().await.expect("close");
    });
}

/// The change feed stalls while etcd still takes writes: two endpoints (two
/// proxies in front of one etcd, as two members of a cluster would be), and
/// the one that carries the feed's watch stops passing bytes on. Every write
/// is answered, or fails with a typed `Unavailable`, within the request
/// timeout: a write etcd committed through the other endpoint must not wait
/// without bound for a feed that does not move.
///
/// The state's watchdog answers a committed write that the feed has not
/// delivered within the request timeout with `Unavailable` (saying it is
/// durable), and has the feed watch again.
#[test]
fn writes_are_answered_within_the_request_timeout_while_the_feed_stalls() {
    let Some(etcd) = TestEtcd::start() else { return };
    let port: u16 =
        etcd.endpoint().rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port");
    let proxies = [Proxy::start(port), Proxy::start(port)];
    let prefix = unique_prefix("stall");
    let config = EtcdConfig::new(proxies.iter().map(Proxy::endpoint))
        .prefix(prefix)
        .connect_timeout(REQUEST_TIMEOUT)
        .request_timeout(REQUEST_TIMEOUT);
    block_on(async move {
        let state = open(config).await;
        // Which proxy carries the feed: a write whose answer and watch event
        // both came through one proxy, and nothing through the other.
        let mut feed = None;
        for i in 0..100 {
            let before = proxies.each_ref().map(Proxy::down);
            state.create(int(&format!("probe-{i}"), i), None).await.expect("create");
            let moved = [0, 1].map(|p| proxies[p].down() > before[p]);
            if moved[0] != moved[1] {
                feed = Some(if moved[0] { 0 } else { 1 });
                break;
            }
        }
        let feed = &proxies[feed.expect("one write went through the feed's proxy alone")];

        feed.freeze();
        let mut outcomes = Vec::new();
        // Enough writes that the balanced channel sends some through the other proxy.
        for i in 0..12 {
            let started = Instant::now();
            let write = state.create(int(&format!("r{i}"), i), None);
            let outcome = tokio::time::timeout(REQUEST_TIMEOUT + GRACE, write).await;
            let took = started.elapsed();
            outcomes.push(match outcome {
                Ok(Ok(_)) => format!("acknowledged in {took:?}"),
                Ok(Err(e)) => {
                    assert_eq!(e.storage_failure(), Some(StorageFailure::Unavailable), "{e}");
                    format!("unavailable in {took:?}")
                }
                Err(_) => format!("no answer within {:?}", REQUEST_TIMEOUT + GRACE),
            });
            if outcomes.last().is_some_and(|o| o.starts_with("no answer")) {
                break;
            }
        }
        feed.thaw();
        assert!(outcomes.iter().all(|o| !o.starts_with("no answer")), "{outcomes:?}");
        state.close().await.expect("close");
    });
}

/// etcd refusing a write is not an outage: a resource larger than etcd
/// takes in one request (`--max-request-bytes`, 1.5 MiB by default) fails
/// with a typed error that does not say `Unavailable` (a controller would
/// back off and retry it forever), and the state serves on.
///
/// etcd's `InvalidArgument` ("request is too large") comes back as
/// `Error::InvalidInput` naming the resource.
#[test]
fn a_write_etcd_refuses_as_too_large_is_not_reported_as_unavailable() {
    let Some(etcd) = TestEtcd::start() else { return };
    let prefix = unique_prefix("large");
    block_on(async move {
        let state = open(etcd.config(&prefix)).await;
        let mut huge = int("huge", 1);
        huge.metadata_mut().labels_mut().insert("pad", "x".repeat(2_000_000).as_str());
        let err = state.create(huge, None).await.expect_err("etcd refuses 2 MB");
        assert_ne!(err.storage_failure(), Some(StorageFailure::Unavailable), "{err}");
        assert!(state.get(&ptr("huge")).await.unwrap_err().is_not_found());
        state.create(int("small", 1), None).await.expect("the state serves on");
        state.close().await.expect("close");
    });
}
