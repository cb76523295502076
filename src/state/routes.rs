//! Which namespaces go to which backend.

/// Which namespaces a backend keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Namespaces {
    /// Every namespace not routed elsewhere.
    All,
    /// Exactly these.
    Only(Vec<String>),
}

impl<S: Into<String>, const N: usize> From<[S; N]> for Namespaces {
    fn from(list: [S; N]) -> Self {
        Namespaces::Only(list.into_iter().map(Into::into).collect())
    }
}

impl<S: Into<String>> From<Vec<S>> for Namespaces {
    fn from(list: Vec<S>) -> Self {
        Namespaces::Only(list.into_iter().map(Into::into).collect())
    }
}

/// Which namespaces go to which backend; the rest stay in memory only.
#[derive(Default)]
pub(crate) struct Routes {
    /// Fx, not SipHash: looked up for every request, with keys fixed at
    /// open (nothing a request sends is ever inserted).
    by_namespace: rustc_hash::FxHashMap<String, usize>,
    everything: Option<usize>,
}

impl Routes {
    /// Sends the namespaces of `namespaces` (or all of them) to backend `index`.
    pub(crate) fn add(&mut self, namespaces: &Namespaces, index: usize) {
        match namespaces {
            Namespaces::All => self.everything = Some(index),
            Namespaces::Only(list) => {
                for ns in list {
                    self.by_namespace.insert(ns.clone(), index);
                }
            }
        }
    }

    /// The backend of `namespace`, `None` for memory.
    pub(crate) fn route(&self, namespace: &str) -> Option<usize> {
        if self.by_namespace.is_empty() {
            return self.everything;
        }
        self.by_namespace.get(namespace).copied().or(self.everything)
    }

    /// Where every namespace goes, when they all go to one place:
    /// `Some(None)` for memory (nothing routed), `Some(Some(b))` when
    /// backend `b` takes every namespace; `None` when namespaces are split
    /// (some to one backend, the rest elsewhere or to memory).
    pub(crate) fn sole_destination(&self) -> Option<Option<usize>> {
        match self.everything {
            None if self.by_namespace.is_empty() => Some(None),
            None => None,
            Some(b) => self.by_namespace.values().all(|&i| i == b).then_some(Some(b)),
        }
    }

    /// The backends some namespace goes to (with repeats).
    pub(crate) fn destinations(&self) -> impl Iterator<Item = usize> + '_ {
        self.by_namespace.values().copied().chain(self.everything)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_namespace.is_empty() && self.everything.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::Namespaces;
    use super::*;

    #[test]
    fn routes_send_listed_namespaces_to_their_backend_and_the_rest_to_memory() {
        let mut routes = Routes::default();
        assert_eq!(routes.route("config"), None, "everything in memory by default");
        routes.add(&Namespaces::from(["config", "secrets"]), 0);
        assert_eq!(routes.route("config"), Some(0));
        assert_eq!(routes.route("secrets"), Some(0));
        assert_eq!(routes.route("status"), None);
        routes.add(&Namespaces::All, 1);
        assert_eq!(routes.route("status"), Some(1), "All takes what no list names");
        assert_eq!(routes.route("config"), Some(0));
    }

    #[test]
    fn a_sole_destination_only_when_every_namespace_goes_to_one_place() {
        let mut routes = Routes::default();
        assert_eq!(routes.sole_destination(), Some(None), "all in memory");
        routes.add(&Namespaces::from(["config"]), 0);
        assert_eq!(routes.sole_destination(), None, "config on 0, the rest in memory");
        routes.add(&Namespaces::All, 0);
        assert_eq!(routes.sole_destination(), Some(Some(0)));
        routes.add(&Namespaces::from(["status"]), 1);
        assert_eq!(routes.sole_destination(), None, "status on 1, the rest on 0");
        let mut sorted: Vec<_> = routes.destinations().collect();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 0, 1]);
    }
}
