//! The state served through the Kubernetes API (feature `kubernetes-api`):
//! stock clients — `kubectl`, client-go, kube-rs, the python `kubernetes`
//! client — discover, list, get, watch and write the resource types you expose.
//!
//! Clients write as the user (no owner): resources owned by a controller
//! are read-only to them.
//! Bearer tokens and TLS guard them: see [Authentication](#authentication).
//!
//! # Expected flow
//!
//! 1. Build a [`KubernetesApi`] over a [`State`](crate::State) and [`expose`](KubernetesApi::expose)
//!    each type you want served with an [`Expose`]: nothing is exposed by default.
//!    Group and plural come from the resource type (`LinkConfigs.net.cosi.dev`
//!    is `linkconfigs` in group `net.cosi.dev`), the version is yours.
//! 2. [`serve`](KubernetesApi::serve) it on an address of its own, or mount it
//!    into your actix-web `App` with [`configure`](KubernetesApi::configure).
//! 3. Point a client at it: `kubectl --server http://127.0.0.1:PORT get linkconfigs -n config`,
//!    `kubectl apply -f linkconfig.yaml`, `kubectl delete lc eth0 -n config`.
//!
//! | route | answer |
//! |---|---|
//! | `GET /version` | the [`server_version`](KubernetesApi::server_version) (kubectl's dispatcher picks its client by it) |
//! | `GET /api`, `/apis`, `/apis/{g}`, `/apis/{g}/{v}` | legacy discovery: `APIVersions` (`v1`: `/api/v1` lists the namespaces and the core-group types), `APIGroupList` (the program's groups, then Kubernetes' own: `apiextensions.k8s.io`, `events.k8s.io`), `APIGroup`, `APIResourceList` (verbs `create`, `delete`, `deletecollection`, `get`, `list`, `patch`, `update`, `watch`; `categories` from [`Expose::categories`]; `{plural}/status`: `get`, `patch`, `update`) |
//! | `GET /apis/{g}/{v}/namespaces/{ns}/{plural}` | a `<Kind>List`, or a watch with `?watch=true` |
//! | `GET /apis/{g}/{v}/{plural}` | the same over every namespace the type is served from ([`Expose::namespaces`], [`KubernetesApi::namespaces`]) |
//! | `GET /apis/{g}/{v}/namespaces/{ns}/{plural}/{name}` | one object |
//! | `POST /apis/{g}/{v}/namespaces/{ns}/{plural}` | create: `201` and the stored object |
//! | `PUT /apis/{g}/{v}/namespaces/{ns}/{plural}/{name}` | replace labels, annotations, finalizers and spec: `200` and the stored object |
//! | `PATCH /apis/{g}/{v}/namespaces/{ns}/{plural}/{name}` | `application/merge-patch+json` (RFC 7386), `application/json-patch+json` (RFC 6902), `application/apply-patch+yaml` (server-side apply: `201` when it creates) |
//! | `DELETE /apis/{g}/{v}/namespaces/{ns}/{plural}` | delete every object the `labelSelector` and `fieldSelector` select: `200` and a `<Kind>List` of them (`403`, nothing deleted, when one is a controller's) |
//! | `DELETE /apis/{g}/{v}/namespaces/{ns}/{plural}/{name}` | tear down, then destroy once no finalizers remain: `200` and the torn-down object |
//! | `GET`, `PUT`, `PATCH /apis/{g}/{v}/namespaces/{ns}/{plural}/{name}/status` | with [`Expose::status_subresource`]: read the object, write its `status` alone (merge, JSON, apply patches); `404` for other types |
//! | `/apis/apiextensions.k8s.io/v1/customresourcedefinitions[/{name}]` | CustomResourceDefinitions: a CRD written (`kubectl apply -f crd.yaml`, kube-rs with `Patch::Apply`) registers its type at once, its schema checking and pruning writes; deleted, the type goes with its objects (see `crds.rs`) |
//! | `GET`, `PUT`, `PATCH .../{plural}/{name}/scale` | with [`Expose::scale`]: an `autoscaling/v1` `Scale` of the object's replicas (`kubectl scale`, kube-rs' `get_scale`, `patch_scale`) |
//! | `/api/{v}/...` | the same routes for [core-group](Expose::core_group) types (`/api/v1/namespaces/{ns}/configmaps`) |
//! | `/apis/{g}/{v}/{plural}[/{name}[/status]]`, `/api/{v}/{plural}...` | a [cluster-scoped](Expose::cluster_scoped) type's objects: list, create, delete, and one object's routes, with no namespace |
//! | `GET`, `POST /api/v1/namespaces`, `GET`, `DELETE /api/v1/namespaces/{ns}` | namespaces as objects (`kubectl get ns`, `create ns`, `delete ns`), see below |
//! | `/apis/events.k8s.io/v1/.../events`, `/api/v1/.../events` | with [`KubernetesApi::events`] (or [`controllers`](KubernetesApi::controllers)): the Events a runtime records, in both versions (`kubectl get events`, `kubectl describe`) |
//! | `GET /openapi/v3`, `/openapi/v3/apis/{g}/{v}` | OpenAPI v3: an index, and per group-version a schema per kind ([`Expose::with_schema`] derives it from the type, [`Expose::schema`] takes it as JSON) and its operations; the PATCH operation takes `fieldValidation`, so `kubectl apply` leaves validation to the server |
//! | `GET /healthz`, `/livez`, `/readyz` | `200 ok`, or `500` naming the failed check; `?verbose` lists the checks (`ping`, `state`; `/readyz` also `shutdown`), `?exclude=NAME` skips one, `/livez/NAME` runs one; no token needed |
//! | `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews` | `kubectl auth can-i`: whether the caller's [token](Tokens) allows a verb on a type (`get`, `list`, `watch` are reads; every other verb a write) |
//! | `POST /apis/authentication.k8s.io/v1/selfsubjectreviews` | `kubectl auth whoami`: the caller's user name (also `v1beta1`, `v1alpha1`) |
//! | `GET /openapi/v2` | a minimal OpenAPI v2 (protobuf, what kubectl 1.27–1.29 read before an apply): PATCH operations only, no definitions |
//!
//! # Guarantees
//!
//! - An object is `{apiVersion, kind, metadata, spec}` (and `status`, with a
//!   [status subresource](Expose::status_subresource)); its `metadata.resourceVersion`
//!   is the store revision of the write that produced it, `generation` moves
//!   on spec changes (see [`object`](self#objects) below), `uid` is the
//!   incarnation's uid.
//! - A list's `metadata.resourceVersion` is the store revision of its snapshot:
//!   a watch from it (`kubectl get -w`, informers) delivers exactly the changes
//!   after the list.
//! - A watch is HTTP 200, chunked, one JSON event per line, never buffered:
//!   `ADDED`, `MODIFIED`, `DELETED`; from no version or `"0"`, first `ADDED`
//!   for everything that exists; from a version, the changes after it.
//!   Every event's object carries a `resourceVersion`, and they never go
//!   backwards within one watch.
//! - A watch from a revision the state no longer keeps gets HTTP 200 and one
//!   in-stream `ERROR` event with a `410 Expired` `Status`, then ends (what
//!   informers and kube-rs need to relist rather than retry for ever). So
//!   does a watch from a revision the state has not reached: its client knew
//!   an earlier server whose history is gone (restarted on a fresh in-memory
//!   state), and kube-runtime's `watcher` relists the new state's objects.
//! - [`KubernetesServer::stop`] ends every open watch the same way, with an
//!   in-stream `410 Expired`, before it closes the connections. No watch
//!   can resume across a restart (a state on disk comes back with no
//!   history before its restart; one in memory comes back with its
//!   revisions started again, where a client resuming from its last version
//!   would take the new revisions for the old ones and miss what changed),
//!   and clients read a connection cut mid-watch as the watch's end and
//!   resume (kube-client does). Told 410, every client lists again, however
//!   fast the server comes back. A server that crashes cannot say it: its
//!   clients' watches resume, and only those from a revision the new state
//!   has not reached are answered 410.
//! - A list from a `resourceVersion` beyond the state's revision (with or
//!   without `resourceVersionMatch`) is a `410 Expired` at once: the
//!   apiserver waits for it, then answers `504` "Too large resource
//!   version", but here that version will never come; client-go's reflector
//!   relists from no version on either. Any other `resourceVersion` lists
//!   the current state (`NotOlderThan`; `Exact` is not honoured).
//! - `allowWatchBookmarks=true`: `BOOKMARK` events every
//!   [`bookmark_interval`](KubernetesApi::bookmark_interval);
//!   `sendInitialEvents=true`: a bookmark annotated `k8s.io/initial-events-end`
//!   after the initial `ADDED` events. `timeoutSeconds=N` ends the stream
//!   cleanly after N seconds. `labelSelector` (kubectl syntax, read as
//!   Kubernetes reads it: `key!=value` and `key notin (…)` also select
//!   objects without the label, see
//!   [`LabelQuery::parse_kubernetes`](crate::resource::LabelQuery::parse_kubernetes))
//!   and `fieldSelector` on `metadata.name` and `metadata.namespace` (`=`,
//!   `==`, `!=`), and on the fields a type makes selectable
//!   ([`Expose::selectable_fields`]), apply to lists and watches. Booleans parse like Go's
//!   (`True` too).
//! - `Accept: application/json;as=Table;g=meta.k8s.io;v=v1` (what `kubectl get`
//!   asks) gets a `Table`: NAME, the print columns, AGE; each row carries
//!   the object's metadata (`PartialObjectMetadata`). Watches then send a
//!   one-row Table per event.
//! - `Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`
//!   (or `as=PartialObjectMetadata`, `v1beta1` too: kube-rs `list_metadata`
//!   and `Api<PartialObjectMeta<K>>` watchers, client-go metadata informers)
//!   gets metadata only, no spec: a `PartialObjectMetadataList`, a
//!   `PartialObjectMetadata`, or watch events carrying them. Writes answer
//!   in the form their `Accept` asks for too (metadata only, or a one-row
//!   `Table`).
//! - A watch client that stops reading never holds the state back: its events
//!   queue in a buffer of [`watch_buffer`](KubernetesApi::watch_buffer) events,
//!   and when that is full and the connection takes no more the server ends
//!   the watch (the client watches again from its last version). A burst of
//!   changes larger than the buffer reaches a client that reads: the buffer
//!   drains into the connection as it fills. So do the initial events of a
//!   watch without a version (every object, `ADDED`), however many.
//! - `timeoutSeconds` is honoured up to a year; a longer one is cut to it.
//! - Namespaces are objects of the core group's cluster-scoped `Namespace`
//!   kind (kept in the state namespace [`CLUSTER_NAMESPACE`]). The declared
//!   ones — `default`, [`KubernetesApi::namespaces`] and every
//!   [`Expose::namespaces`] — always exist; others exist once created
//!   (`kubectl create namespace prod`, or on first use with
//!   [`KubernetesApi::create_namespaces`]). A create into a namespace that
//!   does not exist is `404 NotFound` (`namespaces "prod" not found`), into
//!   one being deleted a `403`. Deleting a namespace holds it (finalizer
//!   `kubernetes`) while every object of every exposed type in it is
//!   deleted, then it goes. All-namespace requests (`-A`) read every
//!   namespace.
//! - `limit=N` cuts a list into pages of N: a page with more to follow
//!   carries `metadata.continue` and `remainingItemCount`, and every page of
//!   one list comes from the first page's snapshot, at its `resourceVersion`
//!   (what kubectl's `--chunk-size`, client-go's pager and kube-runtime's
//!   watcher read). A snapshot is kept 5 minutes after its last page was
//!   read (at most 256 at once); a `continue` token past that is a `410
//!   Expired`, as past the apiserver's compaction, and a token used with
//!   another type, namespace or selector a `400`.
//!
//! ## Writes
//!
//! - `dryRun=All` on a create, replace, patch (apply included) or delete runs
//!   every check and answers what would be stored, storing nothing (`kubectl
//!   diff`, `--dry-run=server`).
//! - A create names its object by `metadata.name` or, without one, by
//!   `metadata.generateName` and five random characters. The name must be a
//!   lowercase RFC 1123 subdomain (`422 Invalid` quoting the rule, as the
//!   apiserver words it).
//! - A `422 Invalid` names the type by its kind (`LinkConfig.net.cosi.dev
//!   "eth8" is invalid: …`) and gives one cause per field with its full path
//!   (`spec.addresses[1]`): a value of the wrong type is `Invalid value`, a
//!   missing required field `Required value` under its own name.
//! - Every write goes through the [`State`](crate::State) as the user (owner `None`). A
//!   resource owned by a controller is read-only to clients: PUT, PATCH and
//!   DELETE answer `403 Forbidden` and change nothing.
//! - A written object gives labels, annotations (except [`OWNER_ANNOTATION`],
//!   derived, and [`OWNER_REFERENCES_ANNOTATION`] and
//!   [`GENERATION_OFFSET_ANNOTATION`], reserved), finalizers,
//!   `ownerReferences` and `spec`; `status`, `generation`, timestamps and
//!   `managedFields` are ignored (the server keeps the managed fields). The name and namespace must match the URL's.
//! - `metadata.ownerReferences` (each `apiVersion`, `kind`, `name`, `uid`,
//!   optional booleans `controller`, `blockOwnerDeletion`; at most one
//!   controller; anything else is a `422 Invalid` naming the field) are kept
//!   in the annotation [`OWNER_REFERENCES_ANNOTATION`] and served back as
//!   `ownerReferences`, never as that annotation. A DELETE through the API
//!   collects the owner's dependents by its `propagationPolicy`: Background
//!   (the default: the dependents after the owner, theirs after them),
//!   Foreground (the owner held by `foregroundDeletion` until they are
//!   gone) or Orphan (they stay, without their reference); an owner
//!   destroyed through the [`State`](crate::State) leaves them be. The references
//!   are what kube-runtime's `Controller::owns()` maps a child to its parent by.
//! - Specs are decoded: with [`Expose::of::<S>`](Expose::of) a spec that does
//!   not decode as `S` is a `422 Invalid` naming the error, and under
//!   `fieldValidation=Strict` (kubectl's default) so is a field `S` does not
//!   know. Unknown fields are found by comparing the written spec with `S`'s
//!   own serialization of it (a `null`, `[]` or `{}` that `S` skips writing
//!   is not counted); without `Strict` they are dropped, as the apiserver
//!   prunes them. The dynamic [`Expose::resource_type`] takes any JSON object.
//! - `metadata.resourceVersion` is the optimistic-concurrency token: when
//!   sent (PUT, or set by a patch) it must be the stored mod revision, and a
//!   sent `metadata.uid` the stored uid, else `409 Conflict` and nothing is
//!   written. Without them a write is unconditional: it is read, changed and
//!   updated at the version read, re-read and retried (5 times) when another
//!   write comes in between.
//! - With [`Expose::status_subresource`], the stored spec is `{spec,
//!   status}`: object writes (POST, PUT, PATCH, apply) take `spec` and keep
//!   the stored `status` (a create stores none), and `.../{name}/status`
//!   (PUT, PATCH) writes `status` alone, keeping spec and metadata as stored
//!   (`resourceVersion` and `uid` preconditions still hold); a status write
//!   to a missing object is a `404`, to a controller's resource a `403`.
//! - Patches apply to the stored object as served (`object` above), then
//!   write like a PUT. A JSON patch is all or nothing. As the apiserver sorts
//!   them: a document that is no array of objects is a `400 BadRequest`,
//!   more than 10 000 operations a `413`, and an operation that cannot apply
//!   (an unknown `op`, a `path` or `from` that is missing, no JSON pointer or
//!   leads nowhere, no `value`), a failed `test`, copies adding up to more
//!   than 3 MiB (the apiserver's `JSONPatchMaxCopyBytes`) or a document
//!   nested deeper than 512 levels a `422 Invalid`.
//! - Server-side apply (`application/apply-patch+yaml`, JSON bodies only,
//!   which kubectl sends) is a merge patch onto the stored object, or a
//!   create (`201`) when there is none; `?fieldManager=` is required and
//!   recorded in the annotation [`FIELD_MANAGER_ANNOTATION`] (the last
//!   applier). Field ownership is kept per manager and served as
//!   `metadata.managedFields` (`kubectl get -o yaml --show-managed-fields`):
//!   an apply that would change a field another applier owns is a `409
//!   Conflict` naming each field and manager, unless `?force=true`, which
//!   takes it over. Unlike the apiserver, a field an update (create, PUT,
//!   merge or JSON patch) last set is taken over by an apply without a
//!   conflict, and fields left out of a later apply are kept, not removed.
//! - `DELETE` tears the resource down at once (it is served with
//!   `deletionTimestamp`, and updates are still accepted, e.g. removing a
//!   finalizer) and destroys it as soon as no finalizers remain
//!   ([`State::teardown_and_destroy`](crate::State::teardown_and_destroy), in the background when some do).
//!   `preconditions` (`uid`, `resourceVersion`) in the body are checked.
//!   kubectl then watches the name until `DELETED`.
//! - A request body (POST, PUT, PATCH, DELETE options) is read up to
//!   [`max_request_body`](KubernetesApi::max_request_body) bytes (3 MiB, as
//!   the apiserver); a larger one is a `413 RequestEntityTooLarge` (or, when
//!   the client is still sending it, a closed connection).
//! - A request that fails changes nothing.
//! - A write that changes nothing (a PUT, patch or apply of what is stored:
//!   labels, annotations, finalizers, spec and status) is no write, as on
//!   the apiserver: the stored object is answered, with no new
//!   `resourceVersion` and no watch event. A controller that re-applies its
//!   children and status on every reconcile does not wake itself again.
//!
//! # Authentication
//!
//! With [`tokens`](KubernetesApi::tokens), every request to the API's paths
//! (`/version`, `/api...`, `/apis...`, `/openapi...`) is checked before any
//! handler runs:
//!
//! - `Authorization: Bearer <token>` (kubectl `--token`) names a [`User`] of
//!   the [`Tokens`]; tokens are compared in constant time. An unknown token,
//!   or another scheme, is `401 Unauthorized`, even where anonymous reads
//!   are allowed.
//! - A request without a token is `401 Unauthorized`, unless
//!   [`anonymous_read`](KubernetesApi::anonymous_read) is on: then it reads
//!   (GET: get, list, watch) every exposed type as [`ANONYMOUS`], and any
//!   other method is `403 Forbidden`.
//! - A request on a type (`/apis/{g}/{v}[/namespaces/{ns}]/{plural}...`)
//!   needs the user's right on that plural: GET (`watch=true` included) is
//!   a read, any other method a write; write rights imply read. Without it:
//!   `403 Forbidden`, worded as the apiserver words it (`linkconfigs.net.cosi.dev
//!   "eth0" is forbidden: User "viewer" cannot delete resource "linkconfigs"
//!   in API group "net.cosi.dev" in the namespace "config"`).
//! - Discovery and every other path that names no type (`/version`, `/api`,
//!   `/apis`, `/apis/{g}/{v}`, `/api/v1/namespaces/{ns}`, `/openapi/...`) is
//!   open to any known user, and to anonymous reads when they are allowed.
//!
//! kubectl sends `--token` only over https (and over https without
//! credentials it prompts for a user name), so give the server a
//! certificate: [`tls`](KubernetesApi::tls) (PEM chain and key, rustls with
//! the `ring` provider) or [`tls_config`](KubernetesApi::tls_config).
//!
//! Without tokens nor `anonymous_read`, nothing is checked on a loopback
//! address: anyone who reaches the API reads and writes it (local
//! development). [`serve`](KubernetesApi::serve) on another address without
//! tokens keeps reads open but answers every write `401 Unauthorized`, and
//! says so when it starts, unless the builder opts in with
//! [`anonymous_writes(true)`](KubernetesApi::anonymous_writes); it warns
//! about tokens without TLS too. Mounted with
//! [`configure`](KubernetesApi::configure), the check covers the API's
//! paths only, never the application's own routes beside them.
//!
//! ```no_run
//! use cosi_runtime::kubernetes::{KubernetesApi, Tokens, User};
//!
//! # actix::System::new().block_on(async {
//! # let state = cosi_runtime::State::start();
//! let cert_chain_pem = std::fs::read("server.crt")?;
//! let key_pem = std::fs::read("server.key")?;
//! let api = KubernetesApi::new(&state)
//!     .tokens(
//!         Tokens::new()
//!             .token("s3cret", User::new("admin").write_all())
//!             .token("r0", User::new("viewer").read(["linkconfigs"])),
//!     )
//!     .anonymous_read(false) // the default
//!     .tls(cert_chain_pem, key_pem)?;
//! let server = api.serve("0.0.0.0:6443".parse()?).await?;
//! // kubectl --server https://HOST:6443 --certificate-authority ca.pem --token r0 get linkconfigs
//! assert!(server.url().starts_with("https://"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Objects
//!
//! | ours | object |
//! |---|---|
//! | id, namespace | `metadata.name`, `metadata.namespace` |
//! | uid | `metadata.uid` |
//! | mod revision | `metadata.resourceVersion` |
//! | [generation](crate::resource::Metadata::generation) (spec changes), less the API's status-only writes ([`GENERATION_OFFSET_ANNOTATION`]) | `metadata.generation` |
//! | created | `metadata.creationTimestamp` |
//! | labels, annotations, finalizers | the same |
//! | owner (a controller) | annotation `cosi.dev/owner` ([`OWNER_ANNOTATION`]) |
//! | annotation [`OWNER_REFERENCES_ANNOTATION`] (JSON) | `metadata.ownerReferences` |
//! | phase `TearingDown` | `metadata.deletionTimestamp` (the time of its last write) |
//! | spec | `spec`; with a status subresource, a spec `{spec, status}` is `spec` and `status` |
//!
//! # Caveats
//!
//! - Ids are served as names unchanged, not mangled. An id that is not a
//!   Kubernetes name (a `/`, spaces, capitals) is listed and watched as is,
//!   but kubectl cannot address it as `TYPE/NAME`; a raw GET must escape a
//!   `/` as `%2F`.
//! - All-namespace requests (`-A`) read every namespace of the type in the
//!   engine ([`State::list_all_namespaces_with_revision`](crate::State::list_all_namespaces_with_revision),
//!   [`State::watch_all_namespaces_stream`](crate::State::watch_all_namespaces_stream)):
//!   objects a controller wrote into namespaces the API never heard of
//!   included, and namespaces that appear during a watch. When the state
//!   routes namespaces to more than one store sequence (an etcd store beside
//!   others), no one revision covers them all: such a request reads the
//!   namespaces the API knows (the declared ones and the namespace objects),
//!   each at its own revision, the list's `resourceVersion` being the
//!   oldest, so a watch from it may repeat a change the list already
//!   showed, never miss one.
//! - The declared namespaces are served without objects of their own (an
//!   object made for each would move the state's revisions): they have no
//!   `uid` nor `creationTimestamp` until a client writes them.
//! - Core-group types are written as JSON; kubectl's protobuf bodies (which
//!   it sends for core kinds) are read for their metadata and, for a
//!   ConfigMap or a Secret, `data`.
//! - No strategic merge patch (`415`, as the apiserver answers for custom
//!   resources). A write that changes nothing writes nothing (no new
//!   `resourceVersion`). `generation` moves on spec changes only, as on the
//!   apiserver, whoever writes (a controller's finalizer add or label write
//!   leaves it), except that with a status subresource a status write made
//!   through the [`State`](crate::State) moves it too (see
//!   [`GENERATION_OFFSET_ANNOTATION`]).
//! - A watch's `DELETED` carries the revision of the destroy, except when the
//!   client fell behind and the state coalesced its backlog: then events carry
//!   their own revision, raised to the highest sent so far so that the stream
//!   never goes backwards. Bookmarks carry the revision the watch has caught up
//!   to; on a type nobody writes that revision stays where it was, and a
//!   client resumes from it all the same: the state's history must keep only
//!   the changes of the namespaces and type watched, whatever else it dropped.
//! - A watch ends when its client resets the connection, but a client that
//!   closes it quietly (a FIN, nothing unread) is only noticed when the next
//!   event or bookmark is written to it: actix-web does not read the socket
//!   of a response it is streaming. Until then the watch holds its place in
//!   the state (see [`State::watch_count`](crate::State::watch_count)).
//!
//! # Errors
//!
//! Every error is a `Status` object ([`Status`]): `401 Unauthorized` for a
//! missing or unknown token (when [tokens](#authentication) are configured);
//! `403 Forbidden` for a request the user has no right to; `404 NotFound` for an
//! unknown group, version, type, object or path (whatever the method, and
//! before a body is read), a type asked in the wrong scope, or a create
//! into a namespace that does not exist; `400 BadRequest` for a malformed selector (or a
//! field selector on a field the type does not make selectable), boolean, version, timeout or namespace, a body
//! that is not a JSON object, a JSON patch that is no array of operations,
//! a name or namespace that does not match the URL, a `dryRun` other than
//! `All`, an apply
//! without `fieldManager`; `403 Forbidden` for a write to a resource a
//! controller owns; `405 MethodNotAllowed` for a method a served path does
//! not serve; `409 AlreadyExists` for a create of an existing object; `409
//! Conflict` for a stale `resourceVersion` or `uid`; `413
//! RequestEntityTooLarge` for a body over
//! [`max_request_body`](KubernetesApi::max_request_body) or a JSON patch of
//! more than 10 000 operations; `415 UnsupportedMediaType` for a strategic
//! merge (or unknown) patch; `422 Invalid` for a spec or metadata that does
//! not decode, an unknown field under `fieldValidation=Strict`, a missing
//! or malformed name or a JSON patch that cannot apply or whose `test` fails; `503
//! ServiceUnavailable` when the state is gone. Bad
//! registrations are [`ExposeError`]s, a bad certificate or key a [`TlsError`].
//!
//! # Example
//!
//! ```no_run
//! use cosi_runtime::State;
//! use cosi_runtime::kubernetes::{Expose, KubernetesApi};
//! use cosi_runtime::resource::{Resource, Spec};
//!
//! #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
//! struct LinkConfig {
//!     mtu: u32,
//! }
//! impl Spec for LinkConfig {
//!     const TYPE: &'static str = "LinkConfigs.net.cosi.dev";
//! }
//!
//! # actix::System::new().block_on(async {
//! let state = State::start();
//! state.client().create(Resource::new("config", "eth0", LinkConfig { mtu: 1500 })).await?;
//! let api = KubernetesApi::new(&state)
//!     .expose(
//!         Expose::of::<LinkConfig>("v1alpha1")
//!             .short_names(["lc"])
//!             .column("MTU", ".spec.mtu")
//!             .namespaces(["config"]),
//!     )?
//!     .server_version(1, 33);
//! let server = api.serve("127.0.0.1:6443".parse()?).await?;
//! // kubectl --server http://127.0.0.1:6443 get lc -n config
//! println!("serving on {}", server.url());
//! # server.stop().await;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! Mounted into an application's own server:
//!
//! ```no_run
//! # use cosi_runtime::kubernetes::KubernetesApi;
//! use actix_web::{App, HttpServer};
//! # actix::System::new().block_on(async {
//! # let state = cosi_runtime::State::start();
//! let api = KubernetesApi::new(&state).configure();
//! HttpServer::new(move || App::new().configure(api.clone()))
//!     .bind(("127.0.0.1", 6443))?
//!     .run()
//!     .await
//! # }).unwrap();
//! ```
//!
//! # A kubectl session
//! Against the example above (types exposed with a short name `lc`, a print
//! column `MTU`, and namespaces `config` and `edge` for `-A`), with an empty
//! kubeconfig:
//!
//! ```text
//! $ kubectl --server http://127.0.0.1:6443 api-resources
//! NAME          SHORTNAMES   APIVERSION              NAMESPACED   KIND
//! linkconfigs   lc           net.cosi.dev/v1alpha1   true         LinkConfig
//! $ kubectl --server http://127.0.0.1:6443 get lc -A -l tier=edge
//! NAMESPACE   NAME   MTU    AGE
//! config      eth1   9000   5m
//! edge        wan0   1400   5m
//! $ kubectl --server http://127.0.0.1:6443 get lc -n config -w
//! NAME   MTU    AGE
//! eth0   1500   5m
//! eth1   9000   5m
//! eth5   4000   0s
//! $ kubectl --server http://127.0.0.1:6443 apply -f eth5.yaml
//! linkconfig.net.cosi.dev/eth5 created
//! $ kubectl --server http://127.0.0.1:6443 patch lc eth5 -n config --type merge -p '{"spec":{"mtu":9000}}'
//! linkconfig.net.cosi.dev/eth5 patched
//! $ kubectl --server http://127.0.0.1:6443 delete lc eth5 -n config   # returns once the finalizers are gone
//! linkconfig.net.cosi.dev "eth5" deleted
//! $ kubectl --server https://127.0.0.1:6443 --certificate-authority ca.pem --token "$VIEWER" delete lc eth0 -n config
//! Error from server (Forbidden): linkconfigs.net.cosi.dev "eth0" is forbidden: User "viewer" cannot delete resource "linkconfigs" in API group "net.cosi.dev" in the namespace "config"
//! ```
//!
//! `tests/kubernetes/read.rs`, `tests/kubernetes/write.rs`,
//! `tests/kubernetes/status.rs` and `tests/kubernetes/auth.rs` (TLS with a
//! certificate made at test time) run these sessions with the machine's
//! kubectl (1.27 and 1.33 tested); `tests/kubernetes/kube_rs.rs` with stock
//! kube-rs. The flagship example serves its configuration this way
//! (`cargo run --release -p netplane --features kubernetes-api -- --kube 127.0.0.1:6443`),
//! and a stock kube-runtime `Controller` reconciles resources that live in
//! the state through it, `.owns()` of a second type included
//! (`tests/cluster/kube_runtime.rs`).
//!
//! # Bad requests and limits
//! Whatever a client sends, it gets a `Status` and the state is unchanged
//! (see [Errors](#errors)). What one client may cost is bounded:
//!
//! | limit | default | past it |
//! |---|---|---|
//! | a request body ([`max_request_body`](KubernetesApi::max_request_body)) | 3 MiB, the apiserver's | `413 RequestEntityTooLarge` |
//! | unread events of one watch ([`watch_buffer`](KubernetesApi::watch_buffer)) | see the method | the watch is cut off once its connection takes no more (a client that reads gets every event, however many) |
//! | open watches per client address ([`max_watches_per_client`](KubernetesApi::max_watches_per_client)) | [`DEFAULT_MAX_WATCHES_PER_CLIENT`] (100) | `429 TooManyRequests` until one ends |
//! | a query string ([`max_query_bytes`](KubernetesApi::max_query_bytes)) | [`DEFAULT_MAX_QUERY_BYTES`] (16 KiB) | `414` |
//! | the request head (actix-web) | 128 KiB and 96 headers | `431` |
//! | a watch without `timeoutSeconds` | ends after 30 to 60 minutes, as the apiserver's `--min-request-timeout` makes it | the client watches again |
//!
//! The admin endpoint has the same `max_watches_per_client` and
//! `max_query_bytes`. Names a client chooses (ids, kinds, label keys and
//! values) are hashed with a hash seeded at random in each process, so
//! nobody can compute ahead of time a set of names that all land in one
//! bucket. `tests/kubernetes/bad_requests.rs` sends all of it, 10 MB bodies
//! and a watch that never reads included, while a controller keeps
//! reconciling; the `kube_http` fuzz target (`fuzz/`) drives the handlers
//! with arbitrary requests.

mod auth;
mod builder;
mod crds;
mod discovery;
mod event_view;
mod health;
mod list;
mod namespaces;
mod object;
mod openapi;
mod pages;
mod params;
mod patch;
mod protobuf;
mod registry;
mod review;
mod routes;
mod schema;
mod shared;
mod status;
mod structural;
mod table;
mod tls;
mod watch;
mod write;

/// The parsers behind the handlers, callable on their own by the fuzz
/// targets (`fuzz/` in the repository): query parameters, field selectors,
/// JSON and merge patches. Not part of the API: hidden from the docs, and
/// free to change. The handlers reach the same code through
/// [`KubernetesApi::configure`].
#[doc(hidden)]
pub mod fuzzing;

pub use auth::{ANONYMOUS, Tokens, User};
pub use builder::{
    DEFAULT_BOOKMARK_INTERVAL, DEFAULT_MAX_REQUEST_BODY, DEFAULT_WATCH_BUFFER, KubernetesApi,
    KubernetesServer,
};
pub use object::{
    FIELD_MANAGER_ANNOTATION, GENERATION_OFFSET_ANNOTATION, MANAGED_FIELDS_ANNOTATION,
    OWNER_ANNOTATION, OWNER_REFERENCES_ANNOTATION,
};
#[cfg(feature = "kubernetes")]
pub use registry::k8s_resource_type;
pub use registry::{CLUSTER_NAMESPACE, Expose, ExposeError};
/// schemars, for `#[derive(JsonSchema)]` on exposed types
/// ([`Expose::with_schema`]): the same crate kube-rs derives schemas with.
pub use schemars;
pub use status::Status;
pub use tls::TlsError;

pub use crate::http_limits::{DEFAULT_MAX_QUERY_BYTES, DEFAULT_MAX_WATCHES_PER_CLIENT};
pub use crate::http_stop::STOP_PATIENCE;
