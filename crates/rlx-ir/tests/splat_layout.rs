//! The splat ops' layouts and helpers against hand-computed values, their
//! shape rules, attributes and textual IR.

use rlx_ir::ops::splat::{
    gaussian_splat_packed_grad_len, gaussian_splat_prep_packed_len, gaussian_splat_prep_split,
    gaussian_splat_tile_count, gaussian_splat_tiles, prep_field, register, splat_prepare,
    splat_rasterize, splat_render, splat_render_bwd, unpack_gaussian_splat_packed_grads,
    GaussianSplatInputs, GaussianSplatRenderParams, GAUSSIAN_SPLAT_GRAD_FLOATS_PER_GAUSSIAN,
    GAUSSIAN_SPLAT_PREP_RASTER_PARAMS_FLOATS, GAUSSIAN_SPLAT_PREP_RECORD_FLOATS,
    GAUSSIAN_SPLAT_TILE_SIZE,
};
use rlx_ir::{DType, Graph, NodeId, Shape};

#[test]
fn tile_counts_by_hand() {
    assert_eq!(GAUSSIAN_SPLAT_TILE_SIZE, 16);
    // ceil(w / 16) · ceil(h / 16).
    assert_eq!(gaussian_splat_tile_count(32, 24), 2 * 2);
    assert_eq!(gaussian_splat_tile_count(16, 16), 1);
    assert_eq!(gaussian_splat_tile_count(17, 16), 2);
    assert_eq!(gaussian_splat_tile_count(1, 1), 1);
    assert_eq!(gaussian_splat_tile_count(0, 24), 0);
    assert_eq!(gaussian_splat_tiles(1920, 1080), (120, 68));
    assert_eq!(gaussian_splat_tile_count(1920, 1080), 8160);
}

#[test]
fn prep_and_grad_lengths_by_hand() {
    assert_eq!(GAUSSIAN_SPLAT_PREP_RASTER_PARAMS_FLOATS, 8);
    assert_eq!(GAUSSIAN_SPLAT_PREP_RECORD_FLOATS, 15);
    // 8 header + 20 · (15 record + 1 order) + 4 tiles.
    assert_eq!(gaussian_splat_prep_packed_len(20, 32, 24), 332);
    assert_eq!(gaussian_splat_prep_packed_len(0, 32, 24), 12);
    assert_eq!(gaussian_splat_prep_packed_len(1, 1920, 1080), 8 + 16 + 8160);
    let s = gaussian_splat_prep_split(20, 32, 24);
    assert_eq!(
        (s.header, s.records, s.order, s.tiles),
        (0..8, 8..308, 308..328, 328..332)
    );
    assert_eq!(prep_field::TILE_Y1 + 1, GAUSSIAN_SPLAT_PREP_RECORD_FLOATS);
    assert_eq!(GAUSSIAN_SPLAT_GRAD_FLOATS_PER_GAUSSIAN, 3 + 3 + 4 + 1 + 3);
    assert_eq!(gaussian_splat_packed_grad_len(20), 280);
}

#[test]
fn unpack_splits_the_packed_gradient_in_input_order() {
    // Two Gaussians: means 0..6, scales 6..12, rotations 12..20, opacities 20..22, colors 22..28.
    let packed: Vec<f32> = (0..28).map(|v| v as f32).collect();
    let g = unpack_gaussian_splat_packed_grads(&packed).unwrap();
    let r = |a: u8, b: u8| (a..b).map(f32::from).collect::<Vec<_>>();
    assert_eq!(g.means, r(0, 6));
    assert_eq!(g.scales, r(6, 12));
    assert_eq!(g.rotations, r(12, 20));
    assert_eq!(g.opacities, r(20, 22));
    assert_eq!(g.colors, r(22, 28));
    assert!(unpack_gaussian_splat_packed_grads(&packed[..27]).is_none());
}

#[test]
fn num_gaussians_names_the_inconsistent_slice() {
    let v = [0.0f32; 16];
    let ok = GaussianSplatInputs {
        means: &v[..6],
        scales: &v[..6],
        rotations: &v[..8],
        opacities: &v[..2],
        colors: &v[..6],
    };
    assert_eq!(ok.num_gaussians(), Ok(2));
    let bad = GaussianSplatInputs {
        rotations: &v[..7],
        ..ok
    };
    assert!(bad
        .num_gaussians()
        .unwrap_err()
        .contains("rotations holds 7"));
}

fn params() -> GaussianSplatRenderParams {
    let mut p = GaussianSplatRenderParams::new(32, 24, 30.0);
    p.background = [0.1, 0.2, 0.3];
    p.view[3] = 0.5;
    p
}

fn inputs(g: &mut Graph, n: usize) -> GaussianSplatInputs<NodeId> {
    let dims: [&[usize]; 5] = [&[n, 3], &[n, 3], &[n, 4], &[n], &[n, 3]];
    GaussianSplatInputs::from_array(std::array::from_fn(|k| {
        g.input(&format!("x{}", g.len()), Shape::new(dims[k], DType::F32))
    }))
}

#[test]
fn params_round_trip_through_attrs_and_are_validated() {
    let p = params();
    assert_eq!(p.cx, 15.5);
    assert_eq!(p.image_len(), 32 * 24 * 3);
    assert_eq!(
        GaussianSplatRenderParams::from_attrs(&p.to_attrs()),
        Ok(p.clone())
    );
    let mut bad = p.clone();
    bad.near = 0.0;
    assert!(bad.validate().unwrap_err().contains("near"));
    let mut a = p.to_attrs();
    a.insert("view", rlx_ir::custom::CustomAttr::Floats(vec![1.0; 15]));
    assert!(GaussianSplatRenderParams::from_attrs(&a)
        .unwrap_err()
        .contains("list of 16 floats"));
}

#[test]
fn shape_rules_and_text_round_trip() {
    register();
    let p = params();
    let mut g = Graph::new("splat");
    let ins = inputs(&mut g, 5);
    let img = splat_render(&mut g, ins, &p).unwrap();
    let d = g.input("d", Shape::new(&[24, 32, 3], DType::F32));
    let grads = splat_render_bwd(&mut g, ins, d, &p).unwrap();
    let prep = splat_prepare(&mut g, ins, &p).unwrap();
    let img2 = splat_rasterize(&mut g, prep, &p).unwrap();
    assert_eq!(g.shape(img), &Shape::new(&[24, 32, 3], DType::F32));
    assert_eq!(g.shape(grads), &Shape::new(&[70], DType::F32));
    assert_eq!(g.shape(prep), &Shape::new(&[8 + 5 * 16 + 4], DType::F32));
    assert_eq!(g.shape(img2), g.shape(img));
    g.set_outputs(vec![img, grads, img2]);
    let text = g.to_text();
    for op in [
        "splat.render{",
        "splat.render_bwd{",
        "splat.prepare{",
        "splat.rasterize{",
    ] {
        assert!(text.contains(op), "{op} in {text}");
    }
    assert_eq!(Graph::from_text(&text).unwrap().to_text(), text);
}

#[test]
fn shape_rules_name_the_bad_input() {
    register();
    let p = params();
    let mut g = Graph::new("bad");
    let mut ins = inputs(&mut g, 5);
    ins.rotations = g.input("r3", Shape::new(&[5, 3], DType::F32));
    let e = splat_render(&mut g, ins, &p).unwrap_err().to_string();
    assert!(e.contains("rotations must be [5, 4]"), "{e}");
    let mut ins = inputs(&mut g, 5);
    ins.colors = g.input("c64", Shape::new(&[5, 3], DType::F64));
    let e = splat_render(&mut g, ins, &p).unwrap_err().to_string();
    assert!(e.contains("colors must be F32"), "{e}");
    let ins = inputs(&mut g, 5);
    let d = g.input("small", Shape::new(&[24, 31, 3], DType::F32));
    let e = splat_render_bwd(&mut g, ins, d, &p)
        .unwrap_err()
        .to_string();
    assert!(e.contains("d_image"), "{e}");
    let junk = g.input("junk", Shape::new(&[13 + 16 + 1], DType::F32));
    let e = splat_rasterize(&mut g, junk, &p).unwrap_err().to_string();
    assert!(e.contains("prep buffer"), "{e}");
    let mut bad = p.clone();
    bad.width = 0;
    let ins = inputs(&mut g, 5);
    assert!(splat_render(&mut g, ins, &bad)
        .unwrap_err()
        .to_string()
        .contains("image size"));
}
