//! Watches end when their subscriber goes away, even on a kind that never
//! changes: nothing pins memory after a client has left.

use crate::common::{IntSpec, NS};
use actix::prelude::*;
use cosi_runtime::prelude::*;
use cosi_runtime::state::WatchOptions;

#[actix::test]
async fn dropped_watch_streams_on_a_quiet_kind_are_unregistered() {
    let state = State::start();
    state.create(Resource::new(NS, "quiet", IntSpec(1)), None).await.unwrap();
    let kind = Kind::of::<IntSpec>(NS);
    for i in 0..100_000 {
        let options = if i % 2 == 0 { WatchOptions::bootstrap() } else { WatchOptions::default() };
        let stream = if i % 3 == 0 {
            state.watch_stream(&Pointer::typed::<IntSpec>(NS, "quiet")).await.unwrap()
        } else {
            state.watch_kind_stream(&kind, LabelQuery::all(), &options).await.unwrap()
        };
        drop(stream);
    }
    assert_eq!(state.watch_count().await.unwrap(), 0, "every dropped watch is gone");
    // The kind never changed: nothing else could have pruned them.
    assert_eq!(
        state.get(&Pointer::typed::<IntSpec>(NS, "quiet")).await.unwrap().version().get(),
        1
    );
}

struct Listener;

impl Actor for Listener {
    type Context = Context<Self>;
}

impl Handler<WatchEvent> for Listener {
    type Result = ();
    fn handle(&mut self, _: WatchEvent, _: &mut Context<Self>) {}
}

#[derive(Message)]
#[rtype(result = "()")]
struct Stop;

impl Handler<Stop> for Listener {
    type Result = ();
    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

#[actix::test]
async fn watches_of_stopped_actors_do_not_pile_up_on_a_quiet_kind() {
    let state = State::start();
    let kind = Kind::of::<IntSpec>(NS);
    let mut live = Vec::new();
    for i in 0..1_000 {
        let actor = Listener.start();
        state.watch_kind(&kind, LabelQuery::all(), true, actor.clone().recipient()).await.unwrap();
        if i % 10 == 0 {
            live.push(actor);
        } else {
            actor.send(Stop).await.unwrap();
        }
    }
    // Each new watch pruned the stopped subscribers before it: at most the
    // last one is still registered.
    let count = state.watch_count().await.unwrap();
    assert!(
        (live.len()..=live.len() + 1).contains(&count),
        "{count} watches for {} live",
        live.len()
    );
    drop(live);
}
