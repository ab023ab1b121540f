//! Graph builders against HF PEFT 0.21: the fixture model
//! `Linear(8, 6) -> tanh -> Linear(6, 4)` is built as an RLX graph with
//! both linears wrapped by the adapter loaded from PEFT's saved directory,
//! differentiated with `rlx_autodiff::grad_with_loss`, compiled and run on
//! the CPU; the output, the input gradient and every adapter tensor's
//! gradient of `sum(y * cot)` must equal torch autograd's.
//!
//! In f64 (the graph and PEFT both run the f32-valued model in float64)
//! they must agree at 1e-6 (they do to ~1e-15); in f32 at 1e-5, since two
//! f32 autograds that sum in different orders differ by a few ulps of the
//! largest intermediate (measured: up to 3.8e-6).

mod common;
use common::{
    assert_close_tol, fixture, fixtures, grad_of, tensor, vals, values, widen, MODULES, TOL,
};
use rlx_autodiff::grad_with_loss;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
use rlx_peft::graph::{self, LinearNodes};
use rlx_peft::{AdapterSet, PeftError, KEY_PREFIX};
use rlx_runtime::{Device, Session};
use serde_json::Value;

/// f32 agreement between two f32 autograds (see the module doc).
const TOL_F32: f64 = 1e-5;

type Outputs = (Vec<f64>, Vec<f64>, Vec<(String, Vec<f64>)>);

/// Builds in `dtype`, differentiates, runs; returns (y, x grad, [(param, grad)]).
fn run_case(name: &str, dtype: DType) -> Result<Outputs, PeftError> {
    let case = fixture(name);
    let set = AdapterSet::load(fixtures().join(name))?;
    let cast = |t: HostTensor| if dtype == DType::F64 { widen(&t) } else { t };
    let mut g = Graph::new(format!("peft_{name}"));
    let x = g.input("x", Shape::new(&[3, 8], dtype));
    let mut h = x;
    let mut params = Vec::new();
    let mut base_values = Vec::new();
    for (i, m) in MODULES.iter().enumerate() {
        let b = &case["base"][*m];
        let (w, bias) = (cast(tensor(&b["weight"])), cast(tensor(&b["bias"])));
        let wn = g.param(&format!("{m}.weight"), w.shape());
        let bn = g.param(&format!("{m}.bias"), bias.shape());
        base_values.push((format!("{m}.weight"), w));
        base_values.push((format!("{m}.bias"), bias));
        let nodes = graph::adapter(
            &mut g,
            &format!("{KEY_PREFIX}{m}"),
            h,
            LinearNodes::new(wn, Some(bn)),
            set.get(m).unwrap(),
        )?;
        params.extend(nodes.params);
        h = if i == 0 {
            g.tanh(nodes.output)
        } else {
            nodes.output
        };
    }
    let cot = g.constant_tensor(&cast(tensor(&case["cot"])));
    let weighted = g.mul(h, cot);
    let loss = g.sum(weighted, &[0, 1], false);
    g.set_outputs(vec![loss, h]);

    let mut wrt = vec![x];
    wrt.extend(params.iter().map(|(_, id)| *id));
    let dg = grad_with_loss(&g, &wrt).expect("grad_with_loss");
    let mut exe = Session::new(Device::Cpu).try_compile(dg).expect("compile");
    for (n, t) in &base_values {
        exe.set_param_typed(n, t).expect("base param");
    }
    for (n, _) in &params {
        exe.set_param_typed(n, &cast(set.tensors()[n].clone()))
            .expect("adapter param");
    }
    let xt = cast(tensor(&case["x"]));
    let out = exe.try_run_typed(&[("x", &xt)]).expect("run");
    let f = vals;
    // outputs: loss, d/dx, d/dparams..., y
    let grads = params
        .iter()
        .enumerate()
        .map(|(i, (n, _))| (n.clone(), f(&out[2 + i])))
        .collect();
    Ok((f(&out[out.len() - 1]), f(&out[1]), grads))
}

fn check(name: &str) {
    let case: Value = fixture(name);
    for (dtype, refs, tol) in [
        (DType::F64, &case["f64"], TOL),
        (DType::F32, &case, TOL_F32),
    ] {
        let (y, dx, grads) = run_case(name, dtype).unwrap_or_else(|e| panic!("{name}: {e}"));
        let what = format!("{name} {dtype}");
        let ey = assert_close_tol(&format!("{what} y"), &y, &values(&refs["y"]), tol);
        let ex = assert_close_tol(&format!("{what} dx"), &dx, &values(&refs["x_grad"]), tol);
        let mut ep = 0.0f64;
        for (n, gv) in &grads {
            let want = values(grad_of(&refs["grads"], n));
            ep = ep.max(assert_close_tol(&format!("{what} d{n}"), gv, &want, tol));
        }
        let n_peft = refs["grads"].as_object().unwrap().len();
        assert_eq!(grads.len(), n_peft, "{what}: every PEFT gradient checked");
        println!("{what:16} max |diff|: y {ey:.2e}, dx {ex:.2e}, dparams {ep:.2e}");
    }
}

#[test]
fn lora_graph_matches_peft() {
    check("lora");
}

#[test]
fn rslora_graph_matches_peft() {
    check("lora_rslora");
}

#[test]
fn dora_graph_matches_peft_with_the_norm_detached() {
    check("dora");
}

#[test]
fn ia3_graph_matches_peft() {
    check("ia3");
}

#[test]
fn adalora_graph_matches_peft() {
    check("adalora");
}

#[test]
fn oft_graph_matches_peft() {
    check("oft");
}

#[test]
fn oft_with_shared_blocks_and_three_neumann_terms_matches_peft() {
    check("oft_shared");
}

#[test]
fn oft_exact_cayley_graph_matches_peft() {
    check("oft_exact");
}

#[test]
fn adalora_loss_with_orthogonal_regulariser_matches_peft() {
    // AdaLoraModel.forward returns loss + orth_reg_weight * regulariser; PEFT's
    // run of it in float64 is the reference.
    let case = fixture("adalora");
    let refs = &case["orth_reg"];
    let set = AdapterSet::load(fixtures().join("adalora")).unwrap();
    let f64t = |v: &Value| widen(&tensor(v));
    let mut g = Graph::new("adalora_orth_reg");
    let x = g.input("x", Shape::new(&[3, 8], DType::F64));
    let (mut h, mut nodes, mut values_by_name) = (x, Vec::new(), Vec::new());
    for (i, m) in MODULES.iter().enumerate() {
        let b = &case["base"][*m];
        let (w, bias) = (f64t(&b["weight"]), f64t(&b["bias"]));
        let wn = g.param(&format!("{m}.w"), w.shape());
        let bn = g.param(&format!("{m}.b"), bias.shape());
        values_by_name.push((format!("{m}.w"), w));
        values_by_name.push((format!("{m}.b"), bias));
        let rlx_peft::AnyAdapter::AdaLora(a) = set.get(m).unwrap() else {
            panic!("not AdaLoRA")
        };
        let n = graph::adalora(
            &mut g,
            &format!("{KEY_PREFIX}{m}"),
            h,
            LinearNodes::new(wn, Some(bn)),
            a.config(),
        )
        .unwrap();
        nodes.push(n);
        h = if i == 0 { g.tanh(n.output) } else { n.output };
    }
    let cot = g.constant_tensor(&f64t(&case["cot"]));
    let weighted = g.mul(h, cot);
    let plain = g.sum(weighted, &[0, 1], false);
    let reg = graph::adalora_orth_reg(&mut g, &nodes).unwrap();
    let w = refs["orth_reg_weight"].as_f64().unwrap();
    let scaled = g.mul(reg, g.constant(w, DType::F64));
    let loss = g.add(plain, scaled);
    g.set_outputs(vec![loss]);
    let mut wrt = vec![x];
    let mut names = Vec::new();
    for n in &nodes {
        for (id, t) in [
            (n.lora_a, "lora_A"),
            (n.lora_e, "lora_E"),
            (n.lora_b, "lora_B"),
        ] {
            wrt.push(id);
            let rlx_ir::Op::Param { name } = &g.node(id).op else {
                unreachable!()
            };
            names.push((name.clone(), t));
        }
    }
    let mut exe = Session::new(Device::Cpu)
        .try_compile(grad_with_loss(&g, &wrt).unwrap())
        .unwrap();
    for (n, t) in &values_by_name {
        exe.set_param_typed(n, t).unwrap();
    }
    for (n, _) in &names {
        exe.set_param_typed(n, &widen(&set.tensors()[n])).unwrap();
    }
    let out = exe.try_run_typed(&[("x", &f64t(&case["x"]))]).unwrap();
    let tot = refs["loss_total"].as_f64().unwrap();
    assert_close_tol("loss", &vals(&out[0]), &[tot], TOL);
    assert_close_tol("dx", &vals(&out[1]), &values(&refs["x_grad"]), TOL);
    for (i, (n, _)) in names.iter().enumerate() {
        assert_close_tol(
            &format!("d{n}"),
            &vals(&out[2 + i]),
            &values(&refs["grads"][n]),
            TOL,
        );
    }
    // the regulariser is not negligible here, so the check sees it
    assert!((tot - refs["loss_plain"].as_f64().unwrap()).abs() > 0.1);
}
