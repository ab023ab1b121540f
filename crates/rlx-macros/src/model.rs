//! `#[rlx_model]`: a struct of `Tensor` params with a `forward` method
//! becomes a model definition (`rlx::tensor::ModelDef`) that
//! `rlx::tensor::Model` traces, compiles lazily and runs.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Expr, Fields, Ident, ItemStruct, LitStr, Path, Token};

/// `#[rlx_model]` / `#[rlx_model(crate = path::to::tensor)]`.
pub(crate) struct ModelArgs {
    /// Where `ModelDef`, `Model`, `Tensor`, ... live (default `::rlx::tensor`).
    krate: Path,
}

impl Parse for ModelArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut krate: Path = syn::parse_quote!(::rlx::tensor);
        if !input.is_empty() {
            let key: Token![crate] = input.parse()?;
            input.parse::<Token![=]>().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "#[rlx_model]: the only argument is `crate = path` (where the tensor DSL lives, default `::rlx::tensor`)",
                )
            })?;
            krate = input.parse()?;
            let _ = key;
            if !input.is_empty() {
                return Err(input.error("#[rlx_model]: unexpected tokens after `crate = path`"));
            }
        }
        Ok(ModelArgs { krate })
    }
}

/// One `#[param(...)]` field.
struct ParamField {
    field: Ident,
    name: LitStr,
    dims: Vec<Expr>,
    dtype: Ident,
}

/// Parses `#[param(shape = [..], name = "..", dtype = F16)]` on `field`.
fn param_of(field: &syn::Field) -> syn::Result<ParamField> {
    let ident = field.ident.clone().expect("named fields");
    let attrs: Vec<_> = field
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("param"))
        .collect();
    let attr = match attrs.as_slice() {
        [a] => *a,
        [] => {
            return Err(syn::Error::new(
                ident.span(),
                format!(
                    "#[rlx_model]: field `{ident}` has no #[param(shape = [..])]; every field of a model is a param"
                ),
            ))
        }
        [_, second, ..] => {
            return Err(syn::Error::new(
                second.span(),
                format!("#[rlx_model]: field `{ident}` has more than one #[param]"),
            ))
        }
    };
    let mut dims = None;
    let mut name = LitStr::new(&ident.to_string(), ident.span());
    let mut dtype = Ident::new("F32", ident.span());
    attr.parse_nested_meta(|meta| {
        if meta.path.is_ident("shape") {
            let value: Expr = meta.value()?.parse()?;
            match value {
                Expr::Array(a) => {
                    dims = Some(a.elems.into_iter().collect::<Vec<_>>());
                    Ok(())
                }
                other => Err(syn::Error::new(
                    other.span(),
                    "#[param]: `shape` takes an array of dims, e.g. `shape = [784, 128]`",
                )),
            }
        } else if meta.path.is_ident("name") {
            name = meta.value()?.parse()?;
            Ok(())
        } else if meta.path.is_ident("dtype") {
            dtype = meta.value()?.parse()?;
            Ok(())
        } else {
            Err(meta.error(format!(
                "#[param]: unknown key `{}` (expected `shape`, `name` or `dtype`)",
                meta.path
                    .get_ident()
                    .map(|i| i.to_string())
                    .unwrap_or_else(|| "?".into())
            )))
        }
    })?;
    let dims = dims.ok_or_else(|| {
        syn::Error::new(
            attr.span(),
            format!("#[param] of field `{ident}` needs a shape: #[param(shape = [..])]"),
        )
    })?;
    Ok(ParamField {
        field: ident,
        name,
        dims,
        dtype,
    })
}

/// Expands the struct; `#[param]` attributes are consumed.
pub(crate) fn expand(args: ModelArgs, mut item: ItemStruct) -> syn::Result<TokenStream> {
    if !item.generics.params.is_empty() {
        return Err(syn::Error::new(
            item.generics.span(),
            "#[rlx_model]: a model struct cannot be generic",
        ));
    }
    let fields = match &mut item.fields {
        Fields::Named(f) => &mut f.named,
        other => {
            return Err(syn::Error::new(
                other.span(),
                "#[rlx_model] needs a struct with named fields, one per param",
            ))
        }
    };
    let params = fields
        .iter()
        .map(param_of)
        .collect::<syn::Result<Vec<_>>>()?;
    for (i, p) in params.iter().enumerate() {
        if let Some(q) = params[..i]
            .iter()
            .find(|q| q.name.value() == p.name.value())
        {
            let mut e = syn::Error::new(
                p.name.span(),
                format!(
                    "#[rlx_model]: param name \"{}\" is used by both `{}` and `{}`",
                    p.name.value(),
                    q.field,
                    p.field
                ),
            );
            e.combine(syn::Error::new(q.field.span(), "first used here"));
            return Err(e);
        }
    }
    for f in fields.iter_mut() {
        f.attrs.retain(|a| !a.path().is_ident("param"));
    }

    let krate = &args.krate;
    let ident = &item.ident;
    let model_name = LitStr::new(&ident.to_string(), ident.span());
    let specs = params.iter().map(|p| {
        let (name, dims, dtype) = (&p.name, &p.dims, &p.dtype);
        quote! {
            (
                ::std::string::String::from(#name),
                #krate::Shape::new(&[#((#dims) as usize),*], #krate::DType::#dtype),
            )
        }
    });
    let declare = params.iter().enumerate().map(|(i, p)| {
        let field = &p.field;
        quote! { #field: scope.param(&specs[#i].0, specs[#i].1.clone()) }
    });
    // Spanned at the struct so a missing `forward` is reported there.
    let call = quote_spanned! {ident.span()=>
        #krate::call_forward(#ident::forward, self, inputs)
    };
    Ok(quote! {
        #item

        impl #krate::ModelDef for #ident {
            const NAME: &'static str = #model_name;

            fn param_specs() -> ::std::vec::Vec<(::std::string::String, #krate::Shape)> {
                ::std::vec![#(#specs),*]
            }

            fn declare(scope: &#krate::GraphScope) -> Self {
                let specs = <Self as #krate::ModelDef>::param_specs();
                #ident { #(#declare),* }
            }

            fn trace(
                &self,
                inputs: &[#krate::Tensor],
            ) -> #krate::Result<::std::vec::Vec<#krate::Tensor>> {
                #call
            }
        }

        impl #ident {
            /// A `Model` of this definition on the CPU (compiled on the
            /// first `forward`).
            pub fn model() -> #krate::Model<#ident> {
                #krate::Model::new()
            }

            /// A `Model` of this definition on a device, with compile options.
            pub fn model_with(opts: #krate::JitOptions) -> #krate::Model<#ident> {
                #krate::Model::with_options(opts)
            }
        }
    })
}
