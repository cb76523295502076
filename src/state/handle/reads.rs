//! The reads of a [`State`] handle: from the cache the state actor shares
//! when it may be read directly, else as requests.

use super::State;
use crate::Error;
use crate::resource::validate;
use crate::resource::{Address, AnyResource, Kind, LabelQuery, Pointer, Resource, Spec};
use crate::state::request::unexpected;
use crate::state::request::{StateReply, StateRequest};

impl State {
    /// The resource at `ptr`: an [`AnyResource`] for a plain [`Pointer`], a
    /// [`Resource<S>`](crate::resource::Resource) for a [`TypedPointer<S>`](crate::resource::TypedPointer).
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::InvalidInput`]; [`Error::TypeMismatch`]
    /// (typed pointer, stored spec of another type).
    pub async fn get<P: Address + ?Sized>(&self, ptr: &P) -> Result<P::Resource, Error> {
        P::read(self.get_any(ptr.pointer()).await?)
    }

    /// A `Get`: from the cache when it may be read directly, else a request.
    async fn get_any(&self, ptr: &Pointer) -> Result<AnyResource, Error> {
        if let Some(view) = &self.0.view {
            validate::pointer(ptr)?;
            if let Some(found) = view.get(ptr) {
                return found.ok_or_else(|| Error::NotFound { resource: ptr.clone() });
            }
        }
        self.resource(StateRequest::Get { pointer: ptr.clone() }).await
    }

    /// The resource at `ptr` as spec type `S`.
    ///
    /// # Errors
    /// As [`get`](State::get), and [`Error::TypeMismatch`].
    pub async fn get_typed<S: Spec>(&self, ptr: &Pointer) -> Result<Resource<S>, Error> {
        self.get(ptr).await?.typed()
    }

    /// The resources of `kind` matching `query`, sorted by id.
    ///
    /// A query with an equality term (`key == value`) or a set term
    /// (`key in (a, b)`) reads only the resources carrying those labels
    /// (the state indexes every label): finding the few resources made
    /// from one input, by the input's id in a label, costs what it finds,
    /// not the size of the kind. Other terms (`exists`, `!=`, `notin`)
    /// filter what the narrowest such term names, or the whole kind.
    ///
    /// # Errors
    /// [`Error::InvalidInput`].
    pub async fn list(&self, kind: &Kind, query: &LabelQuery) -> Result<Vec<AnyResource>, Error> {
        if let Some(view) = &self.0.view {
            validate::kind(kind)?;
            if let Some(listed) = view.list(kind, query) {
                return Ok(listed);
            }
        }
        let req = StateRequest::List { kind: kind.clone(), query: query.clone() };
        match self.send(req).await? {
            StateReply::Resources(r) => Ok(r),
            other => Err(unexpected(other, "list")),
        }
    }

    /// The resources of `kind` matching `query`, sorted by id, and the store
    /// revision of that snapshot.
    ///
    /// The snapshot holds every change of `kind` up to the revision and none
    /// after it, so a watch resumed from the revision
    /// ([`WatchOptions::resume_from`](super::WatchOptions::resume_from))
    /// delivers exactly the changes the list does not show: list-then-watch
    /// without a gap or a repeat, as a Kubernetes informer does it. Always
    /// answered by the state actor (a direct read of the cache has no
    /// revision to give).
    ///
    /// ```
    /// # use cosi_runtime::State;
    /// # use cosi_runtime::resource::{Resource, Spec};
    /// # use cosi_runtime::resource::{Kind, LabelQuery};
    /// # use cosi_runtime::state::WatchOptions;
    /// # #[actix::main]
    /// # async fn main() -> Result<(), cosi_runtime::Error> {
    /// # #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    /// # struct Motd(String);
    /// # impl Spec for Motd { const TYPE: &'static str = "Motds.example.dev"; }
    /// let state = State::start();
    /// state.create(Resource::new("default", "a", Motd("hi".into())).into_any(), None).await?;
    /// let kind = Kind::of::<Motd>("default");
    /// let (items, revision) = state.list_with_revision(&kind, &LabelQuery::all()).await?;
    /// assert_eq!((items.len(), revision), (1, 1));
    /// // Everything after the list, and nothing it already showed:
    /// let watch = state.watch_kind_stream(&kind, LabelQuery::all(), WatchOptions::resume_from(revision)).await?;
    /// # drop(watch);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidInput`].
    pub async fn list_with_revision(
        &self,
        kind: &Kind,
        query: &LabelQuery,
    ) -> Result<(Vec<AnyResource>, u64), Error> {
        validate::kind(kind)?;
        let req = StateRequest::ListWithRevision { kind: kind.clone(), query: query.clone() };
        match self.send(req).await? {
            StateReply::Listed { resources, revision } => Ok((resources, revision)),
            other => Err(unexpected(other, "list_with_revision")),
        }
    }

    /// The resources of type `resource_type` matching `query` in every
    /// namespace, sorted by (namespace, id): [`list`](State::list) across
    /// namespaces, from the cache when it may be read directly.
    ///
    /// ```
    /// # use cosi_runtime::State;
    /// # use cosi_runtime::resource::{Resource, Spec, LabelQuery};
    /// # #[actix::main]
    /// # async fn main() -> Result<(), cosi_runtime::Error> {
    /// # #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    /// # struct Motd(String);
    /// # impl Spec for Motd { const TYPE: &'static str = "Motds.example.dev"; }
    /// let state = State::start();
    /// for (ns, id) in [("b", "1"), ("a", "2"), ("a", "1")] {
    ///     state.create(Resource::new(ns, id, Motd("hi".into())).into_any(), None).await?;
    /// }
    /// let all = state.list_all_namespaces(Motd::TYPE, &LabelQuery::all()).await?;
    /// let addresses: Vec<_> = all.iter().map(|r| (r.pointer().namespace(), r.id())).collect();
    /// assert_eq!(addresses, [("a", "1"), ("a", "2"), ("b", "1")]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad type.
    pub async fn list_all_namespaces(
        &self,
        resource_type: &str,
        query: &LabelQuery,
    ) -> Result<Vec<AnyResource>, Error> {
        validate::resource_type(resource_type)?;
        if let Some(view) = &self.0.view
            && let Some(listed) = view.list_all_namespaces(resource_type, query)
        {
            return Ok(listed);
        }
        Ok(self.list_all_namespaces_with_revision(resource_type, query).await?.0)
    }

    /// The resources of type `resource_type` matching `query` in every
    /// namespace, sorted by (namespace, id), and the revision of that
    /// snapshot when one revision sequence covers every namespace.
    ///
    /// # Guarantees
    /// - The list is one snapshot: every namespace as of the same moment
    ///   (the state actor answers it; writes staged for a durable backend
    ///   are waited for, as for [`list_with_revision`](State::list_with_revision)).
    /// - The revision is `Some` when every namespace shares one revision
    ///   sequence: no namespace is routed to a shared store (memory and
    ///   exclusive backends such as redb count in the state's own revisions,
    ///   so memory and redb namespaces mixed answer one revision), or every
    ///   namespace goes to one shared store (its revision). The snapshot then
    ///   holds every change of the type up to the revision and none after it:
    ///   a [`watch_all_namespaces`](State::watch_all_namespaces) resumed from
    ///   it delivers exactly what the list does not show.
    ///
    /// # Caveats
    /// - `None` when namespaces are split between a shared store (etcd) and
    ///   another store or memory: each store counts revisions of its own, and
    ///   no single number orders them. List and bootstrap a watch then.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad type.
    pub async fn list_all_namespaces_with_revision(
        &self,
        resource_type: &str,
        query: &LabelQuery,
    ) -> Result<(Vec<AnyResource>, Option<u64>), Error> {
        validate::resource_type(resource_type)?;
        let req = StateRequest::ListAllNamespaces {
            resource_type: resource_type.to_owned(),
            query: query.clone(),
        };
        match self.send(req).await? {
            StateReply::ListedAllNamespaces { resources, revision } => Ok((resources, revision)),
            other => Err(unexpected(other, "list_all_namespaces")),
        }
    }

    /// The resource at `ptr` (`None` when there is none) and the store
    /// revision it was read at: what [`list_with_revision`](State::list_with_revision)
    /// answers for a kind, for one resource (a server listing one object by
    /// name reads that object, not its kind). A watch of the resource
    /// resumed from the revision gets every change after the read.
    ///
    /// ```
    /// # use cosi_runtime::State;
    /// # use cosi_runtime::resource::{Pointer, Resource, Spec};
    /// # #[actix::main]
    /// # async fn main() -> Result<(), cosi_runtime::Error> {
    /// # #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    /// # struct Motd(String);
    /// # impl Spec for Motd { const TYPE: &'static str = "Motds.example.dev"; }
    /// let state = State::start();
    /// state.create(Resource::new("default", "a", Motd("hi".into())).into_any(), None).await?;
    /// let (found, revision) = state.get_with_revision(&Pointer::typed::<Motd>("default", "a")).await?;
    /// assert_eq!((found.map(|r| r.id().to_owned()), revision), (Some("a".into()), 1));
    /// let (none, _) = state.get_with_revision(&Pointer::typed::<Motd>("default", "b")).await?;
    /// assert!(none.is_none());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidInput`].
    pub async fn get_with_revision(
        &self,
        ptr: &Pointer,
    ) -> Result<(Option<AnyResource>, u64), Error> {
        validate::pointer(ptr)?;
        let req = StateRequest::GetWithRevision { pointer: ptr.clone() };
        match self.send(req).await? {
            StateReply::Listed { mut resources, revision } => Ok((resources.pop(), revision)),
            other => Err(unexpected(other, "get_with_revision")),
        }
    }

    /// The resources of spec type `S` in `namespace` matching `query`, sorted by id.
    ///
    /// # Errors
    /// As [`list`](State::list), and [`Error::TypeMismatch`] naming the
    /// first resource that does not decode as `S` (use
    /// [`list_decoded`](State::list_decoded) to read the others).
    pub async fn list_typed<S: Spec>(
        &self,
        namespace: &str,
        query: &LabelQuery,
    ) -> Result<Vec<Resource<S>>, Error> {
        self.list(&Kind::of::<S>(namespace), query).await?.iter().map(AnyResource::typed).collect()
    }
}
