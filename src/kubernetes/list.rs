//! List and get: `<Kind>List` (or a Table) at the store revision of its
//! snapshot ([`State::list_with_revision`](crate::State::list_with_revision): a watch resumed from that
//! revision misses nothing and repeats nothing).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use actix_web::{HttpRequest, HttpResponse, web};
use serde::ser::{Error as _, Serialize, SerializeMap, SerializeSeq, Serializer};

use super::namespaces;
use super::object::{ApiVersion, Object};
use super::object::{ObjectMeta, Partial};
use super::pages::ListMeta;
use super::params::{ListParams, Start};
use super::registry::Exposed;
use super::shared::{Shared, TypePath};
use super::status::Status;
use super::table::{Form, Rows, Table, form};
use crate::state::ALL_NAMESPACES;

use crate::resource::{AnyResource, Id, Kind, Pointer};

type Query = web::Query<HashMap<String, String>>;

fn accept(req: &HttpRequest) -> Option<&str> {
    req.headers().get(actix_web::http::header::ACCEPT).and_then(|v| v.to_str().ok())
}

/// `GET /apis/{group}/{version}[/namespaces/{namespace}]/{plural}` (and
/// `/api/{version}/...`): one namespace, or without one every namespace
/// served (a cluster-scoped type's one).
pub(super) async fn collection(
    shared: web::Data<Shared>,
    path: web::Path<TypePath>,
    query: Query,
    req: HttpRequest,
) -> Result<HttpResponse, Status> {
    let path = path.into_inner();
    let exposed = shared.exposed(&path.group, &path.version, &path.plural)?;
    let params = ListParams::parse(&query)?;
    params.fields.check(&exposed)?;
    let namespaces = if path.namespace.is_none() && exposed.cluster.is_none() {
        shared.across_namespaces(&exposed, &params).await?
    } else {
        vec![shared.scoped(&path)?.1]
    };
    list_or_watch(&shared, exposed, namespaces, params, form(accept(&req))).await
}

async fn list_or_watch(
    shared: &Shared,
    exposed: Arc<Exposed>,
    namespaces: Vec<String>,
    params: ListParams,
    form: Form,
) -> Result<HttpResponse, Status> {
    if params.watch {
        return super::watch::watch(shared, exposed, namespaces, params, form).await;
    }
    // What a continue token must match: only paged lists need it.
    let query = || {
        format!(
            "{}|{}|{}|{:?}",
            exposed.resource_type,
            namespaces.join(","),
            params.labels,
            params.fields
        )
    };
    if let Some(at) = &params.continue_from {
        let page = shared.pages.next(&query(), at, params.limit)?;
        return respond(&exposed, &page.items[page.range.clone()], page.meta(), form);
    }
    let mut items = Vec::new();
    let mut revision = None::<u64>;
    let mut newest = 0;
    // With no namespace to read, an empty list still needs a revision:
    // that of a snapshot of a namespace nobody names.
    let probe = namespaces.is_empty().then(|| "default".to_owned());
    let all = namespaces.iter().any(|ns| ns == ALL_NAMESPACES);
    let listed = if all {
        // One read of every namespace, at the revision of the one store
        // sequence that covers them (`across_namespaces` made sure).
        let (found, at) = shared
            .state
            .list_all_namespaces_with_revision(&exposed.resource_type, &params.labels)
            .await?;
        Some((found, at.unwrap_or(0)))
    } else {
        None
    };
    if let Some((found, at)) = listed {
        revision = Some(at);
        newest = at;
        items = found;
    }
    // A list of one object by name (`fieldSelector=metadata.name=...`, what
    // an informer that follows one object starts with) reads that object,
    // not its kind.
    let single = params.fields.name();
    for namespace in namespaces.iter().chain(&probe).filter(|_| !all) {
        let kind = Kind::new(namespace, &exposed.resource_type);
        let (found, at) = match single {
            Some(name) => {
                let ptr = Pointer::from_parts(kind, Id::from(name));
                let (found, at) = shared.state.get_with_revision(&ptr).await?;
                let found = found.filter(|r| params.labels.matches(r.metadata().labels()));
                (found.into_iter().collect(), at)
            }
            None => shared.state.list_with_revision(&kind, &params.labels).await?,
        };
        // The oldest snapshot: a watch from it may repeat, never miss.
        revision = Some(revision.map_or(at, |r| r.min(at)));
        newest = newest.max(at);
        if probe.is_none() {
            items.extend(found);
        }
    }
    if let Start::After(asked) = params.start
        && asked > newest
    {
        return Err(too_large(asked, newest));
    }
    let revision = revision.unwrap_or(0);
    if namespaces::is_namespaces(&exposed.resource_type) && single.is_none() {
        // The declared namespaces, objects or not.
        let declared = namespaces::declared(&shared.namespaces, &shared.registry());
        let listed: std::collections::BTreeSet<String> =
            items.iter().map(|r| r.id().to_owned()).collect();
        items.extend(
            declared
                .iter()
                .filter(|name| !listed.contains(*name))
                .map(|name| namespaces::implicit(name))
                .filter(|r| params.labels.matches(r.metadata().labels())),
        );
        items.sort_by(|a, b| a.id().cmp(b.id()));
    }
    items.retain(|r| params.fields.matches_object(&exposed, r));
    match params.limit {
        Some(limit) => {
            let page = shared.pages.first(query(), items, revision, limit);
            respond(&exposed, &page.items[page.range.clone()], page.meta(), form)
        }
        None => respond(&exposed, &items, ListMeta::at(revision), form),
    }
}

/// A list from `asked`, a version beyond the state's `current` revision: a
/// client that knew an earlier server whose history is gone (a restart on a
/// fresh in-memory state). The apiserver waits for such a version, then
/// answers `504 Timeout` ("Too large resource version"); ours will never
/// come, so the answer is at once a `410 Expired`, which client-go's
/// reflector and kube-runtime treat alike: relist from no version.
fn too_large(asked: u64, current: u64) -> Status {
    Status::expired(format!(
        "Too large resource version: {asked}, current: {current} (this server's history does not reach it: list again without a resourceVersion)"
    ))
}

fn respond(
    exposed: &Exposed,
    items: &[AnyResource],
    meta: ListMeta,
    form: Form,
) -> Result<HttpResponse, Status> {
    let items: Vec<&AnyResource> = items.iter().collect();
    // Each object is written straight into the body as it is built (no
    // value tree per item): about 300 bytes each for a small spec.
    let mut body = Vec::with_capacity(512 + 384 * items.len());
    let written = match form {
        Form::Table => {
            let rows = Rows { exposed, items: &items, now: SystemTime::now() };
            serde_json::to_writer(&mut body, &Table { exposed, rows, meta })
        }
        Form::Metadata => {
            serde_json::to_writer(&mut body, &MetadataList { exposed, items: &items, meta })
        }
        Form::Full => serde_json::to_writer(&mut body, &List { exposed, items: &items, meta }),
    };
    written.map_err(|e| Status::internal(e.to_string()))?;
    Ok(json_body(body))
}

fn json_body(body: Vec<u8>) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(body)
}

/// A `<Kind>List` of `items` with its `metadata`.
struct List<'a> {
    exposed: &'a Exposed,
    items: &'a [&'a AnyResource],
    meta: ListMeta,
}

impl Serialize for List<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(Some(4))?;
        out.serialize_entry("kind", &format!("{}List", self.exposed.kind))?;
        out.serialize_entry("apiVersion", &ApiVersion(self.exposed))?;
        out.serialize_entry("metadata", &self.meta)?;
        out.serialize_entry("items", &Items { exposed: self.exposed, items: self.items })?;
        out.end()
    }
}

/// A `PartialObjectMetadataList` of `items` with its `metadata` (what a
/// metadata-only client asks for: no specs).
struct MetadataList<'a> {
    exposed: &'a Exposed,
    items: &'a [&'a AnyResource],
    meta: ListMeta,
}

impl Serialize for MetadataList<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(Some(4))?;
        out.serialize_entry("kind", "PartialObjectMetadataList")?;
        out.serialize_entry("apiVersion", "meta.k8s.io/v1")?;
        out.serialize_entry("metadata", &self.meta)?;
        let items = self
            .items
            .iter()
            .map(|r| Partial(ObjectMeta::of(self.exposed, r, r.metadata().revision())));
        out.serialize_entry("items", &Seq(std::cell::Cell::new(Some(items))))?;
        out.end()
    }
}

/// An iterator serialized as a sequence (once).
struct Seq<I>(std::cell::Cell<Option<I>>);

impl<I: Iterator<Item = T>, T: Serialize> Serialize for Seq<I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.take().into_iter().flatten())
    }
}

/// Objects at their own revisions, each built as it is written.
struct Items<'a> {
    exposed: &'a Exposed,
    items: &'a [&'a AnyResource],
}

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.items.len()))?;
        for r in self.items {
            let object = Object::new(self.exposed, r, r.metadata().revision())
                .map_err(|status| S::Error::custom(status.message()))?;
            seq.serialize_element(&object)?;
        }
        seq.end()
    }
}

type ItemPath = web::Path<TypePath>;

/// `GET /apis/{group}/{version}[/namespaces/{namespace}]/{plural}/{name}`.
pub(super) async fn get(
    shared: web::Data<Shared>,
    path: ItemPath,
    req: HttpRequest,
) -> Result<HttpResponse, Status> {
    get_object(&shared, path, &req, false).await
}

/// `GET .../{plural}/{name}/status`: the object, as the apiserver answers
/// it; 404 for a type without a status subresource.
pub(super) async fn get_status(
    shared: web::Data<Shared>,
    path: ItemPath,
    req: HttpRequest,
) -> Result<HttpResponse, Status> {
    get_object(&shared, path, &req, true).await
}

async fn get_object(
    shared: &Shared,
    path: ItemPath,
    req: &HttpRequest,
    status: bool,
) -> Result<HttpResponse, Status> {
    let path = path.into_inner();
    let (exposed, namespace) = shared.scoped(&path)?;
    if status && !exposed.status {
        return Err(super::write::no_status(&exposed));
    }
    let name = path.name();
    let ptr = Kind::new(&namespace, &exposed.resource_type).pointer(name.as_str());
    let resource = match shared.state.get(&ptr).await {
        Ok(r) => r,
        Err(e)
            if e.is_not_found()
                && namespaces::is_namespaces(&exposed.resource_type)
                && namespaces::declared(&shared.namespaces, &shared.registry()).contains(&name) =>
        {
            namespaces::implicit(&name)
        }
        Err(e) if e.is_not_found() => {
            return Err(Status::object_not_found(&exposed.group, &exposed.plural, &name));
        }
        Err(e) => return Err(e.into()),
    };
    let revision = resource.metadata().revision();
    match form(accept(req)) {
        Form::Table => {
            let one = std::slice::from_ref(&resource);
            return respond(&exposed, one, ListMeta::at(revision), Form::Table);
        }
        Form::Metadata => {
            let partial = Partial(ObjectMeta::of(&exposed, &resource, revision));
            return serde_json::to_vec(&partial)
                .map(json_body)
                .map_err(|e| Status::internal(e.to_string()));
        }
        Form::Full => {}
    }
    let object = Object::new(&exposed, &resource, revision)?;
    serde_json::to_vec(&object).map(json_body).map_err(|e| Status::internal(e.to_string()))
}
