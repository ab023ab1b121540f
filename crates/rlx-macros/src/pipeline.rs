//! `pipeline_schedule!`: stages with their dependencies, sorted at compile
//! time.
//!
//! Grammar:
//!
//! ```text
//! schedule := attrs* vis? IDENT '{' stage (',' stage)* ','? '}'
//! stage    := IDENT '=>' '[' (IDENT (',' IDENT)* ','?)? ']'
//! ```

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{braced, bracketed, Attribute, Ident, LitStr, Token, Visibility};

/// One declared stage and the stages it waits for.
struct Stage {
    name: Ident,
    deps: Vec<Ident>,
}

impl Parse for Stage {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        input.parse::<Token![=>]>()?;
        let content;
        bracketed!(content in input);
        let deps = Punctuated::<Ident, Token![,]>::parse_terminated(&content)?;
        Ok(Stage {
            name,
            deps: deps.into_iter().collect(),
        })
    }
}

/// The whole macro input.
pub(crate) struct Schedule {
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    stages: Vec<Stage>,
}

impl Parse for Schedule {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let name: Ident = input.parse()?;
        let content;
        braced!(content in input);
        let stages = Punctuated::<Stage, Token![,]>::parse_terminated(&content)?;
        if stages.is_empty() {
            return Err(syn::Error::new(
                name.span(),
                "pipeline_schedule!: declare at least one stage (`stage => [deps]`)",
            ));
        }
        Ok(Schedule {
            attrs,
            vis,
            name,
            stages: stages.into_iter().collect(),
        })
    }
}

/// Indices of each stage's dependencies; an unknown or duplicate name is an
/// error at its span.
fn resolve(stages: &[Stage]) -> syn::Result<Vec<Vec<usize>>> {
    for (i, s) in stages.iter().enumerate() {
        if let Some(first) = stages[..i].iter().find(|p| p.name == s.name) {
            let mut e = syn::Error::new(
                s.name.span(),
                format!("pipeline_schedule!: stage `{}` is declared twice", s.name),
            );
            e.combine(syn::Error::new(first.name.span(), "first declared here"));
            return Err(e);
        }
    }
    let names: Vec<String> = stages.iter().map(|s| s.name.to_string()).collect();
    stages
        .iter()
        .map(|s| {
            s.deps
                .iter()
                .map(|d| {
                    names.iter().position(|n| d == n).ok_or_else(|| {
                        syn::Error::new(
                            d.span(),
                            format!(
                                "pipeline_schedule!: unknown stage `{d}` (stage `{}` depends on it; declared stages: {})",
                                s.name,
                                names.join(", ")
                            ),
                        )
                    })
                })
                .collect()
        })
        .collect()
}

/// Kahn's algorithm, taking ready stages in declaration order; returns the
/// order and each stage's level (its longest dependency chain), or the
/// indices of one cycle.
fn topo_sort(deps: &[Vec<usize>]) -> Result<(Vec<usize>, Vec<usize>), Vec<usize>> {
    let n = deps.len();
    let mut level = vec![0usize; n];
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let ready = (0..n).find(|&i| !done[i] && deps[i].iter().all(|&d| done[d]));
        match ready {
            Some(i) => {
                level[i] = deps[i].iter().map(|&d| level[d] + 1).max().unwrap_or(0);
                done[i] = true;
                order.push(i);
            }
            None => return Err(find_cycle(deps, &done)),
        }
    }
    Ok((order, level))
}

/// A cycle among the stages not yet scheduled: every one of them waits on
/// another unscheduled one, so walking dependencies must revisit a stage.
fn find_cycle(deps: &[Vec<usize>], done: &[bool]) -> Vec<usize> {
    let start = (0..deps.len())
        .find(|&i| !done[i])
        .expect("a stage is left");
    let mut path = vec![start];
    let mut at = start;
    loop {
        at = *deps[at]
            .iter()
            .find(|&&d| !done[d])
            .expect("an unscheduled stage waits on another");
        if let Some(pos) = path.iter().position(|&p| p == at) {
            // Report in execution direction: a dependency before its dependant.
            let mut cycle = path.split_off(pos);
            cycle.reverse();
            return cycle;
        }
        path.push(at);
    }
}

/// Expands a [`Schedule`] into a unit struct with the order as consts.
pub(crate) fn expand(s: Schedule) -> syn::Result<TokenStream> {
    let deps = resolve(&s.stages)?;
    let (order, level) = topo_sort(&deps).map_err(|cycle| {
        let names: Vec<String> = cycle
            .iter()
            .map(|&i| s.stages[i].name.to_string())
            .collect();
        syn::Error::new(
            s.stages[cycle[0]].name.span(),
            format!(
                "pipeline_schedule!: the stages form a cycle: {} -> {}",
                names.join(" -> "),
                names[0]
            ),
        )
    })?;
    let Schedule {
        attrs, vis, name, ..
    } = &s;
    let n = s.stages.len();
    let lit = |i: usize| LitStr::new(&s.stages[i].name.to_string(), Span::call_site());
    let declared = (0..n).map(lit);
    let ordered = order.iter().map(|&i| lit(i));
    let levels = order.iter().map(|&i| level[i]);
    let dep_lists = order.iter().map(|&i| {
        let d = deps[i].iter().map(|&j| lit(j));
        quote! { &[#(#d),*] }
    });
    let doc = format!(
        "Pipeline schedule `{name}` (from `pipeline_schedule!`): {}.",
        order
            .iter()
            .map(|&i| s.stages[i].name.to_string())
            .collect::<Vec<_>>()
            .join(" -> ")
    );
    Ok(quote! {
        #(#attrs)*
        #[doc = #doc]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        #vis struct #name;

        impl #name {
            /// The stages in declaration order.
            pub const STAGES: [&'static str; #n] = [#(#declared),*];
            /// The stages in a dependency-respecting order (ties keep declaration order).
            pub const ORDER: [&'static str; #n] = [#(#ordered),*];
            /// `DEPENDENCIES[i]`: what `ORDER[i]` waits for.
            pub const DEPENDENCIES: [&'static [&'static str]; #n] = [#(#dep_lists),*];
            /// `LEVELS[i]`: the longest dependency chain before `ORDER[i]`;
            /// stages of one level do not depend on each other.
            pub const LEVELS: [usize; #n] = [#(#levels),*];
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycle_is_reported_in_execution_order() {
        // a <- b <- c <- a (each waits on the previous).
        let deps = vec![vec![2], vec![0], vec![1]];
        let cycle = topo_sort(&deps).unwrap_err();
        assert_eq!(cycle.len(), 3);
        for w in 0..3 {
            // Each reported stage is a dependency of the next one.
            let (a, b) = (cycle[w], cycle[(w + 1) % 3]);
            assert!(deps[b].contains(&a), "{cycle:?}");
        }
    }

    #[test]
    fn levels_are_longest_chains() {
        let deps = vec![vec![], vec![0], vec![], vec![1, 2]];
        let (order, level) = topo_sort(&deps).unwrap();
        assert_eq!(order, vec![0, 1, 2, 3]);
        assert_eq!(level, vec![0, 1, 0, 2]);
    }
}
