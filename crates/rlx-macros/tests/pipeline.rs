//! `pipeline_schedule!` orders stages so every stage comes after what it
//! depends on. The expected orders below were worked out by hand (Kahn's
//! algorithm taking ready stages in declaration order), and each order is
//! also checked against the declared dependencies directly.

rlx_macros::pipeline_schedule! {
    /// A transformer block's stages.
    pub Block {
        residual2 => [mlp, residual1],
        mlp       => [norm2],
        norm2     => [residual1],
        residual1 => [attention],
        attention => [qkv],
        qkv       => [norm1],
        norm1     => [],
    }
}

rlx_macros::pipeline_schedule! {
    Diamond {
        d => [b, c],
        c => [a],
        b => [a],
        a => [],
    }
}

rlx_macros::pipeline_schedule! {
    Single { only => [] }
}

/// Every stage once, each after its dependencies.
fn assert_valid(order: &[&str], stages: &[&str], deps: &[&[&str]]) {
    let mut sorted_order = order.to_vec();
    let mut sorted_stages = stages.to_vec();
    sorted_order.sort();
    sorted_stages.sort();
    assert_eq!(
        sorted_order, sorted_stages,
        "not a permutation of the stages"
    );
    for (i, stage_deps) in deps.iter().enumerate() {
        for d in *stage_deps {
            let at = order.iter().position(|s| s == d).unwrap();
            assert!(at < i, "{} runs before its dependency {d}", order[i]);
        }
    }
}

#[test]
fn a_chain_declared_backwards_runs_forwards() {
    assert_eq!(
        Block::ORDER,
        [
            "norm1",
            "qkv",
            "attention",
            "residual1",
            "norm2",
            "mlp",
            "residual2"
        ]
    );
    assert_eq!(Block::LEVELS, [0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(Block::STAGES[0], "residual2");
    assert_valid(&Block::ORDER, &Block::STAGES, &Block::DEPENDENCIES);
}

#[test]
fn independent_stages_share_a_level() {
    assert_eq!(Diamond::ORDER, ["a", "c", "b", "d"]);
    assert_eq!(Diamond::LEVELS, [0, 1, 1, 2]);
    assert_eq!(Diamond::DEPENDENCIES[3], &["b", "c"]);
    assert_valid(&Diamond::ORDER, &Diamond::STAGES, &Diamond::DEPENDENCIES);
}

#[test]
fn the_order_is_usable_in_const_context() {
    const FIRST: &str = Single::ORDER[0];
    assert_eq!(FIRST, "only");
    assert_eq!(Single, Single);
}
