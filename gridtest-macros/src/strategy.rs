//! `#[strategy(name = "…")]`: parse → IR → codegen.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ItemImpl, Lit, LitStr, Meta, MetaNameValue, Token, Type};

/// What the attribute needs to know.
pub(crate) struct StrategyIr {
    item: ItemImpl,
    ty: Type,
    name: LitStr,
    version: Option<LitStr>,
}

const USAGE: &str =
    "expected `#[gridtest::strategy(name = \"my_strategy\")]` on `impl Strategy for MyType { … }`";

fn string_arg(nv: &MetaNameValue) -> syn::Result<LitStr> {
    match &nv.value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(s.clone()),
        other => Err(syn::Error::new(
            other.span(),
            "expected a string literal, e.g. `name = \"sma_crossover\"`",
        )),
    }
}

fn unknown_argument(path: &syn::Path) -> syn::Error {
    syn::Error::new(
        path.span(),
        format!(
            "unknown argument `{}`: expected `name = \"…\"`, optionally `version = \"…\"` and `carry`",
            quote!(#path).to_string().replace(' ', "")
        ),
    )
}

pub(crate) fn parse(args: TokenStream, item: TokenStream) -> syn::Result<StrategyIr> {
    let args = Punctuated::<Meta, Token![,]>::parse_terminated
        .parse2(args)
        .map_err(|e| syn::Error::new(e.span(), format!("{e}; {USAGE}")))?;
    let (mut name, mut version, mut carry) = (None, None, false);
    for arg in &args {
        let nv = match arg {
            Meta::Path(path) if path.is_ident("carry") => {
                carry = true;
                continue;
            }
            Meta::NameValue(nv) => nv,
            other => return Err(unknown_argument(other.path())),
        };
        let key = nv
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        let slot = match key.as_str() {
            "name" => &mut name,
            "version" => &mut version,
            _ => return Err(unknown_argument(&nv.path)),
        };
        if slot.is_some() {
            return Err(syn::Error::new(
                nv.path.span(),
                format!("`{key}` is given twice"),
            ));
        }
        *slot = Some(string_arg(nv)?);
    }
    let name = name.ok_or_else(|| {
        syn::Error::new(
            Span::call_site(),
            "missing `name = \"…\"`: a registered strategy needs a name, e.g. \
             `#[gridtest::strategy(name = \"sma_crossover\")]`",
        )
    })?;
    let value = name.value();
    if value.is_empty()
        || !value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
    {
        return Err(syn::Error::new(
            name.span(),
            "a strategy name uses lowercase ASCII letters, digits, `_` and `-` only",
        ));
    }
    let item: ItemImpl = syn::parse2(item).map_err(|e| syn::Error::new(e.span(), USAGE))?;
    let Some((_, path, _)) = &item.trait_ else {
        return Err(syn::Error::new(
            item.self_ty.span(),
            "`#[gridtest::strategy]` goes on an `impl Strategy for MyType`, not on an inherent impl",
        ));
    };
    if path.segments.last().is_none_or(|s| s.ident != "Strategy") {
        return Err(syn::Error::new(
            path.span(),
            "`#[gridtest::strategy]` registers implementations of `gridtest::Strategy` only",
        ));
    }
    if !item.generics.params.is_empty() {
        return Err(syn::Error::new(
            item.generics.span(),
            "a registered strategy cannot be generic: register each concrete type under its own name",
        ));
    }
    let mut item = choose_path(item)?;
    if carry {
        carry_state(&mut item)?;
    }
    Ok(StrategyIr {
        ty: (*item.self_ty).clone(),
        item,
        name,
        version,
    })
}

/// Checks that the impl defines `on_data` (the targets path), `on_orders` (the orders path) or
/// `on_universe` (the portfolio path), and sets `const ORDERS: bool = true` or
/// `const UNIVERSE: bool = true` for the latter two unless the impl states them.
fn choose_path(mut item: ItemImpl) -> syn::Result<ItemImpl> {
    let defines = |name: &str| {
        item.items
            .iter()
            .any(|i| matches!(i, syn::ImplItem::Fn(f) if f.sig.ident == name))
    };
    let states = |name: &str| {
        item.items
            .iter()
            .any(|i| matches!(i, syn::ImplItem::Const(c) if c.ident == name))
    };
    let (data, orders, universe) = (
        defines("on_data"),
        defines("on_orders"),
        defines("on_universe"),
    );
    let (states_orders, states_universe, states_account) =
        (states("ORDERS"), states("UNIVERSE"), states("ACCOUNT"));
    let account = !states_account && reads_account(quote::ToTokens::to_token_stream(&item));
    if !data && !orders && !universe {
        return Err(syn::Error::new(
            item.self_ty.span(),
            "a strategy defines `fn on_data` (returns a target, the fast path), \
             `fn on_orders` (places orders through a `Broker`) or `fn on_universe` (sets a \
             target per symbol of a universe)",
        ));
    }
    if universe && orders {
        return Err(syn::Error::new(
            item.self_ty.span(),
            "`on_universe` sets targets per symbol; it cannot be combined with `on_orders`",
        ));
    }
    if orders && !states_orders {
        item.items.push(syn::parse_quote!(
            const ORDERS: bool = true;
        ));
    }
    if universe && !states_universe {
        item.items.push(syn::parse_quote!(
            const UNIVERSE: bool = true;
        ));
    }
    if account {
        item.items.push(syn::parse_quote!(
            const ACCOUNT: bool = true;
        ));
    }
    Ok(item)
}

/// `carry`: the strategy's state travels between slices of a history through serde (the type
/// derives `Serialize` and `Deserialize`).
fn carry_state(item: &mut ItemImpl) -> syn::Result<()> {
    let states = item.items.iter().any(|i| {
        matches!(i, syn::ImplItem::Const(c) if c.ident == "CARRY")
            || matches!(i, syn::ImplItem::Fn(f) if f.sig.ident == "save_state" || f.sig.ident == "restore_state")
    });
    if states {
        return Err(syn::Error::new(
            item.self_ty.span(),
            "`carry` implements `CARRY`, `save_state` and `restore_state`: remove them from the impl \
             or the argument",
        ));
    }
    item.items.push(syn::parse_quote!(
        const CARRY: bool = true;
    ));
    item.items.push(syn::parse_quote!(
        fn save_state(
            &self,
        ) -> ::core::result::Result<::std::vec::Vec<u8>, ::gridtest::strategy::CarryError> {
            ::gridtest::strategy::save_carried(self)
        }
    ));
    item.items.push(syn::parse_quote!(
        fn restore_state(
            &mut self,
            saved: &[u8],
        ) -> ::core::result::Result<(), ::gridtest::strategy::CarryError> {
            ::gridtest::strategy::restore_carried(self, saved)
        }
    ));
    Ok(())
}

/// Whether `tokens` call a method named `equity`, `position` or `cash` (`x.equity()`): the
/// impl reads its account through the cursor (a broker's methods of those names match too,
/// which costs nothing: the orders path always fills the account).
fn reads_account(tokens: proc_macro2::TokenStream) -> bool {
    use proc_macro2::TokenTree;
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    trees.iter().enumerate().any(|(i, t)| match t {
        TokenTree::Group(g) => reads_account(g.stream()),
        TokenTree::Punct(p) if p.as_char() == '.' => matches!(
            (trees.get(i + 1), trees.get(i + 2)),
            (Some(TokenTree::Ident(name)), Some(TokenTree::Group(args)))
                if matches!(name.to_string().as_str(), "equity" | "position" | "cash")
                    && args.delimiter() == proc_macro2::Delimiter::Parenthesis
        ),
        _ => false,
    })
}

pub(crate) fn codegen(ir: &StrategyIr) -> TokenStream {
    let StrategyIr {
        item,
        ty,
        name,
        version,
    } = ir;
    let version = match version {
        Some(v) => quote!(#v),
        None => quote!(::core::env!("CARGO_PKG_VERSION")),
    };
    quote! {
        #item

        impl ::gridtest::RegisteredStrategy for #ty {
            const NAME: &'static str = #name;
            const VERSION: &'static str = #version;
            const CRATE: &'static str =
                ::core::concat!(::core::env!("CARGO_PKG_NAME"), " ", ::core::env!("CARGO_PKG_VERSION"));
        }

        const _: () = {
            #[::gridtest::__private::linkme::distributed_slice(::gridtest::__private::STRATEGIES)]
            #[linkme(crate = ::gridtest::__private::linkme)]
            static ENTRY: ::gridtest::__private::StrategyEntry =
                ::gridtest::__private::entry::<#ty>();
        };
    }
}
