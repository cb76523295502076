//! `GET /api/v1/shards`: the sharded controllers of this process, their
//! ring and the keys of each shard it owns.

use std::collections::{BTreeMap, HashMap};

use actix_web::HttpResponse;
use actix_web::web;
use serde_json::{Value, json};

use super::error::ApiError;
use super::shared::Shared;
use crate::controller::ALL_NAMESPACES;
use crate::resource::{Kind, LabelQuery};
use crate::shard::shard_of;
use crate::state::ShardStatus;
use crate::supervisor::{DependencyGraph, EdgeKind};

/// The primary inputs of `controller` in `graph`: the kinds its keys are
/// resources of.
fn primary_kinds(graph: &DependencyGraph, controller: &str) -> Vec<Kind> {
    let mut kinds: Vec<Kind> = Vec::new();
    for edge in graph.edges() {
        if edge.controller != controller || edge.kind != EdgeKind::InputPrimary {
            continue;
        }
        let Some(namespace) = &edge.namespace else { continue };
        let kind = Kind::new(namespace, &edge.resource_type);
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds
}

/// How many resources of `kinds` fall in each shard of `shards`.
async fn keys_per_shard(
    shared: &Shared,
    kinds: &[Kind],
    shards: u32,
) -> Result<HashMap<u32, u64>, ApiError> {
    let state = shared.runtime.state();
    let mut counts: HashMap<u32, u64> = HashMap::new();
    for kind in kinds {
        let all = LabelQuery::all();
        let resources = if kind.namespace() == ALL_NAMESPACES {
            state.list_all_namespaces(kind.resource_type(), &all).await?
        } else {
            state.list(kind, &all).await?
        };
        for resource in &resources {
            *counts.entry(shard_of(resource.pointer(), shards).0).or_default() += 1;
        }
    }
    Ok(counts)
}

fn status_json(status: &ShardStatus, kinds: &[Kind], counts: &HashMap<u32, u64>) -> Value {
    let owned: Vec<Value> = status
        .owned
        .iter()
        .map(|(shard, token)| {
            json!({
                "shard": shard,
                "token": token,
                "keys": counts.get(shard).copied().unwrap_or(0),
                "draining": status.draining.contains(shard),
            })
        })
        .collect();
    let keys: u64 = status.owned.iter().filter_map(|(shard, _)| counts.get(shard)).sum();
    let t = &status.takeover;
    json!({
        "controller": status.controller,
        "member": status.member,
        "shards": status.shards,
        "members": status.members,
        "primary": kinds.iter().map(|k| json!({
            "namespace": k.namespace(), "type": k.resource_type(),
        })).collect::<Vec<_>>(),
        "owned": owned,
        "draining": status.draining,
        "keys": keys,
        "handoffs": { "acquired": status.acquired, "released": status.released, "lost": status.lost },
        "takeover": {
            "count": t.count,
            "mean_seconds": t.mean().as_secs_f64(),
            "max_seconds": t.max.as_secs_f64(),
        },
    })
}

pub(super) async fn shards(shared: web::Data<Shared>) -> Result<HttpResponse, ApiError> {
    let statuses = shared.runtime.shards().await;
    let graph = shared.runtime.graph().await;
    let mut all = Vec::with_capacity(statuses.len());
    // One listing per (kinds, shard count): controllers sharing primaries share it.
    let mut listed: BTreeMap<(Vec<String>, u32), HashMap<u32, u64>> = BTreeMap::new();
    for status in &statuses {
        let kinds = primary_kinds(&graph, &status.controller);
        let key = (kinds.iter().map(ToString::to_string).collect(), status.shards);
        let counts = match listed.get(&key) {
            Some(counts) => counts,
            None => {
                let counts = keys_per_shard(&shared, &kinds, status.shards).await?;
                listed.entry(key).or_insert(counts)
            }
        };
        all.push(status_json(status, &kinds, counts));
    }
    Ok(HttpResponse::Ok().json(all))
}
