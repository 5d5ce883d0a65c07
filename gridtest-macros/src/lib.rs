//! Procedural macros for gridtest (re-exported by the `gridtest` crate; depend on that).
//!
//! * `#[derive(Params)]` turns a struct with named fields into a strategy's parameter schema.
//! * `#[derive(Choice)]` makes a fieldless enum a choice parameter.
//! * `#[gridtest::strategy(name = "…")]` registers an `impl Strategy for T` by name.
//!
//! Each macro is split parse → IR → codegen; errors carry spans and are pinned by trybuild
//! tests in the workspace's `tests/ui/`.

mod choice;
mod params;
mod strategy;

use proc_macro::TokenStream;

/// Derives `gridtest::Params` for a struct with named fields: its schema (field names and
/// kinds) and construction from a `ParamSet`. Fields may be integers, `f32`/`f64`, `bool` or
/// `String`.
#[proc_macro_derive(Params)]
pub fn derive_params(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    params::parse(&input)
        .map(|ir| params::codegen(&ir))
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Derives a choice parameter for a fieldless enum: `ParamType` (its variants, in snake case,
/// are the values an axis may hold; any other value is refused when the grid is checked),
/// `From<Enum> for ParamValue` (so `.axis("side", [Side::Long, Side::Short])` or
/// `.axis("side", Side::ALL)`), and the inherent `ALL` and `choice_name`.
#[proc_macro_derive(Choice)]
pub fn derive_choice(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    choice::parse(&input)
        .map(|ir| choice::codegen(&ir))
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Registers `impl Strategy for T` under a name, so any node can run it by that name:
/// `#[gridtest::strategy(name = "sma_crossover")]`, optionally `version = "2"` (default: the
/// crate's version) and `carry` (the strategy's state travels between slices of a history
/// through serde: see `gridtest::Strategy::CARRY`).
#[proc_macro_attribute]
pub fn strategy(args: TokenStream, item: TokenStream) -> TokenStream {
    let args = proc_macro2::TokenStream::from(args);
    let item = proc_macro2::TokenStream::from(item);
    strategy::parse(args, item.clone())
        .map(|ir| strategy::codegen(&ir))
        .unwrap_or_else(|e| {
            // Keep the item so that one mistake does not cascade into unrelated errors.
            let mut out = e.into_compile_error();
            out.extend(item);
            out
        })
        .into()
}
