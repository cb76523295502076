//! `#[derive(Spec)]` for [cosi-runtime](https://docs.rs/cosi-runtime): use it
//! through `cosi_runtime::resource::Spec` (or the prelude), not from here.
//!
//! ```ignore
//! use cosi_runtime::prelude::*;
//!
//! #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
//! #[spec(type = "Links.net.cosi.dev")]
//! struct Link {
//!     mtu: u32,
//! }
//! assert_eq!(Link::TYPE, "Links.net.cosi.dev");
//! ```
//!
//! The type must be given: a resource type is part of the stored address,
//! so it is never guessed from the Rust name. The other traits `Spec`
//! requires (`Clone`, `PartialEq`, `Debug`, `Serialize`, `Deserialize`) are
//! derived or written as usual; a missing one is the compiler's usual error.

#![warn(missing_docs)]

use proc_macro::TokenStream;
use quote::quote;
use syn::{DeriveInput, LitStr, parse_macro_input};

/// Implements `cosi_runtime::resource::Spec` with the type given by
/// `#[spec(type = "Plural.group.example")]`.
#[proc_macro_derive(Spec, attributes(spec))]
pub fn derive_spec(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn expand(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let resource_type = resource_type(input)?;
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    Ok(quote! {
        impl #impl_generics ::cosi_runtime::resource::Spec for #name #ty_generics #where_clause {
            const TYPE: &'static str = #resource_type;
        }
    })
}

/// The `type = "..."` of the one `#[spec(...)]` attribute, checked.
fn resource_type(input: &DeriveInput) -> syn::Result<LitStr> {
    let mut found: Option<LitStr> = None;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("spec")) {
        attr.parse_nested_meta(|meta| {
            if !meta.path.is_ident("type") {
                return Err(meta.error("unknown spec attribute; expected `type = \"...\"`"));
            }
            let value: LitStr = meta.value()?.parse()?;
            if found.is_some() {
                return Err(meta.error("`type` given twice"));
            }
            found = Some(value);
            Ok(())
        })?;
    }
    let Some(value) = found else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "#[derive(Spec)] needs #[spec(type = \"Plural.group.example\")]",
        ));
    };
    let text = value.value();
    if text.is_empty() || text.len() > 256 || text.chars().any(char::is_control) {
        return Err(syn::Error::new_spanned(
            &value,
            "a resource type is 1 to 256 bytes with no control characters",
        ));
    }
    Ok(value)
}
