//! [`Decoded`]: a typed list that keeps the resources that decode apart from
//! those that don't, and [`State::list_decoded`], which reads one.

use crate::Error;
use crate::resource::{AnyResource, Kind, LabelQuery, Pointer, Resource, Spec};
use crate::state::State;

/// A typed list that does not fail for one bad resource: every resource
/// whose spec decodes as `S`, and for each one that does not (written
/// dynamically, or in an older format), its pointer and the error.
#[derive(Debug)]
pub struct Decoded<S: Spec> {
    /// The resources that decoded, sorted by id.
    pub resources: Vec<Resource<S>>,
    /// The ones that did not, with why ([`Error::TypeMismatch`]).
    pub undecodable: Vec<(Pointer, Error)>,
}

impl<S: Spec> Decoded<S> {
    pub(crate) fn from_list(list: Vec<AnyResource>) -> Self {
        let mut decoded =
            Decoded { resources: Vec::with_capacity(list.len()), undecodable: vec![] };
        for resource in list {
            match resource.typed::<S>() {
                Ok(typed) => decoded.resources.push(typed),
                Err(e) => decoded.undecodable.push((resource.pointer().clone(), e)),
            }
        }
        decoded
    }
}

impl State {
    /// Every resource of `S` in `namespace` matching `query`, decoded one by
    /// one: a resource that does not decode as `S` is reported, not fatal.
    ///
    /// # Errors
    /// As [`list`](State::list).
    pub async fn list_decoded<S: Spec>(
        &self,
        namespace: &str,
        query: &LabelQuery,
    ) -> Result<Decoded<S>, Error> {
        Ok(Decoded::from_list(self.list(&Kind::of::<S>(namespace), query).await?))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_specs::Mtu;
    use super::*;

    #[actix::test]
    async fn a_typed_list_keeps_every_resource_that_decodes_and_names_the_bad_one() {
        let state = State::start();
        let user = state.client();
        user.create(Resource::new("net", "a", Mtu(1))).await.unwrap();
        // A dynamic write of the same type whose spec is not an Mtu.
        let bad = crate::resource::DynamicResource::new(
            crate::resource::Metadata::new(Pointer::typed::<Mtu>("net", "b").erase()),
            serde_json::json!({"not": "a number"}),
        );
        user.create(bad).await.unwrap();
        user.create(Resource::new("net", "c", Mtu(3))).await.unwrap();
        assert!(
            user.list_typed::<Mtu>("net", &LabelQuery::all()).await.unwrap_err().is_type_mismatch()
        );

        let listed = user.list_decoded::<Mtu>("net", &LabelQuery::all()).await.unwrap();
        let ids: Vec<_> = listed.resources.iter().map(|r| r.id().to_owned()).collect();
        assert_eq!(ids, ["a", "c"]);
        assert_eq!(listed.undecodable.len(), 1);
        assert_eq!(listed.undecodable[0].0.id(), "b");
        assert!(listed.undecodable[0].1.is_type_mismatch());
    }
}
