//! `export_graph`: a trained-graph-shaped RLX graph is imported, quantized
//! and exported; the simulated RTL matches rlx-quant-int8's integer
//! reference of the same quantized model. A graph with an op the datapath
//! lacks is refused by name.

mod common;

use rlx_fpga::sim::simulate_iverilog;
use rlx_fpga::{export_graph, FpgaError, FpgaExportConfig, GraphIoBind, IoConfig};
use rlx_ir::{DType, Graph, GraphExt, NodeId, Shape};
use std::collections::HashMap;

/// Deterministic values in [-bound, bound] (an LCG).
fn values(seed: u64, n: usize, bound: f32) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * bound
        })
        .collect()
}

fn param(g: &mut Graph, p: &mut HashMap<String, Vec<f32>>, name: &str, dims: &[usize]) -> NodeId {
    let n = dims.iter().product();
    p.insert(
        name.into(),
        values(name.len() as u64 * 31 + n as u64, n, 0.5),
    );
    g.param(name, Shape::new(dims, DType::F32))
}

/// x [1, 2, 6, 6] -> conv 3x3 p1 (3) + relu -> maxpool 2 -> flatten -> dense 5 (+ softmax).
fn cnn(params: &mut HashMap<String, Vec<f32>>, softmax: bool) -> Graph {
    let mut g = Graph::new("tiny cnn");
    let x = g.input("pixels", Shape::new(&[1, 2, 6, 6], DType::F32));
    let w1 = param(&mut g, params, "w1", &[3, 2, 3, 3]);
    let b1 = param(&mut g, params, "b1", &[3]);
    let h = GraphExt::conv2d(&mut g, x, w1, Some(b1), [1, 1], [1, 1]);
    let h = g.relu(h);
    let h = g.max_pool2d(h, [2, 2], [2, 2], [0, 0]);
    let h = g.reshape_(h, &[1, 27]);
    let w2 = param(&mut g, params, "w2", &[27, 5]);
    let b2 = param(&mut g, params, "b2", &[5]);
    let h = g.mm(h, w2);
    let mut h = g.add(h, b2);
    if softmax {
        h = g.softmax(h, 1, Shape::new(&[1, 5], DType::F32));
    }
    g.set_outputs(vec![h]);
    g
}

#[test]
fn exported_graph_simulates_bit_exact_to_the_reference() {
    let mut params = HashMap::new();
    let graph = cnn(&mut params, false);
    let calibration: Vec<Vec<f32>> = (0..16).map(|i| values(100 + i, 72, 1.0)).collect();
    let float = rlx_quant_int8::float_model_from_graph(&graph, &params).unwrap();
    let model = rlx_quant_int8::quantize(&float, &calibration).unwrap();
    let images: Vec<Vec<i8>> = (0..6)
        .map(|i| model.quantize_input(&values(500 + i, 72, 1.0)))
        .collect();
    let config = FpgaExportConfig {
        io: IoConfig {
            bind: GraphIoBind {
                input: Some("pixels".into()),
                output: None,
            },
            ..Default::default()
        },
        testbench_images: images.clone(),
        ..Default::default()
    };
    let arts = export_graph(
        &graph,
        &params,
        &calibration,
        &config,
        common::scratch("graph"),
    )
    .unwrap();
    assert_eq!(arts.top, "tiny_cnn_top");
    if !common::hdl_tools() {
        return;
    }
    let sim = simulate_iverilog(&arts).unwrap();
    for (i, (got, image)) in sim.iter().zip(&images).enumerate() {
        assert_eq!(got.logits, model.run_reference(image).unwrap(), "image {i}");
    }
}

#[test]
fn graph_errors_are_named() {
    let mut params = HashMap::new();
    let graph = cnn(&mut params, true);
    let calibration: Vec<Vec<f32>> = (0..4).map(|i| values(i, 72, 1.0)).collect();
    let dir = common::scratch("graph-softmax");
    let r = export_graph(
        &graph,
        &params,
        &calibration,
        &FpgaExportConfig::default(),
        &dir,
    );
    assert!(
        matches!(
            r,
            Err(FpgaError::UnsupportedLayer {
                kind: "softmax",
                ..
            })
        ),
        "{r:?}"
    );
    let wrong_bind = FpgaExportConfig {
        io: IoConfig {
            bind: GraphIoBind {
                input: Some("image".into()),
                output: None,
            },
            ..Default::default()
        },
        ..Default::default()
    };
    let graph = cnn(&mut params, false);
    let r = export_graph(&graph, &params, &calibration, &wrong_bind, &dir);
    assert!(matches!(r, Err(FpgaError::InvalidConfig(_))), "{r:?}");
    assert!(!dir.exists());
}
