//! [`Wildcard`]: the final function of a choreography. It is ready when at
//! least one other Kptfile condition exists and all others are `True`; then it
//! upserts the object it generates and sets its own condition `True` (reason
//! `Ready`); otherwise it removes that object and sets its condition `False`
//! (reason `NotReady`). Its own condition type is `<apiVersion>.<Kind>.<name>`
//! of its object, whose name defaults to the Kptfile's name.

use std::fmt;

use super::conditions::{self, Condition, DEFAULT_PREFIX, Keys, Status};
use super::function::{Declaration, Function};
use super::object::{Gvk, Object};
use super::resource_list::ResourceList;
use super::results::FnResult;

/// Generates the wildcard's object from the whole list (apiVersion, kind and
/// name are set by the runtime).
pub type GenerateFn = dyn Fn(&ResourceList, &Keys) -> Result<Object, String> + Send + Sync;

/// A wildcard downstream function.
pub struct Wildcard {
    name: String,
    keys: Keys,
    gvk: Gvk,
    object_name: Option<String>,
    watches: Vec<Gvk>,
    generate: Box<GenerateFn>,
}

impl fmt::Debug for Wildcard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wildcard")
            .field("name", &self.name)
            .field("gvk", &self.gvk)
            .field("object_name", &self.object_name)
            .finish_non_exhaustive()
    }
}

impl Wildcard {
    /// A wildcard function named `name` that maintains one object of `gvk`.
    pub fn new(
        name: impl Into<String>,
        gvk: Gvk,
        generate: impl Fn(&ResourceList, &Keys) -> Result<Object, String> + Send + Sync + 'static,
    ) -> Self {
        Wildcard {
            name: name.into(),
            keys: Keys::new(DEFAULT_PREFIX),
            gvk,
            object_name: None,
            watches: Vec::new(),
            generate: Box::new(generate),
        }
    }

    /// Names the object (default: the Kptfile's name).
    pub fn object_name(mut self, name: impl Into<String>) -> Self {
        self.object_name = Some(name.into());
        self
    }

    /// Adds a GVK the generate function reads.
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

impl Function for Wildcard {
    fn name(&self) -> &str {
        &self.name
    }

    fn declaration(&self) -> Declaration {
        Declaration {
            for_: Some(self.gvk.clone()),
            owns: Vec::new(),
            watches: self.watches.clone(),
        }
    }

    fn process(&self, list: &mut ResourceList) {
        let Some(kpt) = list.kptfile_index() else { return };
        let mut kptfile = list.items[kpt].clone();
        let Some(name) = self.object_name.clone().or_else(|| kptfile.name().map(str::to_string))
        else {
            return;
        };
        let own = self.gvk.reference_to(&name);
        let others: Vec<Condition> =
            conditions::conditions(&kptfile).into_iter().filter(|c| c.type_ != own).collect();
        let pending = others.iter().filter(|c| c.status != Status::True).count();
        let ready = !others.is_empty() && pending == 0;
        let existing = list.items.iter().position(|o| {
            o.is(&self.gvk) && o.name() == Some(name.as_str()) && o.namespace().is_none()
        });
        if ready {
            let generated = match (self.generate)(list, &self.keys) {
                Ok(object) => object,
                Err(reason) => {
                    list.results.push(FnResult::error(format!(
                        "{}: cannot generate {own}: {reason}",
                        self.name
                    )));
                    return;
                }
            };
            let skeleton = Object::new(&self.gvk, &name);
            match existing {
                Some(i) => {
                    list.items[i].update_from(&generated);
                }
                None => {
                    let mut fresh = skeleton;
                    fresh.update_from(&generated);
                    list.items.push(fresh);
                }
            }
            conditions::set(&mut kptfile, &Condition::new(&own, Status::True, "Ready", "ready"));
        } else {
            if let Some(i) = existing {
                list.items.remove(i);
            }
            let message = if others.is_empty() {
                "no other condition yet".to_string()
            } else {
                format!("{pending} condition(s) pending")
            };
            conditions::set(
                &mut kptfile,
                &Condition::new(&own, Status::False, "NotReady", message),
            );
        }
        let kpt = list.kptfile_index().unwrap_or(kpt);
        list.items[kpt] = kptfile;
    }
}
