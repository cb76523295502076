//! [`Access`] for the handles that implement it: the core through their
//! inherent methods of the same names ([`Client`], a controller's
//! [`ReconcileContext`](crate::controller::ReconcileContext)), and the
//! derived calls as methods of their own, so that code naming one needs no
//! import.

use super::Client;

/// Implements [`Access`]'s core for a type whose inherent methods of the
/// same names already are that core (`Client`, `ReconcileContext`), with
/// `$owner` (of `$this`, the value) for [`Access::owner`](crate::state::Access::owner).
///
/// The form `$ty => $inner, |$this| $handle` implements it for a type that
/// writes through a handle of type `$inner` it holds (the test kit's
/// `Harness` and its user `Client`): each call, and the owner, are the
/// handle's.
macro_rules! core_by_inherent {
    ($ty:ty, |$this:ident| $owner:expr) => {
        $crate::state::client::implementors::core_by_inherent!(
            @impl $ty => $ty, |$this| $owner, |this| this
        );
    };
    ($ty:ty => $inner:ty, |$this:ident| $handle:expr) => {
        $crate::state::client::implementors::core_by_inherent!(
            @impl $ty => $inner, |$this| $crate::state::Access::owner($handle), |$this| $handle
        );
    };
    (@impl $ty:ty => $inner:ty, |$this:ident| $owner:expr, |$h:ident| $handle:expr) => {
        impl $crate::state::Access for $ty {
            fn owner(&self) -> Option<&str> {
                let $this = self;
                $owner
            }
            fn get<P: $crate::resource::Address + ?Sized>(
                &self,
                ptr: &P,
            ) -> impl std::future::Future<Output = Result<P::Resource, $crate::Error>> {
                <$inner>::get({ let $h = self; $handle }, ptr)
            }
            fn list(
                &self,
                kind: &$crate::resource::Kind,
                query: &$crate::resource::LabelQuery,
            ) -> impl std::future::Future<Output = Result<Vec<$crate::resource::AnyResource>, $crate::Error>> {
                <$inner>::list({ let $h = self; $handle }, kind, query)
            }
            fn create(
                &self,
                resource: impl Into<$crate::resource::AnyResource>,
            ) -> impl std::future::Future<Output = Result<$crate::resource::AnyResource, $crate::Error>> {
                <$inner>::create({ let $h = self; $handle }, resource)
            }
            fn update_with_phase(
                &self,
                resource: impl Into<$crate::resource::AnyResource>,
                expected_phase: $crate::state::ExpectedPhase,
            ) -> impl std::future::Future<Output = Result<$crate::resource::AnyResource, $crate::Error>> {
                <$inner>::update_with_phase({ let $h = self; $handle }, resource, expected_phase)
            }
            fn modify_with<S, P, E, F>(
                &self,
                ptr: &P,
                empty: E,
                change: F,
                expected_phase: $crate::state::ExpectedPhase,
            ) -> impl std::future::Future<Output = Result<$crate::resource::Resource<S>, $crate::Error>>
            where
                S: $crate::resource::Spec,
                P: $crate::resource::PointerTo<S> + ?Sized,
                E: Fn() -> $crate::resource::Resource<S> + Send + 'static,
                F: Fn(&mut $crate::resource::Resource<S>) + Send + 'static,
            {
                <$inner>::modify_with({ let $h = self; $handle }, ptr, empty, change, expected_phase)
            }
            fn teardown(
                &self,
                ptr: &$crate::resource::Pointer,
            ) -> impl std::future::Future<Output = Result<bool, $crate::Error>> {
                <$inner>::teardown({ let $h = self; $handle }, ptr)
            }
            fn destroy(&self, ptr: &$crate::resource::Pointer) -> impl std::future::Future<Output = Result<(), $crate::Error>> {
                <$inner>::destroy({ let $h = self; $handle }, ptr)
            }
        }
    };
}

pub(crate) use core_by_inherent;

core_by_inherent!(Client, |client| client.owner.as_deref());

/// The derived [`Access`] calls as methods of each implementor's own, so
/// that code naming a `Client` or a `ReconcileContext` needs no import. Each
/// is the trait's one implementation.
macro_rules! derived_calls {
    ($($ty:ty),*) => {$(
        impl $ty {
            /// As [`Access::get_typed`](crate::state::Access::get_typed): a plain pointer's resource as spec type `S`.
            ///
            /// # Errors
            /// As [`Access::get_typed`](crate::state::Access::get_typed).
            pub fn get_typed<S: $crate::resource::Spec>(&self, ptr: &$crate::resource::Pointer) -> impl std::future::Future<Output = Result<$crate::resource::Resource<S>, $crate::Error>> {
                $crate::state::Access::get_typed(self, ptr)
            }

            /// As [`Access::list_typed`](crate::state::Access::list_typed): the resources of `S` in `namespace`
            /// matching `query`, sorted by id.
            ///
            /// # Errors
            /// As [`Access::list_typed`](crate::state::Access::list_typed).
            pub fn list_typed<S: $crate::resource::Spec>(
                &self,
                namespace: &str,
                query: &$crate::resource::LabelQuery,
            ) -> impl std::future::Future<Output = Result<Vec<$crate::resource::Resource<S>>, $crate::Error>> {
                $crate::state::Access::list_typed(self, namespace, query)
            }

            /// As [`Access::list_decoded`](crate::state::Access::list_decoded): the same, with the ones that do not
            /// decode as `S` set apart.
            ///
            /// # Errors
            /// As [`Access::list_decoded`](crate::state::Access::list_decoded).
            pub fn list_decoded<S: $crate::resource::Spec>(
                &self,
                namespace: &str,
                query: &$crate::resource::LabelQuery,
            ) -> impl std::future::Future<Output = Result<$crate::state::Decoded<S>, $crate::Error>> {
                $crate::state::Access::list_decoded(self, namespace, query)
            }

            /// As [`Access::update`](crate::state::Access::update): updates `resource` (carrying the version
            /// it was read at); the stored one must be running.
            ///
            /// # Errors
            /// As [`Access::update`](crate::state::Access::update).
            pub fn update(
                &self,
                resource: impl Into<$crate::resource::AnyResource>,
            ) -> impl std::future::Future<Output = Result<$crate::resource::AnyResource, $crate::Error>> {
                $crate::state::Access::update(self, resource)
            }

            /// As [`Access::modify`](crate::state::Access::modify): creates or changes the resource at `ptr`
            /// through `change` (from `S::default()` when missing); writes
            /// nothing when nothing changed.
            ///
            /// # Errors
            /// As [`Access::modify`](crate::state::Access::modify).
            pub fn modify<S, P, F>(&self, ptr: &P, change: F) -> impl std::future::Future<Output = Result<$crate::resource::Resource<S>, $crate::Error>>
            where
                S: $crate::resource::Spec + Default,
                P: $crate::resource::PointerTo<S> + ?Sized,
                F: Fn(&mut $crate::resource::Resource<S>) + Send + 'static,
            {
                $crate::state::Access::modify(self, ptr, change)
            }

            /// As [`Access::modify_or`](crate::state::Access::modify_or): [`modify`](Self::modify) starting from
            /// `initial` when the resource is missing.
            ///
            /// # Errors
            /// As [`Access::modify`](crate::state::Access::modify).
            pub fn modify_or<S, P, F>(
                &self,
                ptr: &P,
                initial: S,
                change: F,
            ) -> impl std::future::Future<Output = Result<$crate::resource::Resource<S>, $crate::Error>>
            where
                S: $crate::resource::Spec,
                P: $crate::resource::PointerTo<S> + ?Sized,
                F: Fn(&mut $crate::resource::Resource<S>) + Send + 'static,
            {
                $crate::state::Access::modify_or(self, ptr, initial, change)
            }

            /// As [`Access::release`](crate::state::Access::release): tears the resource down and destroys it
            /// once nothing holds it; `true` when it is gone.
            ///
            /// # Errors
            /// As [`Access::release`](crate::state::Access::release).
            pub fn release(&self, ptr: &$crate::resource::Pointer) -> impl std::future::Future<Output = Result<bool, $crate::Error>> {
                $crate::state::Access::release(self, ptr)
            }
        }
    )*};
}

pub(crate) use derived_calls;

derived_calls!(Client);
