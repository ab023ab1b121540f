//! Structure of expanded graphs: they verify, and the IR's own shape
//! inference gives the hand-computed output shapes.

use rlx_ir::{verify_all, Dim, Graph};
use rlx_lang::rlx;

fn dims(g: &Graph, out: usize) -> Vec<String> {
    let id = g.outputs()[out];
    g.shape(id)
        .dims()
        .iter()
        .map(|d| match d {
            Dim::Static(n) => n.to_string(),
            Dim::Sym(s) => s.clone(),
        })
        .collect()
}

fn ok(g: &Graph) {
    let errs = verify_all(g);
    assert!(errs.is_empty(), "{errs:?}\n{}", g.to_text());
}

#[test]
fn mlp_with_symbolic_batch() {
    let g = rlx! {
        graph mlp;
        input x: f32[B, 784];
        input y: f32[B, 10];
        param w1: f32[784, 32];
        param b1: f32[32];
        param w2: f32[32, 10];
        param b2: f32[10];
        let h = relu(x @ w1 + b1);
        let logits = h @ w2 + b2;
        out probs = softmax(logits, axis=-1);
        out loss = -mean(sum(y * log_softmax(logits), -1));
        tap hidden = h;
    };
    ok(&g);
    assert_eq!(g.name(), "mlp");
    assert_eq!(g.outputs().len(), 3);
    assert_eq!(dims(&g, 0), ["B", "10"]);
    assert!(dims(&g, 1).is_empty());
    assert_eq!(dims(&g, 2), ["B", "32"]);
    let params: Vec<&str> = g.params().iter().map(|p| p.1).collect();
    assert_eq!(params, ["w1", "b1", "w2", "b2"]);
}

#[test]
fn python_precedence() {
    // -x ** 2 is -(x ** 2); @ binds like *; ** is right-associative.
    let g = rlx! {
        graph prec;
        input a: f32[2, 3];
        input b: f32[3, 4];
        out -a ** 2;
        out 2 * a @ b + 1;
        out a ** 2 ** 1;
    };
    ok(&g);
    assert_eq!(dims(&g, 1), ["2", "4"]);
}

#[test]
fn repeat_names_params_per_layer() {
    let g = rlx! {
        graph stack;
        input x: f32[B, 8];
        let h = x;
        repeat 3 {
            param w: f32[8, 8];
            param bias: f32[8] as "blocks.{i}.b";
            let h = tanh(h @ w + bias);
        }
        out h;
    };
    ok(&g);
    let params: Vec<&str> = g.params().iter().map(|p| p.1).collect();
    assert_eq!(
        params,
        [
            "layers.0.w",
            "blocks.0.b",
            "layers.1.w",
            "blocks.1.b",
            "layers.2.w",
            "blocks.2.b"
        ]
    );
}

#[test]
fn fn_reshape_transpose_and_scan() {
    let g = rlx! {
        graph misc;
        input x: f32[B, S, 8];
        input seq: f32[5, 3];
        param w: f32[3, 3];
        fn heads(t) = transpose(reshape(t, [B, S, 2, 4]), [0, 2, 1, 3]);
        out heads(x);
        let (h, hs) = scan(sum(seq, 0), seq) |c, s| {
            let c = tanh(c @ w + s);
            (c, c * 2.0)
        };
        out h;
        out hs;
        out reshape(x, [B, S, 2, -1]);
        out squeeze(expand_dims(x, 1), 1);
        out concatenate([seq, seq], axis=1);
        out logsumexp(seq, 1);
    };
    ok(&g);
    assert_eq!(dims(&g, 0), ["B", "2", "S", "4"]);
    assert_eq!(dims(&g, 1), ["3"]);
    assert_eq!(dims(&g, 2), ["5", "3"]);
    assert_eq!(dims(&g, 3), ["B", "S", "2", "4"]);
    assert_eq!(dims(&g, 4), ["B", "S", "8"]);
    assert_eq!(dims(&g, 5), ["5", "6"]);
    assert_eq!(dims(&g, 6), ["5"]);
}
