//! Writes: create (POST), replace (PUT), patch (PATCH: merge, JSON, apply)
//! and delete (DELETE), all as the user (no owner): a resource owned by a
//! controller is read-only to clients.

mod desired;
mod gc;
mod handlers;
mod managed;
mod request;
mod scale;

pub(super) use handlers::{
    create, delete, delete_collection, patch, patch_status, replace, replace_status,
};
pub(super) use request::no_status;
pub(super) use scale::{get_scale, no_scale, patch_scale, replace_scale};
