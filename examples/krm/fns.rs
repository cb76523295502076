//! The three functions of the example package (shared by the example
//! binaries, the in-process render, the tests and the benchmark).
//!
//! - **cluster-config** (upstream): For `example.com/v1 Cluster`, Owns
//!   `v1 ConfigMap`, Watch `example.com/v1 Site` (global, required: exactly one
//!   Site with a non-empty `spec.region`). Cluster `<c>` wants ConfigMap
//!   `<c>-config` with `data: {cluster, region, nodes}` (all strings).
//! - **configmap-actuator** (specific downstream): For `v1 ConfigMap` with an
//!   owner; removes delete-marked ones, otherwise annotates
//!   `example.com/actuated: "true"` and sets the condition True.
//! - **package-summary** (wildcard): `example.com/v1 Summary <Kptfile name>`
//!   with `spec.configMaps` = sorted names of owned, not delete-marked ConfigMaps.

#![allow(dead_code)]

use std::sync::Arc;

use cosi_runtime::krm::yaml::{Map, Node};
use cosi_runtime::krm::{Downstream, Function, Gvk, Object, Upstream, Watch, Wildcard};

/// `example.com/v1 Cluster`.
pub fn cluster() -> Gvk {
    Gvk::new("example.com/v1", "Cluster")
}

/// `example.com/v1 Site`.
pub fn site() -> Gvk {
    Gvk::new("example.com/v1", "Site")
}

/// `v1 ConfigMap`.
pub fn config_map() -> Gvk {
    Gvk::new("v1", "ConfigMap")
}

/// `example.com/v1 Summary`.
pub fn summary() -> Gvk {
    Gvk::new("example.com/v1", "Summary")
}

fn region(site: &Object) -> Option<&str> {
    site.get_str(&["spec", "region"]).filter(|r| !r.is_empty())
}

/// The upstream function.
pub fn cluster_config() -> Upstream {
    let required_site = Watch::global(site()).required(|sites| match sites {
        [one] if region(one).is_some() => Ok(()),
        _ => Err(format!(
            "expected exactly one Site with a non-empty spec.region, found {} Site(s)",
            sites.len()
        )),
    });
    Upstream::new("cluster-config", cluster(), |cluster, watched| {
        let name = cluster.name().ok_or("the Cluster has no name")?;
        let site = watched.get(&site()).first().ok_or("no Site")?;
        let region = region(site).ok_or("the Site has no region")?;
        let nodes =
            cluster.node().path(&["spec", "nodes"]).and_then(Node::as_str).unwrap_or_default();
        let mut cm = Object::new(&config_map(), &format!("{name}-config"));
        if let (Some(ns), Some(metadata)) =
            (cluster.namespace(), cm.node_mut().map_at(&["metadata"]))
        {
            metadata.insert("namespace", Node::string(ns));
        }
        let mut data = Map::new();
        data.insert("cluster", Node::string(name));
        data.insert("region", Node::string(region));
        data.insert("nodes", Node::string(nodes));
        if let Some(map) = cm.node_mut().as_map_mut() {
            map.insert("data", Node::Map(data));
        }
        Ok(vec![cm])
    })
    .owns(config_map())
    .watch(required_site)
}

/// The specific downstream function.
pub fn configmap_actuator() -> Downstream {
    Downstream::new("configmap-actuator", config_map(), |cm| {
        cm.set_annotation("example.com/actuated", "true");
        Ok(())
    })
}

/// The wildcard function.
pub fn package_summary() -> Wildcard {
    Wildcard::new("package-summary", summary(), |list, keys| {
        let mut names: Vec<String> = list
            .items
            .iter()
            .filter(|o| {
                o.is(&config_map()) && keys.owner_of(o).is_some() && !keys.is_delete_marked(o)
            })
            .filter_map(|o| o.name().map(str::to_string))
            .collect();
        names.sort();
        let mut spec = Map::new();
        spec.insert("configMaps", Node::Seq(names.into_iter().map(Node::string).collect()));
        let mut object = Object::new(&summary(), "summary");
        if let Some(map) = object.node_mut().as_map_mut() {
            map.insert("spec", Node::Map(spec));
        }
        Ok(object)
    })
    .watch(config_map())
}

/// The three functions in pipeline order.
pub fn all() -> Vec<Arc<dyn Function>> {
    vec![Arc::new(cluster_config()), Arc::new(configmap_actuator()), Arc::new(package_summary())]
}
