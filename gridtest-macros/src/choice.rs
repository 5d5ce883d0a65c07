//! `#[derive(Choice)]`: a fieldless enum as a choice parameter. parse → IR → codegen.

use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident};

/// What the derive needs to know: the enum and each variant with its name on the grid.
pub(crate) struct ChoiceIr {
    name: Ident,
    variants: Vec<(Ident, String)>,
}

pub(crate) fn parse(input: &DeriveInput) -> syn::Result<ChoiceIr> {
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            "a `#[derive(Choice)]` enum cannot be generic",
        ));
    }
    let Data::Enum(data) = &input.data else {
        return Err(syn::Error::new(
            input.ident.span(),
            "`#[derive(Choice)]` works on enums whose variants have no fields, e.g. \
             `enum Side { Long, Short }`",
        ));
    };
    if data.variants.is_empty() {
        return Err(syn::Error::new(
            input.ident.span(),
            "a `#[derive(Choice)]` enum needs at least one variant",
        ));
    }
    let mut variants = Vec::new();
    let mut errors: Option<syn::Error> = None;
    for v in &data.variants {
        if matches!(v.fields, Fields::Unit) {
            variants.push((v.ident.clone(), snake_case(&v.ident.to_string())));
        } else {
            let e = syn::Error::new(
                v.fields.span(),
                format!(
                    "variant `{}` has fields: a choice is one of a few names, so every \
                     variant of a `#[derive(Choice)]` enum must be a plain name",
                    v.ident
                ),
            );
            match &mut errors {
                Some(all) => all.combine(e),
                None => errors = Some(e),
            }
        }
    }
    if let Some(e) = errors {
        return Err(e);
    }
    Ok(ChoiceIr {
        name: input.ident.clone(),
        variants,
    })
}

/// `MeanRevert` → `mean_revert`.
fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

pub(crate) fn codegen(ir: &ChoiceIr) -> TokenStream {
    let name = &ir.name;
    let type_name = name.to_string();
    let idents: Vec<&Ident> = ir.variants.iter().map(|(i, _)| i).collect();
    let names: Vec<&str> = ir.variants.iter().map(|(_, n)| n.as_str()).collect();
    let n = ir.variants.len();
    quote! {
        #[automatically_derived]
        impl #name {
            /// Every variant, in declaration order (an axis of all of them:
            /// `.axis("side", Side::ALL)`).
            pub const ALL: [Self; #n] = [#(Self::#idents),*];

            /// The variant's name on the grid and in the outputs.
            #[must_use]
            pub const fn choice_name(&self) -> &'static str {
                match self {
                    #(Self::#idents => #names),*
                }
            }
        }

        #[automatically_derived]
        impl ::gridtest::__private::ParamType for #name {
            const KIND: ::gridtest::ParamKind = ::gridtest::ParamKind::Choice;
            const RUST_TYPE: &'static str = #type_name;
            const CHOICES: &'static [&'static str] = &[#(#names),*];

            fn from_value(value: &::gridtest::ParamValue) -> ::core::option::Option<Self> {
                match value {
                    ::gridtest::ParamValue::Choice(s) => match s.as_str() {
                        #(#names => ::core::option::Option::Some(Self::#idents),)*
                        _ => ::core::option::Option::None,
                    },
                    _ => ::core::option::Option::None,
                }
            }
        }

        #[automatically_derived]
        impl ::core::convert::From<#name> for ::gridtest::ParamValue {
            fn from(value: #name) -> Self {
                ::gridtest::ParamValue::Choice(value.choice_name().to_owned())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn variant_names_become_snake_case() {
        assert_eq!(super::snake_case("Long"), "long");
        assert_eq!(super::snake_case("MeanRevert"), "mean_revert");
        assert_eq!(super::snake_case("A"), "a");
    }
}
