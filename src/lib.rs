//! # cosi-runtime
//!
//! Build operating systems and control planes out of small controllers, on actix.
//!
//! Resources (strict [`Metadata`](resource::Metadata) plus an opaque spec) live
//! in a [`State`] whose single actor serializes every change and tells
//! watchers about it.
//!
//! ## Where to start
//! - [`resource`]: the data model ([`Resource`](resource::Resource),
//!   [`Spec`](resource::Spec), [`Pointer`](resource::Pointer), ...).
//! - [`State`]: create, read, update, tear down and watch resources.
//! - [`finalizer`]: how a teardown waits for the controllers that hold a resource.
//!
//! ```
//! use cosi_runtime::prelude::*;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
//! struct Hostname(String);
//! impl Spec for Hostname {
//!     const TYPE: &'static str = "Hostnames.net.cosi.dev";
//! }
//!
//! # actix::System::new().block_on(async {
//! let state = State::start();
//! let created = state.create(Resource::new("network", "hostname", Hostname("node-1".into())), None).await?;
//! assert_eq!(created.version().get(), 1);
//! # Ok::<(), cosi_runtime::Error>(())
//! # }).unwrap();
//! ```

#![warn(missing_docs, missing_debug_implementations, rust_2018_idioms)]
#![deny(unsafe_code)]

mod activity;
mod error;
pub mod finalizer;
pub mod resource;
pub mod state;

pub use error::{Error, Result};
pub use state::State;

/// The names most programs need, in one import.
pub mod prelude {
    pub use crate::error::Error;
    pub use crate::resource::{
        AnyResource, Kind, LabelQuery, Metadata, Phase, Pointer, Resource, Spec, Version,
    };
    pub use crate::state::{Event, ExpectedPhase, State, WatchEvent};
}
