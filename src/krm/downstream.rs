//! [`Downstream`]: a specific downstream function. For a GVK whose objects
//! carry an owner annotation, it removes the delete-marked ones and their
//! conditions (the delete is always done downstream), and actuates the others
//! whose condition is `False`, then sets that condition `True`. Objects
//! without an owner are ignored entirely.

use std::fmt;

use super::conditions::{Condition, ConditionEdits, DEFAULT_PREFIX, Keys, Status};
use super::function::{Declaration, Function};
use super::object::{Gvk, Object};
use super::resource_list::ResourceList;
use super::results::FnResult;

/// Actuates one object (changes it in place); `Err(reason)` is an error result.
pub type ActuateFn = dyn Fn(&mut Object) -> Result<(), String> + Send + Sync;

/// A specific downstream function.
pub struct Downstream {
    name: String,
    keys: Keys,
    for_: Gvk,
    watches: Vec<Gvk>,
    actuate: Box<ActuateFn>,
}

impl fmt::Debug for Downstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Downstream")
            .field("name", &self.name)
            .field("for", &self.for_)
            .field("watches", &self.watches)
            .finish_non_exhaustive()
    }
}

impl Downstream {
    /// A downstream function named `name`, For `gvk`, actuating with `actuate`.
    pub fn new(
        name: impl Into<String>,
        gvk: Gvk,
        actuate: impl Fn(&mut Object) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        Downstream {
            name: name.into(),
            keys: Keys::new(DEFAULT_PREFIX),
            for_: gvk,
            watches: Vec::new(),
            actuate: Box::new(actuate),
        }
    }

    /// Adds a GVK the function reads.
    pub fn watch(mut self, gvk: Gvk) -> Self {
        self.watches.push(gvk);
        self
    }

    /// Uses another annotation prefix (default `fnruntime.nephio.org/`).
    pub fn prefix(mut self, prefix: &str) -> Self {
        self.keys = Keys::new(prefix);
        self
    }
}

impl Function for Downstream {
    fn name(&self) -> &str {
        &self.name
    }

    fn declaration(&self) -> Declaration {
        Declaration {
            for_: Some(self.for_.clone()),
            owns: Vec::new(),
            watches: self.watches.clone(),
        }
    }

    fn process(&self, list: &mut ResourceList) {
        let Some(kpt) = list.kptfile_index() else { return };
        let mut edits = ConditionEdits::of(&list.items[kpt]);
        let mut remove = Vec::new();
        let mut results = Vec::new();
        for (i, item) in list.items.iter_mut().enumerate() {
            if !item.is(&self.for_) {
                continue;
            }
            let Some(owner) = self.keys.owner_of(item).map(str::to_string) else { continue };
            let Some(type_) = item.reference() else { continue };
            if self.keys.is_delete_marked(item) {
                remove.push(i);
                edits.remove(&type_);
                continue;
            }
            let Some(condition) = edits.get(&type_) else { continue };
            if condition.status != Status::False {
                continue;
            }
            match (self.actuate)(item) {
                Ok(()) => {
                    edits.set(Condition::new(&type_, Status::True, &owner, "actuated"));
                }
                Err(reason) => {
                    results.push(
                        FnResult::error(format!("{}: cannot actuate {type_}: {reason}", self.name))
                            .about(item),
                    );
                }
            }
        }
        edits.apply(&mut list.items[kpt]);
        // One pass (a `Vec::remove` per item moved the rest of the list each time).
        if !remove.is_empty() {
            let mut remove = remove.into_iter().peekable();
            let mut i = 0;
            list.items.retain(|_| {
                let keep = remove.next_if_eq(&i).is_none();
                i += 1;
                keep
            });
        }
        list.results.extend(results);
    }
}
