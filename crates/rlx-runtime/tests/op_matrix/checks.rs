//! The generic checks of the op matrix, each `Ok(true)` (ran and passed),
//! `Ok(false)` (does not apply to this sample) or `Err` (failed).

use crate::cases::{compare_tensors, float_values, guarded, Res};
use crate::Sample;
use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, OpKind, Rule};
use rlx_runtime::{CompileOptions, Session};

type Check = (&'static str, Res<bool>);

/// Every check of one sample on one device.
pub(crate) fn run_all(s: &Sample, device: Device) -> Vec<Check> {
    let forward = guarded(|| run(device, &s.graph, &CompileOptions::default(), &named(s)));
    let mut out = vec![(
        "forward",
        forward
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|outs| compare_all(outs, &s.expected, s.rtol, s.atol).map(|()| true)),
    )];
    let Ok(outs) = forward else {
        return out;
    };
    out.push(("decomposed", guarded(|| decomposed(s, device))));
    out.push(("text", guarded(|| text_round_trip(s, device, &outs))));
    let Some(fd) = FloatGraph::of(s) else {
        return out;
    };
    let grad = guarded(|| fd.directional_grad(s, device));
    out.push((
        "vjp",
        match &grad {
            Ok(Some(_)) if fd_exclusion(s).is_some() => Ok(false),
            Ok(Some(g)) => guarded(|| fd.finite_differences(s, device, &outs, *g)),
            Ok(None) => Ok(true),
            Err(e) => Err(e.clone()),
        },
    ));
    if let Ok(Some(g)) = grad {
        out.push(("jvp", guarded(|| fd.jvp_matches(s, device, g))));
    }
    out.push(("vmap", guarded(|| vmap_matches_loop(s, device, &outs))));
    out
}

fn named(s: &Sample) -> Vec<(String, HostTensor)> {
    s.inputs
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("x{i}"), t.clone()))
        .collect()
}

fn run(
    device: Device,
    g: &Graph,
    opts: &CompileOptions,
    inputs: &[(String, HostTensor)],
) -> Res<Vec<HostTensor>> {
    let mut compiled = Session::new(device)
        .try_compile_with(g.clone(), opts)
        .map_err(|e| format!("compile: {e}"))?;
    let feeds: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
    compiled
        .try_run_typed(&feeds)
        .map_err(|e| format!("run: {e}"))
}

fn compare_all(got: &[HostTensor], want: &[HostTensor], rtol: f64, atol: f64) -> Res<()> {
    if got.len() != want.len() {
        return Err(format!("{} outputs, expected {}", got.len(), want.len()));
    }
    let problems: Vec<String> = got
        .iter()
        .zip(want)
        .enumerate()
        .filter_map(|(i, (g, w))| {
            compare_tensors(g, w, rtol, atol)
                .err()
                .map(|e| format!("output {i}: {e}"))
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// A composite's decomposition is its reference semantics: it must match the
/// reference as the native kernel does.
fn decomposed(s: &Sample, device: Device) -> Res<bool> {
    if !s.kinds().iter().any(|k| k.is_composite()) {
        return Ok(false);
    }
    let opts = CompileOptions::default().decompose_composites(true);
    let outs = run(device, &s.graph, &opts, &named(s))?;
    compare_all(&outs, &s.expected, s.rtol, s.atol)?;
    Ok(true)
}

/// The textual IR says everything a graph holds: parsed back, it prints the
/// same text and computes the same bits.
fn text_round_trip(s: &Sample, device: Device, outs: &[HostTensor]) -> Res<bool> {
    for n in s.graph.nodes() {
        let (name, mnemonic) = (n.op.kind().info().name, n.op.mnemonic());
        if !name_matches(name, &mnemonic) {
            return Err(format!(
                "`{mnemonic}` does not start with the op table's name `{name}`"
            ));
        }
    }
    let text = s.graph.to_text();
    let parsed = Graph::from_text(&text).map_err(|e| format!("parse: {e}"))?;
    let again = parsed.to_text();
    if again != text {
        return Err(format!("printed back differently:\n{text}\nvs\n{again}"));
    }
    let outs2 = run(device, &parsed, &CompileOptions::default(), &named(s))?;
    for (i, (a, b)) in outs.iter().zip(&outs2).enumerate() {
        if a.bytes() != b.bytes() {
            return Err(format!("output {i} differs after the round trip"));
        }
    }
    Ok(true)
}

/// The op table's textual name (`*` standing for a payload-chosen part)
/// against the head of a mnemonic (up to its payload or operand list).
fn name_matches(pattern: &str, mnemonic: &str) -> bool {
    let head = mnemonic
        .split(['{', ' ', '<', '['])
        .next()
        .unwrap_or_default();
    match pattern.split_once('*') {
        None => head == pattern,
        Some((pre, post)) => {
            head.len() >= pre.len() + post.len() && head.starts_with(pre) && head.ends_with(post)
        }
    }
}

/// The rule the op table gives `transform` for the kinds of a graph: the
/// first unsupported one, if any.
fn unsupported(s: &Sample, transform: fn(&rlx_ir::OpInfo) -> Rule) -> Option<(OpKind, Rule)> {
    s.kinds()
        .into_iter()
        .map(|k| (k, transform(k.info())))
        .find(|(_, r)| !r.is_supported())
}

/// A transform the table marks unsupported must fail with a typed error
/// naming the reason.
fn expect_refusal<T>(
    result: rlx_autodiff::Result<T>,
    kind: OpKind,
    rule: Rule,
) -> Res<Option<f64>> {
    match result {
        Ok(_) => Err(format!(
            "the op table says {kind:?} is {}, but the transform succeeded",
            rule.cell()
        )),
        Err(rlx_autodiff::AutodiffError::Unsupported { reason, .. })
            if Some(reason.as_str()) == rule.reason() =>
        {
            Ok(None)
        }
        Err(e) => Err(format!(
            "{kind:?} should be refused with the op table's reason, got: {e}"
        )),
    }
}

/// Why finite differences cannot check this sample's derivative, if they
/// cannot: a step function jumps inside any step, a selection among tied
/// values (the fixtures test tie-breaking) splits the tie either way, and a
/// product with quantized activations is piecewise constant in them.
fn fd_exclusion(s: &Sample) -> Option<&'static str> {
    use rlx_ir::op::{BinaryOp, ReduceOp, UnaryOp};
    let steps = s.graph.nodes().iter().any(|n| {
        matches!(
            n.op,
            rlx_ir::Op::Unary(UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Sign)
                | rlx_ir::Op::Binary(BinaryOp::Mod)
        )
    });
    if steps {
        return Some("a step function");
    }
    let selects = s.graph.nodes().iter().any(|n| {
        matches!(
            n.op,
            rlx_ir::Op::TopK { .. }
                | rlx_ir::Op::Pool { .. }
                | rlx_ir::Op::Reduce {
                    op: ReduceOp::Max | ReduceOp::Min,
                    ..
                }
                | rlx_ir::Op::Binary(BinaryOp::Max | BinaryOp::Min)
        )
    });
    let tied = s.inputs.iter().any(|t| {
        let mut v = t.to_f64_lossy();
        v.sort_by(f64::total_cmp);
        v.windows(2).any(|w| w[0] == w[1])
    });
    if selects && tied {
        return Some("a selection among tied values");
    }
    let quantized = s.graph.nodes().iter().any(|n| {
        matches!(
            n.op,
            rlx_ir::Op::DequantMatMul {
                scheme: Some(_),
                ..
            }
        )
    });
    quantized.then_some("activations quantized per block")
}

/// A graph whose values are F32 / F64 (integer and Bool inputs are held
/// fixed), with the data of the derivative checks.
struct FloatGraph {
    /// Indices of the float inputs.
    wrt: Vec<usize>,
    /// Indices of the float outputs.
    outs: Vec<usize>,
    /// A direction per float input.
    direction: Vec<Vec<f64>>,
    /// A weight tensor per float output: `L = Σ_k Σ w_k · out_k`.
    weights: Vec<HostTensor>,
    /// Finite-difference step.
    h: f64,
}

fn is_float(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F64)
}

fn lcg(seed: u64, n: usize) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

fn tensor_like(t: &HostTensor, v: &[f64]) -> HostTensor {
    match t.dtype() {
        DType::F64 => HostTensor::from_slice(v, t.dims()).expect("f64 tensor"),
        _ => {
            let f: Vec<f32> = v.iter().map(|&x| x as f32).collect();
            HostTensor::from_slice(&f, t.dims()).expect("f32 tensor")
        }
    }
}

impl FloatGraph {
    fn of(s: &Sample) -> Option<FloatGraph> {
        // Low-precision and complex graphs are too coarse for finite differences.
        let all_ok = s.graph.nodes().iter().all(|n| {
            let d = n.shape.dtype();
            is_float(d) || !(d.is_float() || d == DType::C64)
        });
        let wrt: Vec<usize> = (0..s.inputs.len())
            .filter(|&i| is_float(s.inputs[i].dtype()) && s.inputs[i].numel() > 0)
            .collect();
        let outs: Vec<usize> = s
            .graph
            .outputs()
            .iter()
            .enumerate()
            .filter(|(_, &o)| is_float(s.graph.shape(o).dtype()))
            .map(|(i, _)| i)
            .collect();
        // Derivatives are checked where they exist: finite values only.
        let finite = |t: &HostTensor| t.to_f64_lossy().iter().all(|v| v.is_finite());
        let all_finite = s.inputs.iter().chain(&s.expected).all(finite);
        if !all_ok || !all_finite || wrt.is_empty() || outs.is_empty() {
            return None;
        }
        let direction = wrt
            .iter()
            .map(|&i| lcg(17 + i as u64, s.inputs[i].numel()))
            .collect();
        let weights = outs
            .iter()
            .map(|&k| {
                let t = &s.expected[k];
                tensor_like(t, &lcg(101 + k as u64, t.numel()))
            })
            .collect();
        let f64_only = s
            .graph
            .nodes()
            .iter()
            .all(|n| !n.shape.dtype().is_float() || n.shape.dtype() == DType::F64);
        Some(FloatGraph {
            wrt,
            outs,
            direction,
            weights,
            h: if f64_only { 1e-6 } else { 1e-3 },
        })
    }

    /// The sample's graph with weight inputs `w0..` and the scalar loss
    /// `Σ_k sum(w_k * out_k)` as its only output.
    fn loss_graph(&self, s: &Sample) -> Res<Graph> {
        let mut g = s.graph.clone();
        let outs = g.outputs().to_vec();
        let mut total: Option<NodeId> = None;
        for (j, &k) in self.outs.iter().enumerate() {
            let o = outs[k];
            let w = g
                .try_input(&format!("w{j}"), g.shape(o).clone())
                .map_err(|e| e.to_string())?;
            let p = g.mul(o, w);
            let axes: Vec<i64> = (0..g.shape(p).rank() as i64).collect();
            let term = if axes.is_empty() {
                p
            } else {
                g.sum(p, &axes, false)
            };
            let term = if g.shape(term).dtype() == DType::F64 {
                term
            } else {
                g.cast(term, DType::F64)
            };
            total = Some(match total {
                Some(t) => g.add(t, term),
                None => term,
            });
        }
        g.set_outputs(vec![total.ok_or("no float output")?]);
        Ok(g)
    }

    fn loss_inputs(&self, s: &Sample, shift: f64) -> Vec<(String, HostTensor)> {
        let mut ins = named(s);
        for (j, &i) in self.wrt.iter().enumerate() {
            let x = s.inputs[i].to_f64_lossy();
            let v: Vec<f64> = x
                .iter()
                .zip(&self.direction[j])
                .map(|(a, d)| a + shift * d)
                .collect();
            ins[i].1 = tensor_like(&s.inputs[i], &v);
        }
        for (j, w) in self.weights.iter().enumerate() {
            ins.push((format!("w{j}"), w.clone()));
        }
        ins
    }

    /// `⟨∇L, d⟩` from reverse mode, or `None` when the table says reverse
    /// mode does not apply (and the transform refused as it should).
    fn directional_grad(&self, s: &Sample, device: Device) -> Res<Option<f64>> {
        let g = self.loss_graph(s)?;
        let wrt: Vec<NodeId> = self.wrt.iter().map(|&i| g.inputs()[i].0).collect();
        let grad = rlx_autodiff::grad_with_loss(&g, &wrt);
        if let Some((kind, rule)) = unsupported(s, |i| i.vjp) {
            return expect_refusal(grad, kind, rule);
        }
        let grad = grad.map_err(|e| format!("grad_with_loss: {e}"))?;
        let outs = run(
            device,
            &grad,
            &CompileOptions::default(),
            &self.loss_inputs(s, 0.0),
        )?;
        let mut dot = 0.0;
        for (j, gr) in outs[1..=self.wrt.len()].iter().enumerate() {
            let gv = float_values(gr)?;
            dot += gv
                .iter()
                .zip(&self.direction[j])
                .map(|(a, b)| a * b)
                .sum::<f64>();
        }
        Ok(Some(dot))
    }

    /// Central differences of `L` along the direction against reverse mode.
    fn finite_differences(
        &self,
        s: &Sample,
        device: Device,
        outs: &[HostTensor],
        ad: f64,
    ) -> Res<bool> {
        let g = self.loss_graph(s)?;
        let mut compiled = Session::new(device)
            .try_compile(g)
            .map_err(|e| format!("compile: {e}"))?;
        let mut loss = |shift: f64| -> Res<f64> {
            let ins = self.loss_inputs(s, shift);
            let feeds: Vec<(&str, &HostTensor)> =
                ins.iter().map(|(n, t)| (n.as_str(), t)).collect();
            let r = compiled
                .try_run_typed(&feeds)
                .map_err(|e| format!("run: {e}"))?;
            Ok(float_values(&r[0])?[0])
        };
        let fd = (loss(self.h)? - loss(-self.h)?) / (2.0 * self.h);
        // The loss's own rounding, divided by the step, bounds what FD can see.
        let scale: f64 = self
            .outs
            .iter()
            .zip(&self.weights)
            .map(|(&k, w)| {
                let o = float_values(&outs[k]).unwrap_or_default();
                let w = w.to_f64_lossy();
                o.iter().zip(&w).map(|(a, b)| (a * b).abs()).sum::<f64>()
            })
            .sum();
        let f32_noise = if self.h < 1e-5 { 1e-8 } else { 1e-3 };
        let tol = 2e-2 * ad.abs().max(fd.abs()) + f32_noise * (1.0 + scale);
        if (fd - ad).abs() <= tol {
            Ok(true)
        } else {
            Err(format!(
                "directional derivative: reverse mode {ad:.6e}, finite differences {fd:.6e} (tolerance {tol:.1e})"
            ))
        }
    }

    /// Forward mode along the same direction, weighted like the loss, equals
    /// reverse mode's `⟨∇L, d⟩`.
    fn jvp_matches(&self, s: &Sample, device: Device, ad: f64) -> Res<bool> {
        let leaves: Vec<NodeId> = self.wrt.iter().map(|&i| s.graph.inputs()[i].0).collect();
        let j = rlx_autodiff::jvp(&s.graph, &leaves);
        if let Some((kind, rule)) = unsupported(s, |i| i.jvp) {
            return expect_refusal(j, kind, rule).map(|_| true);
        }
        let j = j.map_err(|e| format!("jvp: {e}"))?;
        let mut ins = named(s);
        for (n, &i) in self.wrt.iter().enumerate() {
            let name = format!("{}x{i}", rlx_autodiff::TANGENT_PREFIX);
            ins.push((name, tensor_like(&s.inputs[i], &self.direction[n])));
        }
        let outs = run(device, &j, &CompileOptions::default(), &ins)?;
        let n_out = s.graph.outputs().len();
        let tangents = &outs[n_out..];
        let tangent_of = |k: usize| -> Option<&HostTensor> {
            if tangents.len() == n_out {
                tangents.get(k)
            } else {
                self.outs
                    .iter()
                    .position(|&o| o == k)
                    .and_then(|p| tangents.get(p))
            }
        };
        let mut dot = 0.0;
        let mut mag = 0.0;
        for (j, &k) in self.outs.iter().enumerate() {
            let t = float_values(tangent_of(k).ok_or("missing tangent output")?)?;
            let w = self.weights[j].to_f64_lossy();
            dot += t.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>();
            mag += t.iter().zip(&w).map(|(a, b)| (a * b).abs()).sum::<f64>();
        }
        let tol = s.rtol.max(1e-4) * (ad.abs() + mag) + 1e-6;
        if (dot - ad).abs() <= tol {
            Ok(true)
        } else {
            Err(format!(
                "Σ w·jvp = {dot:.6e} but ⟨∇L, d⟩ = {ad:.6e} (tolerance {tol:.1e})"
            ))
        }
    }
}

/// The first input batched two ways (as given, and shifted for floats)
/// computes what two separate runs compute.
fn vmap_matches_loop(s: &Sample, device: Device, outs: &[HostTensor]) -> Res<bool> {
    let Some(x0) = s.inputs.first() else {
        return Ok(false);
    };
    let v = rlx_autodiff::vmap(&s.graph, &["x0"], 2);
    if let Some((kind, rule)) = unsupported(s, |i| i.vmap) {
        return expect_refusal(v, kind, rule).map(|_| true);
    }
    let v = v.map_err(|e| format!("vmap: {e}"))?;
    let second = if is_float(x0.dtype()) {
        let shifted: Vec<f64> = x0.to_f64_lossy().iter().map(|a| a * 0.5 + 0.25).collect();
        tensor_like(x0, &shifted)
    } else {
        x0.clone()
    };
    let mut bytes = x0.bytes().to_vec();
    bytes.extend_from_slice(second.bytes());
    let mut dims = vec![2];
    dims.extend_from_slice(x0.dims());
    let stacked = HostTensor::from_bytes(x0.dtype(), &dims, bytes).map_err(|e| e.to_string())?;
    let mut ins = named(s);
    ins[0].1 = stacked;
    let batched = run(device, &v, &CompileOptions::default(), &ins)?;
    let mut ins2 = named(s);
    ins2[0].1 = second;
    let looped = [
        outs.to_vec(),
        run(device, &s.graph, &CompileOptions::default(), &ins2)?,
    ];
    for (k, b) in batched.iter().enumerate() {
        let per = b.bytes().len() / 2;
        for (e, run_outs) in looped.iter().enumerate() {
            let part = HostTensor::from_bytes(
                b.dtype(),
                &b.dims()[1..],
                b.bytes()[e * per..(e + 1) * per].to_vec(),
            )
            .map_err(|e| e.to_string())?;
            compare_tensors(&part, &run_outs[k], 1e-5, 1e-5)
                .map_err(|err| format!("output {k}, example {e}: {err}"))?;
        }
    }
    Ok(true)
}
