//! Tokens -> [`crate::ast`]: a recursive-descent parser on `syn`'s
//! `ParseStream`, expressions with Python's operator precedence.

use crate::ast::*;
use proc_macro2::{Span, TokenStream};
use std::rc::Rc;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{bracketed, parenthesized, token, Error, Ident, LitFloat, LitInt, LitStr, Result, Token};

/// The statement keywords, for the "expected a statement" message.
const STATEMENTS: &str = "`input`, `param`, `const`, `let`, `out`, `tap`, `fn` or `repeat`";

impl Parse for Program {
    fn parse(input: ParseStream) -> Result<Program> {
        let krate = parse_crate_header(input)?;
        let kw = input.call(Ident::parse_any)?;
        if kw != "graph" {
            return Err(Error::new(
                kw.span(),
                "an rlx! program starts with `graph NAME;`",
            ));
        }
        let name: Ident = input.parse()?;
        input.parse::<Token![;]>()?;
        let mut stmts = Vec::new();
        while !input.is_empty() {
            stmts.push(parse_stmt(input, StmtCtx::Top)?);
        }
        Ok(Program { krate, name, stmts })
    }
}

/// `@crate PATH;` (inserted by `rlx_tensor::rlx!`): where `rlx_ir` lives.
fn parse_crate_header(input: ParseStream) -> Result<TokenStream> {
    if !input.peek(Token![@]) {
        return Ok(quote::quote!(::rlx_ir));
    }
    input.parse::<Token![@]>()?;
    input.parse::<Token![crate]>()?;
    let mut path = TokenStream::new();
    while !input.peek(Token![;]) {
        let tt: proc_macro2::TokenTree = input.parse()?;
        path.extend([tt]);
    }
    input.parse::<Token![;]>()?;
    Ok(path)
}

/// Where a statement sits: bodies of `fn` and `scan` hold only `let`s.
#[derive(Clone, Copy, PartialEq, Eq)]
enum StmtCtx {
    Top,
    Block,
}

fn parse_stmt(input: ParseStream, ctx: StmtCtx) -> Result<Stmt> {
    if input.peek(Token![let]) {
        input.parse::<Token![let]>()?;
        let pat = parse_pat(input)?;
        input.parse::<Token![=]>()?;
        let value = parse_expr(input)?;
        input.parse::<Token![;]>()?;
        return Ok(Stmt::Let { pat, value });
    }
    if ctx == StmtCtx::Block {
        return Err(Error::new(
            input.span(),
            "only `let` statements may precede the result of a `fn` or `scan` body",
        ));
    }
    if input.peek(Token![const]) {
        input.parse::<Token![const]>()?;
        let name: Ident = input.parse()?;
        let ty = if input.peek(Token![:]) {
            input.parse::<Token![:]>()?;
            Some(parse_type(input)?)
        } else {
            None
        };
        input.parse::<Token![=]>()?;
        let value = parse_expr(input)?;
        input.parse::<Token![;]>()?;
        return Ok(Stmt::Const { name, ty, value });
    }
    if input.peek(Token![fn]) {
        return parse_fn(input).map(|f| Stmt::Fn(Rc::new(f)));
    }
    if !input.peek(Ident::peek_any) {
        return Err(Error::new(
            input.span(),
            format!("expected a statement: {STATEMENTS}"),
        ));
    }
    let kw = input.fork().call(Ident::parse_any)?;
    match kw.to_string().as_str() {
        "input" | "param" => {
            input.call(Ident::parse_any)?;
            let kind = if kw == "input" {
                DeclKind::Input
            } else {
                DeclKind::Param
            };
            let name: Ident = input.parse()?;
            input.parse::<Token![:]>()?;
            let ty = parse_type(input)?;
            let rename = if input.peek(Token![as]) {
                input.parse::<Token![as]>()?;
                Some(input.parse::<LitStr>()?)
            } else {
                None
            };
            input.parse::<Token![;]>()?;
            Ok(Stmt::Decl {
                kind,
                name,
                ty,
                rename,
            })
        }
        "out" => {
            input.call(Ident::parse_any)?;
            let name = if input.peek(Ident) && input.peek2(Token![=]) && !input.peek2(Token![==]) {
                let n: Ident = input.parse()?;
                input.parse::<Token![=]>()?;
                Some(n)
            } else {
                None
            };
            let value = parse_expr(input)?;
            input.parse::<Token![;]>()?;
            Ok(Stmt::Out { name, value })
        }
        "tap" => {
            input.call(Ident::parse_any)?;
            let name: Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            let value = parse_expr(input)?;
            input.parse::<Token![;]>()?;
            Ok(Stmt::Tap { name, value })
        }
        "repeat" => {
            input.call(Ident::parse_any)?;
            let lit: LitInt = input.parse()?;
            let count = lit.base10_parse::<usize>()?;
            let prefix = if input.peek(Token![as]) {
                input.parse::<Token![as]>()?;
                input.parse::<Ident>()?
            } else {
                Ident::new("layers", lit.span())
            };
            let content;
            syn::braced!(content in input);
            let mut body = Vec::new();
            while !content.is_empty() {
                body.push(parse_stmt(&content, StmtCtx::Top)?);
            }
            Ok(Stmt::Repeat {
                count,
                prefix,
                body,
            })
        }
        "graph" => Err(Error::new(
            kw.span(),
            "`graph NAME;` may appear only once, first",
        )),
        _ => Err(Error::new(
            kw.span(),
            format!("expected a statement: {STATEMENTS}, found `{kw}`"),
        )),
    }
}

fn parse_pat(input: ParseStream) -> Result<Pat> {
    if input.peek(token::Paren) {
        let content;
        let paren = parenthesized!(content in input);
        let names = content.parse_terminated(Ident::parse, Token![,])?;
        return Ok(Pat::Tuple(names.into_iter().collect(), paren.span.join()));
    }
    Ok(Pat::Name(input.parse()?))
}

fn parse_type(input: ParseStream) -> Result<TypeAst> {
    let dtype: Ident = input.call(Ident::parse_any)?;
    let mut dims = Vec::new();
    if input.peek(token::Bracket) {
        let content;
        bracketed!(content in input);
        while !content.is_empty() {
            if content.peek(LitInt) {
                let lit: LitInt = content.parse()?;
                dims.push(DimAst::Static(lit.base10_parse()?));
            } else if content.peek(Ident) {
                dims.push(DimAst::Sym(content.parse()?));
            } else {
                return Err(Error::new(
                    content.span(),
                    "a dim is a non-negative integer or a symbol name (`B`, `seq`)",
                ));
            }
            if !content.is_empty() {
                content.parse::<Token![,]>()?;
            }
        }
    }
    Ok(TypeAst { dtype, dims })
}

fn parse_fn(input: ParseStream) -> Result<FnDef> {
    input.parse::<Token![fn]>()?;
    let name: Ident = input.parse()?;
    let content;
    parenthesized!(content in input);
    let params = content.parse_terminated(Ident::parse, Token![,])?;
    let params = params.into_iter().collect();
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        let result = parse_expr(input)?;
        input.parse::<Token![;]>()?;
        return Ok(FnDef {
            name,
            params,
            body: Vec::new(),
            result,
        });
    }
    let (body, result) = parse_block(input)?;
    Ok(FnDef {
        name,
        params,
        body,
        result,
    })
}

/// `{ let ..; ...; EXPR }`
fn parse_block(input: ParseStream) -> Result<(Vec<Stmt>, Expr)> {
    let content;
    syn::braced!(content in input);
    let mut body = Vec::new();
    while content.peek(Token![let]) {
        body.push(parse_stmt(&content, StmtCtx::Block)?);
    }
    if content.is_empty() {
        return Err(Error::new(
            content.span(),
            "a block ends with its result expression",
        ));
    }
    let result = parse_expr(&content)?;
    if !content.is_empty() {
        return Err(Error::new(
            content.span(),
            "unexpected tokens after the block's result (only `let` statements may precede it)",
        ));
    }
    Ok((body, result))
}

/// The full expression grammar (lowest precedence: comparisons).
pub fn parse_expr(input: ParseStream) -> Result<Expr> {
    let lhs = parse_additive(input)?;
    let op = if input.peek(Token![==]) {
        BinOp::Eq
    } else if input.peek(Token![!=]) {
        BinOp::Ne
    } else if input.peek(Token![<=]) {
        BinOp::Le
    } else if input.peek(Token![>=]) {
        BinOp::Ge
    } else if input.peek(Token![<]) {
        BinOp::Lt
    } else if input.peek(Token![>]) {
        BinOp::Gt
    } else {
        return Ok(lhs);
    };
    let span = input.span();
    match op {
        BinOp::Eq => {
            input.parse::<Token![==]>()?;
        }
        BinOp::Ne => {
            input.parse::<Token![!=]>()?;
        }
        BinOp::Le => {
            input.parse::<Token![<=]>()?;
        }
        BinOp::Ge => {
            input.parse::<Token![>=]>()?;
        }
        BinOp::Lt => {
            input.parse::<Token![<]>()?;
        }
        _ => {
            input.parse::<Token![>]>()?;
        }
    }
    let rhs = parse_additive(input)?;
    Ok(binary(op, lhs, rhs, span))
}

fn binary(op: BinOp, lhs: Expr, rhs: Expr, span: Span) -> Expr {
    Expr::Binary {
        op,
        lhs: Box::new(lhs),
        rhs: Box::new(rhs),
        span,
    }
}

fn parse_additive(input: ParseStream) -> Result<Expr> {
    let mut lhs = parse_multiplicative(input)?;
    loop {
        let span = input.span();
        let op = if input.peek(Token![+]) {
            input.parse::<Token![+]>()?;
            BinOp::Add
        } else if input.peek(Token![-]) {
            input.parse::<Token![-]>()?;
            BinOp::Sub
        } else {
            return Ok(lhs);
        };
        let rhs = parse_multiplicative(input)?;
        lhs = binary(op, lhs, rhs, span);
    }
}

fn peek_pow(input: ParseStream) -> bool {
    input.peek(Token![*]) && input.peek2(Token![*])
}

fn parse_multiplicative(input: ParseStream) -> Result<Expr> {
    let mut lhs = parse_unary(input)?;
    loop {
        let span = input.span();
        let op = if input.peek(Token![*]) && !peek_pow(input) {
            input.parse::<Token![*]>()?;
            BinOp::Mul
        } else if input.peek(Token![/]) {
            input.parse::<Token![/]>()?;
            BinOp::Div
        } else if input.peek(Token![%]) {
            input.parse::<Token![%]>()?;
            BinOp::Rem
        } else if input.peek(Token![@]) {
            input.parse::<Token![@]>()?;
            BinOp::MatMul
        } else {
            return Ok(lhs);
        };
        let rhs = parse_unary(input)?;
        lhs = binary(op, lhs, rhs, span);
    }
}

/// `-x` binds looser than `**` (Python: `-x ** 2 == -(x ** 2)`).
fn parse_unary(input: ParseStream) -> Result<Expr> {
    if input.peek(Token![-]) {
        let span = input.span();
        input.parse::<Token![-]>()?;
        let inner = parse_unary(input)?;
        return Ok(Expr::Neg(Box::new(inner), span));
    }
    parse_power(input)
}

/// `a ** b` is right-associative and its exponent may be negated (`2 ** -1`).
fn parse_power(input: ParseStream) -> Result<Expr> {
    let base = parse_primary(input)?;
    if peek_pow(input) {
        let span = input.span();
        input.parse::<Token![*]>()?;
        input.parse::<Token![*]>()?;
        let exp = parse_unary(input)?;
        return Ok(binary(BinOp::Pow, base, exp, span));
    }
    Ok(base)
}

fn parse_primary(input: ParseStream) -> Result<Expr> {
    if input.peek(LitInt) {
        let lit: LitInt = input.parse()?;
        return Ok(Expr::Num {
            value: lit.base10_parse::<f64>()?,
            is_int: true,
            span: lit.span(),
        });
    }
    if input.peek(LitFloat) {
        let lit: LitFloat = input.parse()?;
        return Ok(Expr::Num {
            value: lit.base10_parse::<f64>()?,
            is_int: false,
            span: lit.span(),
        });
    }
    if input.peek(syn::LitBool) {
        let lit: syn::LitBool = input.parse()?;
        return Ok(Expr::Bool(lit.value, lit.span));
    }
    if input.peek(token::Paren) {
        let content;
        let paren = parenthesized!(content in input);
        let items = content.parse_terminated(parse_expr, Token![,])?;
        let trailing = items.trailing_punct();
        let mut items: Vec<Expr> = items.into_iter().collect();
        if items.len() == 1 && !trailing {
            return Ok(items.pop().expect("one item"));
        }
        return Ok(Expr::Tuple(items, paren.span.join()));
    }
    if input.peek(token::Bracket) {
        let content;
        let bracket = bracketed!(content in input);
        let items = content.parse_terminated(parse_expr, Token![,])?;
        return Ok(Expr::List(items.into_iter().collect(), bracket.span.join()));
    }
    if input.peek(Ident::peek_any) {
        let name = input.call(Ident::parse_any)?;
        if name == "scan" && input.peek(token::Paren) {
            return parse_scan(input, name.span()).map(|s| Expr::Scan(Box::new(s)));
        }
        if input.peek(token::Paren) {
            let content;
            parenthesized!(content in input);
            let args = content.parse_terminated(parse_arg, Token![,])?;
            let span = name.span();
            return Ok(Expr::Call {
                func: name,
                args: args.into_iter().collect(),
                span,
            });
        }
        return Ok(Expr::Name(name));
    }
    Err(Error::new(
        input.span(),
        "expected an expression: a name, a number, a call `f(..)`, `(..)` or `[..]`",
    ))
}

fn parse_arg(input: ParseStream) -> Result<Arg> {
    if input.peek(Ident) && input.peek2(Token![=]) && !input.peek2(Token![==]) {
        let name: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        return Ok(Arg {
            name: Some(name),
            value: parse_expr(input)?,
        });
    }
    Ok(Arg {
        name: None,
        value: parse_expr(input)?,
    })
}

/// One expression or a parenthesised tuple of them, as a list.
fn flatten(e: Expr) -> Vec<Expr> {
    match e {
        Expr::Tuple(items, _) => items,
        e => vec![e],
    }
}

/// One name or `(a, b, ..)`.
fn parse_names(input: ParseStream) -> Result<Vec<Ident>> {
    if input.peek(token::Paren) {
        let content;
        parenthesized!(content in input);
        let names = content.parse_terminated(Ident::parse, Token![,])?;
        return Ok(names.into_iter().collect());
    }
    Ok(vec![input.parse()?])
}

fn parse_scan(input: ParseStream, span: Span) -> Result<ScanExpr> {
    let content;
    parenthesized!(content in input);
    let init = flatten(parse_expr(&content)?);
    content.parse::<Token![,]>()?;
    let xs = flatten(parse_expr(&content)?);
    if !content.is_empty() {
        return Err(Error::new(
            content.span(),
            "scan takes (init, xs): use tuples for several carries or several scanned operands",
        ));
    }
    input.parse::<Token![|]>()?;
    let carry = parse_names(input)?;
    input.parse::<Token![,]>()?;
    let x = parse_names(input)?;
    input.parse::<Token![|]>()?;
    let (body, result) = parse_block(input)?;
    let result_span = result.span();
    let (carry_out, ys) = match result {
        Expr::Tuple(mut items, _) if items.len() == 2 => {
            let ys = items.pop().expect("two items");
            let c = items.pop().expect("two items");
            (flatten(c), flatten(ys))
        }
        other => {
            return Err(Error::new(
                other.span(),
                "a scan body ends with `(new_carry, y)`",
            ))
        }
    };
    Ok(ScanExpr {
        span,
        init,
        xs,
        carry,
        x,
        body,
        carry_out,
        ys,
        result_span,
    })
}
