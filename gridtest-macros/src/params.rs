//! `#[derive(Params)]`: parse → IR → codegen.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, Type};

/// What the derive needs to know.
pub(crate) struct ParamsIr {
    name: Ident,
    fields: Vec<(Ident, Type)>,
}

pub(crate) fn parse(input: &DeriveInput) -> syn::Result<ParamsIr> {
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            "a `#[derive(Params)]` struct cannot be generic: its fields are concrete parameter types",
        ));
    }
    let fields = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(named) => named
                .named
                .iter()
                .map(|f| (f.ident.clone().expect("named field"), f.ty.clone()))
                .collect(),
            Fields::Unit => Vec::new(),
            Fields::Unnamed(u) => {
                return Err(syn::Error::new(
                    u.span(),
                    "`#[derive(Params)]` needs named fields: each field name is a grid axis, \
                     e.g. `struct P { fast: usize, slow: usize }`",
                ));
            }
        },
        Data::Enum(e) => {
            return Err(syn::Error::new(
                e.enum_token.span,
                "`#[derive(Params)]` works on structs only: make each parameter a named field \
                 (a choice between names is a field whose enum has `#[derive(gridtest::Choice)]`)",
            ));
        }
        Data::Union(u) => {
            return Err(syn::Error::new(
                u.union_token.span,
                "`#[derive(Params)]` works on structs only",
            ));
        }
    };
    Ok(ParamsIr {
        name: input.ident.clone(),
        fields,
    })
}

pub(crate) fn codegen(ir: &ParamsIr) -> TokenStream {
    let name = &ir.name;
    let n = ir.fields.len();
    let schema = ir.fields.iter().map(|(ident, ty)| {
        let field = ident.to_string();
        quote_spanned! { ty.span() =>
            ::gridtest::__private::typed::<#ty>().field(#field)
        }
    });
    let reads = ir.fields.iter().map(|(ident, ty)| {
        let field = ident.to_string();
        // The same call, at the same place, as in the schema: an unsupported type is one
        // error, not one per use.
        quote_spanned! { ty.span() =>
            #ident: ::gridtest::__private::typed::<#ty>().read(set, #field)?
        }
    });
    quote! {
        #[automatically_derived]
        impl ::gridtest::Params for #name {
            fn schema() -> &'static [::gridtest::__private::ParamField] {
                static FIELDS: [::gridtest::__private::ParamField; #n] = [#(#schema),*];
                &FIELDS
            }

            fn from_param_set(
                set: &::gridtest::ParamSet,
            ) -> ::core::result::Result<Self, ::gridtest::ParamError> {
                let _ = set;
                ::core::result::Result::Ok(Self { #(#reads),* })
            }
        }
    }
}
