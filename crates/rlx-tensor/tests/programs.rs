//! The jax.numpy program suite: each program of
//! `tests/fixtures/programs.json` (values from JAX, `tools/gen_tensor_fixtures.py`)
//! written with `Tensor`, compiled and run on the CPU, compared.

mod common;

use common::{compare, host, parse_tensor, run, Fx};
use rlx_tensor::{
    ax, einsum, grad, grad_argnums, graph, hvp, ix, jvp, nn, np, rg, s, tail, value_and_grad, vmap,
    DType, Tensor,
};
use std::collections::HashMap;

type Ins = HashMap<String, Tensor>;

fn ln(x: &Tensor, g: impl Into<rlx_tensor::Arg>, b: impl Into<rlx_tensor::Arg>) -> Tensor {
    let m = x.mean(-1, true);
    let v = (x - &m).square().mean(-1, true);
    (x - &m) / (v + 1e-5).sqrt() * g + b
}

fn ints(v: &[i32]) -> Tensor {
    np::asarray(&rlx_ir::HostTensor::from_vec(v.to_vec(), &[v.len()]).unwrap())
}

fn pair(p: (Tensor, Tensor)) -> [Tensor; 2] {
    [p.0, p.1]
}

fn mlp_loss(x: &Tensor, w: &Tensor) -> Tensor {
    x.matmul(w).tanh().sum(None, false)
}

/// The Rust spelling of each program (outputs in the fixture's order).
fn build(name: &str, i: &Ins) -> Option<Vec<Tensor>> {
    let t = |n: &str| i[n].clone();
    let v = match name {
        "add_bcast_row" | "add_bcast_col" => vec![t("a") + t("b")],
        "mul_bcast_3d" => vec![t("a") * t("b")],
        "scalar_mix" => {
            let a = t("a");
            vec![&a * 2.5 - 1.0, 1.0 / (1.0 + &a * &a), -&a]
        }
        "sub_div_pow" => {
            let (a, b, c) = (t("a"), t("b"), t("c"));
            vec![(&a - &b) / &c, c.pow(1.5), a.maximum(&b) - a.minimum(0.0)]
        }
        "bcast_rank0" => {
            let a = t("a");
            vec![&a * t("b") + &a]
        }
        "int_true_div" => {
            let (a, b) = (t("a"), t("b"));
            vec![
                &a / &b,
                np::floor_divide(&a, &b),
                np::remainder(&a, &b),
                &a + &b,
            ]
        }
        "slice_steps" => vec![t("x").at(s![.., 1..4, ..;2])],
        "slice_neg_newaxis" => vec![t("x").at(s![-1, ..., None])],
        "slice_reverse" => {
            let x = t("x");
            vec![x.at(s![..;-1, 5..;-2]), x.at(s![-3..-1, ..-2])]
        }
        "slice_int" => {
            let x = t("x");
            vec![x.at(s![1, -2]), x.at(s![..., -1]), x.at(s![None, ix(2)])]
        }
        "slice_clamp" => {
            let x = t("x");
            vec![
                x.at(s![rg(-100, 100)]),
                x.at(s![rg(3, 1)]),
                x.at(s![tail(10)]),
            ]
        }
        "slice_more" => {
            let x = t("x");
            vec![
                x.at(s![..=2]),
                x.at(s![4..0;-1]),
                x.at(s![..;-2]),
                x.at(s![None, 1, rlx_tensor::NEW_AXIS]),
                x.at(s![rg(0, 8).step(3)]),
                x.at(s![..., ..;-1]),
                x.at(s![-2.., tail(-1)]),
                x.at(s![2..-2;2, 1]),
            ]
        }
        "take_neg" => {
            let (x, idx) = (t("x"), t("i"));
            vec![
                x.take(&idx, Some(0)),
                x.take(&np::remainder(&idx, 3), Some(1)),
            ]
        }
        "take_along" => vec![t("x").take_along_axis(&t("i"), 1)],
        "sum_keepdims" => {
            let x = t("x");
            vec![x.sum(1, true), x.sum(None, false), x.sum([0, 2], false)]
        }
        "mean_max_min" => {
            let x = t("x");
            vec![
                x.mean(-1, false),
                x.max([0, 2], true),
                x.min(None, false),
                x.at(s![0]).prod(0, false),
            ]
        }
        "var_std" => {
            let x = t("x");
            vec![
                x.var(1, 1, false),
                x.std(0, 0, false),
                x.var(None, 0, true),
                x.ptp(1, false),
            ]
        }
        "argmax_argmin" => {
            let x = t("x");
            vec![
                x.argmax(Some(1), false),
                x.argmin(None, false),
                x.argmax(Some(0), true),
            ]
        }
        "logsumexp_big" => {
            let x = t("x");
            vec![
                nn::logsumexp(&x, -1, false),
                x.logsumexp(0, true),
                (-&x).logsumexp(None, false),
            ]
        }
        "softmax_big" => {
            let x = t("x");
            vec![
                nn::softmax(&x, -1),
                nn::log_softmax(&x, -1),
                nn::softmax(&x, 0),
            ]
        }
        "cumsum" => {
            let x = t("x");
            vec![x.cumsum(Some(1)), x.cumsum(None), np::cumsum(&x, Some(-2))]
        }
        "all_any_count" => {
            let x = t("x");
            vec![
                x.all(1, false),
                x.any(0, false),
                x.count_nonzero(1, false),
                x.gt(0).sum(None, false),
            ]
        }
        "sort_median" => {
            let x = t("x");
            vec![
                x.sort(1),
                x.argsort(0),
                x.median(Some(1), false),
                x.median(None, false),
            ]
        }
        "einsum_mm" => vec![einsum("ij,jk->ik", &[&t("a"), &t("b")])],
        "einsum_batch" => vec![einsum("bij,bjk->bik", &[&t("a"), &t("b")])],
        "einsum_attn" => vec![einsum("bhqd,bhkd->bhqk", &[&t("q"), &t("k")])],
        "einsum_misc" => {
            let (a, b, v) = (t("a"), t("b"), t("v"));
            vec![
                einsum("ij,ij->", &[&a, &b]),
                einsum("ij->j", &[&a]),
                einsum("i,j->ij", &[&a.at(s![0]), &v]),
                einsum("ij,kj->ik", &[&a, &b]),
                einsum("ij->ji", &[&a]),
                einsum("ij,ik->jk", &[&a, &b]),
            ]
        }
        "matmul_bcast" => {
            let (a, b, v) = (t("a"), t("b"), t("v"));
            vec![a.matmul(&b), a.at(s![0, 0]).matmul(&v), v.matmul(&b)]
        }
        "dot_family" => {
            let (a, b, u, w) = (t("a"), t("b"), t("u"), t("w"));
            vec![
                np::dot(&a, &b),
                np::dot(&u, &w),
                np::inner(&a, &u),
                np::outer(&u, &w),
                np::vdot(&b.at(s![.., ..4]), &b.at(s![.., 1..])),
                np::tensordot(&a, &b, &[2], &[0]),
                np::kron(&b.at(s![..2, ..2]), &b.at(s![2.., 3..])),
            ]
        }
        "shape_ops" => {
            let x = t("x");
            vec![
                x.reshape(&[4, -1]),
                x.T(),
                x.transpose(&[1, 0, 2]),
                x.moveaxis(0, -1),
                x.swapaxes(0, 2),
                x.expand_dims([0, 3]),
                x.at(s![.., ..1, ..1]).squeeze(None),
                x.ravel(),
            ]
        }
        "join_split" => {
            let (a, b) = (t("a"), t("b"));
            let c = np::concatenate(&[&a, &b], 1);
            let mut v = vec![
                c.clone(),
                np::stack(&[&a, &b], -1),
                np::vstack(&[&a, &b]),
                np::hstack(&[&a, &b]),
            ];
            v.extend(np::split(&c, 3, 1));
            v.extend(np::array_split(&a, 2, 1));
            v.push(np::column_stack(&[&a.at(s![0]), &b.at(s![0])]));
            v
        }
        "movement" => {
            let x = t("x");
            vec![
                x.flip(0),
                x.flip(None),
                x.roll(2, Some(1)),
                x.roll(-3, None),
                x.tile(&[2, 1, 2]),
                x.repeat(2, Some(0)),
                x.pad(&[(1, 0), (2, 1)], 0.5),
                x.at(s![0]).broadcast_to(&[2, 4]),
            ]
        }
        "triangles" => {
            let (x, v) = (t("x"), t("v"));
            vec![
                x.tril(0),
                x.triu(1),
                x.tril(-1),
                x.diagonal(0),
                x.diagonal(2),
                x.diagonal(-1),
                x.trace(0),
                np::diag(&v, 0),
                np::diag(&v, 1),
                np::diag(&v, -2),
            ]
        }
        "creation" => {
            let x = t("x");
            vec![
                np::arange(0.0, 5.0, 1.0, None),
                np::arange(1.0, 2.0, 0.25, None),
                np::linspace(0.0, 1.0, 5, true),
                np::eye(3, Some(4), 1),
                np::zeros(&[2, 3]) + x.at(s![0]),
                np::full(&[2, 2], 7.0, DType::F32),
                np::tri(3, None, 0),
                np::identity(2),
            ]
        }
        "where_clip" => {
            let (x, y) = (t("x"), t("y"));
            vec![
                np::where_(&x.gt(&y), &x, &y),
                np::where_(&x.gt(0), &x, 0.0),
                x.clip(Some(-0.5), Some(0.5)),
                np::clip(&x, None, Some(0.0)),
            ]
        }
        "unary_math" => {
            let x = t("x");
            vec![
                x.exp(),
                x.log(),
                x.sqrt(),
                x.log2(),
                x.log10(),
                x.log1p(),
                x.expm1(),
                (-&x).cbrt(),
                x.sinh(),
                x.cosh(),
                x.arcsinh(),
                (&x + 1.0).arccosh(),
                x.exp2(),
                x.reciprocal(),
                x.square(),
            ]
        }
        "trig" => {
            let x = t("x");
            vec![
                x.sin(),
                x.cos(),
                x.tan(),
                x.arcsin(),
                x.arccos(),
                x.arctan(),
                x.arctanh(),
                x.arctan2(x.at(s![..;-1])),
                x.sinc(),
                x.deg2rad(),
                x.rad2deg(),
                x.tanh(),
            ]
        }
        "rounding" => {
            let x = t("x");
            let x3 = &x * 3.0;
            vec![
                x3.floor(),
                x3.ceil(),
                x3.round(),
                x3.trunc(),
                x.sign(),
                x.abs(),
                np::round(&x, 2),
                np::fmod(&x3, 1.0),
                np::remainder(&x3, 1.0),
            ]
        }
        "binary_math" => {
            let (a, b) = (t("a"), t("b"));
            vec![
                a.hypot(&b),
                a.logaddexp(&b),
                a.logaddexp2(&b),
                a.copysign(&b),
                a.heaviside(0.5),
                np::isclose(&a, &a + 1e-9, 1e-5, 1e-8),
                np::logical_and(&a.gt(0), b.gt(0)),
                np::logical_xor(&a.gt(0), b.gt(0)),
                np::power(&a.abs(), &b),
            ]
        }
        "activations" => {
            let x = t("x");
            vec![
                nn::relu(&x),
                nn::gelu(&x, false),
                nn::gelu(&x, true),
                nn::silu(&x),
                nn::sigmoid(&x),
                nn::softplus(&x),
                nn::elu(&x, 1.0),
                nn::leaky_relu(&x, 0.1),
                nn::log_sigmoid(&x),
                nn::relu6(&(&x * 4.0)),
                nn::selu(&x),
                nn::hard_tanh(&(&x * 2.0)),
                nn::celu(&x, 1.5),
            ]
        }
        "norms" => {
            let (x, g, b) = (t("x"), t("g"), t("b"));
            vec![
                nn::layer_norm(&x, Some(&g), Some(&b), 1e-5),
                nn::layer_norm(&x, None, None, 1e-5),
                nn::rms_norm(&x, Some(&g), 1e-6),
                nn::standardize(&x, -1, 1e-5),
            ]
        }
        "one_hot" => vec![nn::one_hot(&t("i"), 4)],
        "conv_pool" => {
            let (x, w, b) = (t("x"), t("w"), t("b"));
            vec![
                nn::conv(&x, &w, Some(&b), &[], &[(1, 1), (1, 1)], &[], 1),
                nn::conv(&x, &w, None, &[2, 2], &[], &[], 1),
                nn::max_pool(&x, &[2, 2], &[], &[]),
                nn::avg_pool(&x, &[3, 3], &[], &[]),
            ]
        }
        "convolve_1d" => {
            let (a, v) = (t("a"), t("v"));
            vec![np::convolve(&a, &v), np::correlate(&a, &v)]
        }
        "misc" => {
            let (x, u, w) = (t("x"), t("u"), t("w"));
            vec![
                np::diff(&x, 1),
                np::cross(&u, &w),
                np::average(&x, 0, None),
                np::ediff1d(&u),
                np::rot90(&x, 1),
                np::atleast_3d(&u),
                np::logspace(0.0, 2.0, 3, true, 10.0),
            ]
        }
        "nan_reductions" => {
            let x = t("x");
            vec![
                np::nansum(&x, 1, false),
                np::nanmean(&x, 1, false),
                np::nanmax(&x, 1, false),
                np::nanmin(&x, None, false),
                np::nanprod(&x, 1, false),
                np::nanvar(&x, 1, 0, false),
                np::nanstd(&x, 1, 1, false),
                np::nanargmax(&x, Some(1), false),
                np::nanargmin(&x, Some(1), false),
                np::nancumsum(&x, Some(1)),
                np::nancumprod(&x, Some(1)),
                np::nan_to_num(&x, -7.0, f32::MAX as f64, f32::MIN as f64),
                np::isnan(&x),
            ]
        }
        "cumprod_quantile" => {
            let x = t("x");
            vec![
                np::cumprod(&x, Some(1)),
                np::cumulative_prod(&x.at(s![0]), None),
                np::quantile(&x, 0.3, Some(1), false),
                np::percentile(&x, 75.0, None, false),
                np::quantile(&x, 0.5, Some(0), true),
                np::cumulative_sum(&x, Some(0)),
            ]
        }
        "searching" => {
            let (a, v, idx) = (t("a"), t("v"), t("i"));
            let sa = np::sort(&a, 0);
            vec![
                np::searchsorted(&sa, &v, false),
                np::searchsorted(&sa, &sa.at(s![2]), true),
                np::digitize(&v, &sa, false),
                np::isin(&idx, &ints(&[1, 3])),
                np::bincount(&idx, 5),
                np::array_equiv(&v, &v.at(s![0])),
                np::array_equal(&v, &v),
                np::allclose(&v, &v + 1e-9, 1e-5, 1e-8),
            ]
        }
        "rearrange" => {
            let (x, y) = (t("x"), t("y"));
            let mut o = vec![
                np::append(&x, &x.at(s![..1]), Some(0)),
                np::append(&x, &y, None),
                np::delete(&x, -1, 1),
                np::insert(&x, 2, 9.0, 1),
            ];
            o.extend(np::unstack(&x, 1).into_iter().take(2));
            o.extend([
                np::rollaxis(&x.reshape(&[3, 2, 2]), 2, 0),
                np::resize(&y, &[2, 3]),
                np::diagflat(&y, 1),
                np::fill_diagonal(&x, 5.0),
                np::fliplr(&x),
                np::flipud(&x),
                np::permute_dims(&x, &[1, 0]),
                np::atleast_1d(&y.at(s![0])),
                np::atleast_2d(&y),
                np::dstack(&[&x, &x]),
            ]);
            o.extend(np::hsplit(&x, 2));
            o.extend(np::vsplit(&x.at(s![..2]), 2));
            o
        }
        "index_helpers" => {
            let x = t("x");
            let mut o = vec![np::indices(&[2, 3])];
            o.extend(pair(np::tril_indices(3, 0, None)));
            o.extend(pair(np::triu_indices(3, 1, Some(4))));
            o.extend(pair(np::tril_indices_from(&x, -1)));
            o.push(np::ravel_multi_index(
                &[&ints(&[1, 2]), &ints(&[3, 0])],
                &[3, 4],
            ));
            o.extend(np::unravel_index(&ints(&[5, 11, 0]), &[3, 4]));
            o.extend(pair(np::diag_indices(3)));
            o
        }
        "numerical" => {
            let (x, p, q, tt) = (t("x"), t("p"), t("q"), t("t"));
            vec![
                np::trapezoid(&x, 0.5, 1),
                np::gradient(&x, 1),
                np::gradient(&tt, 0),
                np::cov(&x),
                np::corrcoef(&x),
                np::vander(&q, Some(3), false),
                np::vander(&tt.at(s![..3]), None, true),
                np::polyval(&p, &tt),
                np::polyadd(&p, &q),
                np::polysub(&q, &p),
                np::polymul(&p, &q),
                np::polyder(&p),
                np::polyint(&p),
            ]
        }
        "windows" => vec![
            np::hamming(6),
            np::hanning(5),
            np::blackman(7),
            np::bartlett(6),
            np::linspace(0.0, 1.0, 4, false),
            np::logspace(0.0, 1.0, 4, true, 2.0),
            np::geomspace(1.0, 100.0, 3, true),
        ],
        "products_more" => {
            let (a, v, w) = (t("a"), t("v"), t("w"));
            vec![
                np::matvec(&a, &v),
                np::vecmat(&w, &a),
                np::vecdot(&a, &v),
                np::cross(&a.at(s![0, .., ..3]), &a.at(s![1, .., ..3])),
            ]
        }
        "elementwise_more" => {
            let (x, y, k) = (t("x"), t("y"), t("k"));
            let x3 = &x * 3.0;
            let (fr, int) = np::modf(&x3);
            let (dq, dr) = np::divmod(&x3, 0.7);
            vec![
                np::fabs(&x),
                np::isneginf(&(&x / 0.0)),
                np::isposinf(&(&x / 0.0)),
                np::angle(&x),
                np::invert(&k),
                np::bitwise_not(&x.gt(0)),
                fr,
                int,
                dq,
                dr,
                np::ldexp(&x, &k),
                np::float_power(&x.abs(), &y),
                np::fmax(&x, &y),
                np::fmin(&x, &y),
                np::amax(&x, None, false),
                np::amin(&x, None, false),
                np::logical_or(&x.gt(0), y.gt(0)),
                np::logical_not(&x.gt(0)),
                np::bitwise_and(&k, 3),
                np::bitwise_or(&k.gt(0), x.gt(0)),
                np::bitwise_xor(&k, 5),
                np::signbit(&x),
                np::positive(&x),
                np::negative(&x),
                np::rint(&(&x * 2.0)),
                np::select_(&[&x.gt(0.5), &x.lt(-0.5)], &[&x, &y], -1.0),
                np::around(&x, 1),
                np::true_divide(&x, &y),
                np::subtract(&x, &y),
                np::multiply(&x, 2.0),
                np::divide(&k, 2),
                np::add(&x, 1.0),
                np::isinf(&x),
                np::isfinite(&x),
            ]
        }
        "meshgrid_bcast" => {
            let (x, y) = (t("x"), t("y"));
            let mut o = np::meshgrid(&[&x, &y], false);
            o.extend(np::meshgrid(&[&x, &y], true));
            o.extend(np::broadcast_arrays(&[
                &x.at(s![None, ..]),
                &y.at(s![.., None]),
            ]));
            o
        }
        "grad_mlp" => {
            let (x, w) = (t("x"), t("w"));
            let mut v = vec![grad(mlp_loss)(&[&x, &w])];
            v.extend(grad_argnums(mlp_loss, &[0, 1])(&[&x, &w]));
            v.push(value_and_grad(mlp_loss)(&[&x, &w]).0);
            v
        }
        "grad_logsumexp_big" => vec![grad(|x: &Tensor| x.logsumexp(None, false))(&[&t("x")])],
        "grad_softmax" => {
            let c = t("c");
            vec![grad(move |x: &Tensor| {
                (nn::softmax(x, -1) * &c).mean(None, false)
            })(&[&t("x")])]
        }
        "grad_slice" => vec![grad(|x: &Tensor| {
            x.at(s![.., 1..4, ..;2]).square().sum(None, false)
                + x.at(s![-1, ..., 3]).sum(None, false)
        })(&[&t("x")])],
        "grad_norm" => {
            let b = t("b");
            grad_argnums(
                move |x: &Tensor, g: &Tensor| ln(x, g, &b).square().sum(None, false),
                &[0, 1],
            )(&[&t("x"), &t("g")])
        }
        "grad_bcast" => grad_argnums(
            |a: &Tensor, b: &Tensor| ((a * b).sin() + a / (b * b + 1.0)).sum(None, false),
            &[0, 1],
        )(&[&t("a"), &t("b")]),
        "grad_einsum_take" => {
            let (b, idx) = (t("b"), t("i"));
            vec![grad(move |a: &Tensor| {
                einsum("ij,jk->ik", &[a, &b])
                    .take(&idx, Some(0))
                    .square()
                    .sum(None, false)
            })(&[&t("a")])]
        }
        "jvp_sin" => {
            let (p, tn) = jvp(|x: &Tensor| x.sin() * x, &[&t("x")], &[&t("v")]);
            vec![p[0].clone(), tn[0].clone()]
        }
        "jvp_two" => {
            let (p, tn) = jvp(
                |x: &Tensor, w: &Tensor| nn::softmax(&x.matmul(w), -1),
                &[&t("x"), &t("w")],
                &[&t("vx"), &t("vw")],
            );
            vec![p[0].clone(), tn[0].clone()]
        }
        "hvp_cubic" => hvp(
            |x: &Tensor| x.pow(3.0).sum(None, false) + x.sum(None, false).square(),
            &[&t("x")],
            &[&t("v")],
        ),
        "hvp_logsumexp" => hvp(
            |x: &Tensor| x.logsumexp(None, false),
            &[&t("x")],
            &[&t("v")],
        ),
        "vmap_mv" => vmap(
            |x: &Tensor, w: &Tensor| nn::softmax(&x.matmul(w), -1),
            &[Some(0), None],
            0,
        )(&[&t("x"), &t("w")]),
        "vmap_axes" => vmap(
            |a: &Tensor, b: &Tensor| a * b + a.sum(None, false),
            &[Some(1), Some(0)],
            1,
        )(&[&t("x"), &t("y")]),
        "vmap_grad" => {
            let g = grad(|r: &Tensor| r.tanh().square().sum(None, false));
            vmap(g, &[Some(0)], 0)(&[&t("x")])
        }
        "grad_capture" => {
            let c = t("c");
            vec![grad(move |x: &Tensor| (x * &c * x).sum(None, false))(&[
                &t("x"),
            ])]
        }
        "grad_nested_capture" => {
            let c = t("c");
            let outer = grad(move |x: &Tensor| {
                let (x2, c2) = (x.clone(), c.clone());
                let inner = grad(move |y: &Tensor| ((y * &c2).sin() * &x2).sum(None, false));
                inner(&[x]).sum(None, false)
            });
            vec![outer(&[&t("x")])]
        }
        "grad_grad" => {
            let g1 = grad(|x: &Tensor| x.sin() * x.pow(3.0));
            vec![grad(g1)(&[&t("x")])]
        }
        _ => return None,
    };
    let _ = ax();
    Some(v)
}

/// Programs whose numbers need a looser tolerance (f32 vs f64 references).
fn tolerance(name: &str) -> (f64, f64) {
    match name {
        "logsumexp_big" | "softmax_big" | "grad_logsumexp_big" => (1e-6, 2e-6),
        n if n.starts_with("hvp")
            || n.starts_with("grad")
            || n.starts_with("jvp")
            || n.starts_with("vmap") =>
        {
            (1e-4, 1e-5)
        }
        _ => (1e-4, 1e-5),
    }
}

#[test]
fn jax_numpy_programs_match_jax() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/programs.json"
    ))
    .unwrap();
    let fx: serde_json::Value = serde_json::from_str(&text).unwrap();
    let progs = fx["programs"].as_array().unwrap();
    assert!(progs.len() >= 70, "the suite has {} programs", progs.len());
    let mut failures = Vec::new();
    let mut compared = 0;
    for p in progs {
        let name = p["name"].as_str().unwrap();
        let inputs: Vec<Fx> = p["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(parse_tensor)
            .collect();
        let wants: Vec<Fx> = p["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(parse_tensor)
            .collect();
        let built = graph(name, |g| {
            let ins: Ins = inputs
                .iter()
                .map(|f| {
                    (
                        f.name.clone(),
                        g.input(&f.name, rlx_ir::Shape::new(&f.dims, f.dtype)),
                    )
                })
                .collect();
            build(name, &ins).unwrap_or_else(|| panic!("no Rust spelling of program {name}"))
        });
        let g = match built {
            Ok(g) => g,
            Err(e) => {
                failures.push(format!("{name}: build: {e}"));
                continue;
            }
        };
        if g.outputs().len() != wants.len() {
            failures.push(format!(
                "{name}: {} outputs, want {}",
                g.outputs().len(),
                wants.len()
            ));
            continue;
        }
        let hosts: Vec<(&str, rlx_ir::HostTensor)> =
            inputs.iter().map(|f| (f.name.as_str(), host(f))).collect();
        let outs = run(g, &hosts);
        let (rtol, atol) = tolerance(name);
        for (k, (o, w)) in outs.iter().zip(&wants).enumerate() {
            compared += 1;
            if let Err(e) = compare(&format!("{name} output {k}"), o, w, rtol, atol) {
                failures.push(e);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(compared >= 340, "only {compared} outputs compared");
    eprintln!("{} programs, {compared} outputs match JAX", progs.len());
}

/// The same suite in eager mode: inputs are eager constants, every output
/// is evaluated with `to_host`; a second pass compiles nothing new.
#[cfg(feature = "eval")]
#[test]
fn jax_numpy_programs_match_jax_eagerly() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/programs.json"
    ))
    .unwrap();
    let fx: serde_json::Value = serde_json::from_str(&text).unwrap();
    let progs = fx["programs"].as_array().unwrap();
    let mut compiles_after_first = 0;
    for pass in 0..2 {
        let mut failures = Vec::new();
        for p in progs {
            let name = p["name"].as_str().unwrap();
            let inputs: Vec<Fx> = p["inputs"]
                .as_array()
                .unwrap()
                .iter()
                .map(parse_tensor)
                .collect();
            let wants: Vec<Fx> = p["outputs"]
                .as_array()
                .unwrap()
                .iter()
                .map(parse_tensor)
                .collect();
            let ins: Ins = inputs
                .iter()
                .map(|f| (f.name.clone(), Tensor::from_host(&host(f))))
                .collect();
            let outs = build(name, &ins).unwrap();
            let (rtol, atol) = tolerance(name);
            for (k, (o, w)) in outs.iter().zip(&wants).enumerate() {
                match o.to_host() {
                    Ok(h) => {
                        if let Err(e) =
                            compare(&format!("eager {name} output {k}"), &h, w, rtol, atol)
                        {
                            failures.push(e);
                        }
                    }
                    Err(e) => failures.push(format!("eager {name} output {k}: {e}")),
                }
            }
        }
        assert!(
            failures.is_empty(),
            "{} failures:\n{}",
            failures.len(),
            failures.join("\n")
        );
        let (compiles, hits) = rlx_tensor::eager_cache_stats();
        if pass == 0 {
            compiles_after_first = compiles;
        } else {
            assert_eq!(
                compiles, compiles_after_first,
                "the second pass hit the cache"
            );
            assert!(hits >= 350, "{hits} cache hits");
        }
        rlx_tensor::reset_eager();
    }
}
