//! [`TypedPointer<S>`]: a pointer that knows its spec type, and the
//! [`PointerTo`] / [`Address`] traits that let calls infer it.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::ops::Deref;

use super::{AnyResource, Id, Kind, Pointer, Resource, Spec};
use crate::Error;

/// A [`Pointer`] to a resource of spec type `S`.
///
/// Reads and modifies through it infer `S`: no closure annotation, no
/// turbofish. It derefs to the plain `Pointer` (so it goes wherever a
/// `&Pointer` does) and [`erase`](TypedPointer::erase)s into one on demand.
///
/// ```
/// use cosi_runtime::prelude::*;
///
/// #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
/// #[spec(type = "Links.net.cosi.dev")]
/// struct Link { mtu: u32 }
///
/// # actix::System::new().block_on(async {
/// let state = State::start().client();
/// let eth0 = Pointer::typed::<Link>("network", "eth0");
/// state.modify(&eth0, |link| link.spec_mut().mtu = 9000).await?; // `link: &mut Resource<Link>`
/// let link = state.get(&eth0).await?; // a Resource<Link>
/// assert_eq!(link.spec().mtu, 9000);
///
/// let erased: Pointer = eth0.erase();
/// assert_eq!(state.get(&erased).await?.version().get(), 1); // an AnyResource
/// # Ok::<(), cosi_runtime::Error>(())
/// # }).unwrap();
/// ```
pub struct TypedPointer<S> {
    pointer: Pointer,
    _spec: PhantomData<fn() -> S>,
}

impl<S: Spec> TypedPointer<S> {
    /// The pointer to resource `id` of type `S` in `namespace` (users write
    /// [`Pointer::typed`]).
    #[doc(hidden)]
    pub fn new(namespace: impl AsRef<str>, id: impl Into<Id>) -> Self {
        TypedPointer { pointer: Kind::of::<S>(namespace).pointer(id), _spec: PhantomData }
    }

    /// Types a plain pointer.
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when the pointer's type is not `S::TYPE`.
    pub fn try_from_pointer(pointer: Pointer) -> Result<Self, Error> {
        if pointer.resource_type() != S::TYPE {
            let actual = pointer.resource_type().to_owned();
            return Err(Error::TypeMismatch {
                resource: pointer,
                expected: S::TYPE.to_owned(),
                actual,
            });
        }
        Ok(TypedPointer { pointer, _spec: PhantomData })
    }
}

impl<S> TypedPointer<S> {
    /// The plain pointer, without the type.
    pub fn erase(self) -> Pointer {
        self.pointer
    }

    /// The plain pointer, borrowed.
    pub fn as_pointer(&self) -> &Pointer {
        &self.pointer
    }
}

impl<S> Deref for TypedPointer<S> {
    type Target = Pointer;

    fn deref(&self) -> &Pointer {
        &self.pointer
    }
}

impl<S> From<TypedPointer<S>> for Pointer {
    fn from(typed: TypedPointer<S>) -> Pointer {
        typed.pointer
    }
}

impl<S> Clone for TypedPointer<S> {
    fn clone(&self) -> Self {
        TypedPointer { pointer: self.pointer.clone(), _spec: PhantomData }
    }
}

impl<S> PartialEq for TypedPointer<S> {
    fn eq(&self, other: &Self) -> bool {
        self.pointer == other.pointer
    }
}

impl<S> Eq for TypedPointer<S> {}

impl<S> PartialEq<Pointer> for TypedPointer<S> {
    fn eq(&self, other: &Pointer) -> bool {
        self.pointer == *other
    }
}

impl<S> PartialEq<TypedPointer<S>> for Pointer {
    fn eq(&self, other: &TypedPointer<S>) -> bool {
        *self == other.pointer
    }
}

impl<S> Hash for TypedPointer<S> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.pointer.hash(state);
    }
}

impl<S> fmt::Debug for TypedPointer<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.pointer, f)
    }
}

impl<S> fmt::Display for TypedPointer<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.pointer, f)
    }
}

impl Pointer {
    /// `Pointer::typed::<S>(namespace, id).erase()`: the former constructor
    /// of a plain pointer from a spec type, kept for one release.
    #[doc(hidden)]
    pub fn of<S: Spec>(namespace: impl AsRef<str>, id: impl Into<Id>) -> Pointer {
        Kind::of::<S>(namespace).pointer(id)
    }

    /// A [`TypedPointer`]: the pointer to resource `id` of type `S` in
    /// `namespace`, keeping `S` for the calls that take it.
    pub fn typed<S: Spec>(namespace: impl AsRef<str>, id: impl Into<Id>) -> TypedPointer<S> {
        TypedPointer::new(namespace, id)
    }
}

impl Kind {
    /// The typed pointer to resource `id` of this kind.
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when the kind's type is not `S::TYPE`.
    pub fn typed_pointer<S: Spec>(&self, id: impl Into<Id>) -> Result<TypedPointer<S>, Error> {
        TypedPointer::try_from_pointer(self.pointer(id))
    }
}

impl<S: Spec> Resource<S> {
    /// This resource's address, typed.
    pub fn typed_pointer(&self) -> TypedPointer<S> {
        TypedPointer { pointer: self.pointer().clone(), _spec: PhantomData }
    }
}

/// Something that points at a resource of spec type `S`: a plain
/// [`Pointer`] (any `S`, named by the caller) or a [`TypedPointer<S>`] (its
/// own `S`, so the caller names nothing).
pub trait PointerTo<S> {
    /// The plain pointer.
    fn pointer(&self) -> &Pointer;
}

impl<S> PointerTo<S> for Pointer {
    fn pointer(&self) -> &Pointer {
        self
    }
}

impl<S> PointerTo<S> for TypedPointer<S> {
    fn pointer(&self) -> &Pointer {
        &self.pointer
    }
}

/// What a read through a pointer returns: a plain [`Pointer`] reads an
/// [`AnyResource`], a [`TypedPointer<S>`] a [`Resource<S>`].
pub trait Address {
    /// The resource a read returns.
    type Resource;

    /// The plain pointer.
    fn pointer(&self) -> &Pointer;

    /// Turns what the state returned into [`Self::Resource`].
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when the stored spec is not the pointer's type.
    fn read(resource: AnyResource) -> Result<Self::Resource, Error>;
}

impl Address for Pointer {
    type Resource = AnyResource;

    fn pointer(&self) -> &Pointer {
        self
    }

    fn read(resource: AnyResource) -> Result<AnyResource, Error> {
        Ok(resource)
    }
}

impl<S: Spec> Address for TypedPointer<S> {
    type Resource = Resource<S>;

    fn pointer(&self) -> &Pointer {
        &self.pointer
    }

    fn read(resource: AnyResource) -> Result<Resource<S>, Error> {
        resource.typed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Mtu(u32);
    impl Spec for Mtu {
        const TYPE: &'static str = "Mtus.net.cosi.dev";
    }

    #[test]
    fn a_typed_pointer_erases_to_the_same_pointer_and_compares_with_it() {
        let typed = Pointer::typed::<Mtu>("net", "eth0");
        let plain = Pointer::typed::<Mtu>("net", "eth0");
        assert_eq!(typed, plain);
        assert_eq!(plain, typed);
        assert_eq!(typed.to_string(), plain.to_string());
        assert_eq!(typed.id(), "eth0"); // through Deref
        assert_eq!(typed.clone().erase(), plain);
        assert_eq!(Resource::new("net", "eth0", Mtu(1)).typed_pointer(), typed);
    }

    #[test]
    fn typing_a_pointer_of_another_type_is_a_type_mismatch() {
        let other = Pointer::new("net", "Others.net.cosi.dev", "x");
        assert!(TypedPointer::<Mtu>::try_from_pointer(other).unwrap_err().is_type_mismatch());
        let kind = Kind::of::<Mtu>("net");
        assert_eq!(kind.typed_pointer::<Mtu>("a").unwrap().id(), "a");
    }
}
