//! Invalid arguments are typed errors (never panics), with numpy's and
//! torch's rules for what is invalid.

use rlx_rng::{Generator, RandomState, RngError, TorchGenerator};

#[test]
fn integer_ranges() {
    let mut g = Generator::new(0);
    assert!(matches!(
        g.integers(5, 5, 3),
        Err(RngError::EmptyRange {
            low: 5,
            high: 5,
            closed: false
        })
    ));
    assert!(matches!(
        g.integers(6, 5, 3),
        Err(RngError::EmptyRange { .. })
    ));
    // a closed range with low == high is fine
    assert_eq!(g.integers_as::<i64>(5, 5, 3, true).unwrap(), [5, 5, 5]);
    assert!(matches!(
        g.integers_as::<u8>(0, 257, 1, false),
        Err(RngError::BoundOutOfRange {
            which: "high",
            dtype: "uint8",
            ..
        })
    ));
    assert!(matches!(
        g.integers_as::<i8>(-129, 0, 1, false),
        Err(RngError::BoundOutOfRange {
            which: "low",
            dtype: "int8",
            ..
        })
    ));
    // numpy allows high = 256 for uint8 (exclusive)
    assert_eq!(g.integers_as::<u8>(0, 256, 4, false).unwrap().len(), 4);
    let mut rs = RandomState::new(0);
    assert!(matches!(
        rs.randint(0, 0, 1),
        Err(RngError::EmptyRange { .. })
    ));
    assert!(matches!(
        rs.randint_as::<u32>(-1, 3, 1),
        Err(RngError::BoundOutOfRange { .. })
    ));
    let mut t = TorchGenerator::manual_seed(0);
    assert!(matches!(
        t.randint(3, 3, 1),
        Err(RngError::EmptyRange { .. })
    ));
}

#[test]
fn probabilities() {
    let mut t = TorchGenerator::manual_seed(0);
    for p in [-0.1, 1.5, f64::NAN] {
        assert!(
            matches!(t.bernoulli(p, 4), Err(RngError::Probability { .. })),
            "{p}"
        );
        assert!(
            matches!(t.bernoulli_scalar(p, 4), Err(RngError::Probability { .. })),
            "{p}"
        );
        assert!(
            matches!(t.dropout_mask(p, 4), Err(RngError::Probability { .. })),
            "{p}"
        );
        assert!(
            matches!(t.dropout(&[1.0; 4], p), Err(RngError::Probability { .. })),
            "{p}"
        );
    }
    assert!(matches!(
        t.bernoulli_probs(&[0.5, 2.0]),
        Err(RngError::Probability { .. })
    ));
    assert_eq!(t.dropout_mask(0.0, 3).unwrap(), [1.0; 3]);
    assert_eq!(t.dropout_mask(1.0, 3).unwrap(), [0.0; 3]);
}

#[test]
fn choice_arguments() {
    let mut g = Generator::new(1);
    let mut rs = RandomState::new(1);
    assert!(matches!(
        g.choice(0, 1, true, None, true),
        Err(RngError::EmptyPopulation { size: 1 })
    ));
    assert!(matches!(
        rs.choice(0, 1, true, None),
        Err(RngError::EmptyPopulation { .. })
    ));
    assert_eq!(g.choice(0, 0, true, None, true).unwrap(), Vec::<i64>::new());
    assert!(matches!(
        g.choice(3, 4, false, None, true),
        Err(RngError::SampleTooLarge {
            size: 4,
            population: 3
        })
    ));
    assert!(matches!(
        rs.choice(3, 4, false, None),
        Err(RngError::SampleTooLarge { .. })
    ));
    let bad: [&[f64]; 4] = [
        &[0.5, 0.5, 0.0, 0.0],
        &[0.5, 0.6, -0.1],
        &[0.5, 0.2, 0.2],
        &[0.5, f64::NAN, 0.5],
    ];
    for p in bad {
        assert!(
            matches!(
                g.choice(3, 2, true, Some(p), true),
                Err(RngError::InvalidProbabilities(_))
            ),
            "{p:?}"
        );
        assert!(
            matches!(
                rs.choice(3, 2, true, Some(p)),
                Err(RngError::InvalidProbabilities(_))
            ),
            "{p:?}"
        );
    }
    // fewer non-zero entries than samples without replacement
    let p = [0.5, 0.5, 0.0];
    assert!(matches!(
        g.choice(3, 3, false, Some(&p), true),
        Err(RngError::InvalidProbabilities(_))
    ));
    assert_eq!(g.choice(3, 2, false, Some(&p), true).unwrap().len(), 2);
}

#[test]
fn scales_and_ranges() {
    let mut g = Generator::new(2);
    let mut rs = RandomState::new(2);
    let mut t = TorchGenerator::manual_seed(2);
    assert!(matches!(
        g.normal(0.0, -1.0, 2),
        Err(RngError::NegativeScale { name: "scale", .. })
    ));
    assert!(matches!(
        rs.normal(0.0, f64::NAN, 2),
        Err(RngError::NegativeScale { .. })
    ));
    assert!(matches!(
        t.normal(0.0, -1.0, 2),
        Err(RngError::NegativeScale { name: "std", .. })
    ));
    assert!(matches!(
        t.normal_f64(0.0, -1.0, 2),
        Err(RngError::NegativeScale { .. })
    ));
    assert!(matches!(
        g.uniform(-f64::MAX, f64::MAX, 1),
        Err(RngError::NonFiniteRange(_))
    ));
    assert!(matches!(
        rs.uniform(0.0, f64::INFINITY, 1),
        Err(RngError::NonFiniteRange(_))
    ));
    // numpy allows low > high in uniform; torch does not
    assert_eq!(g.uniform(1.0, 0.0, 2).unwrap().len(), 2);
    assert!(matches!(
        t.uniform(1.0, 0.0, 2),
        Err(RngError::InvalidUniformRange { .. })
    ));
    assert!(matches!(
        t.uniform_f64(0.0, f64::NAN, 2),
        Err(RngError::InvalidUniformRange { .. })
    ));
}

#[test]
fn seeds() {
    assert!(matches!(
        RandomState::from_array(&[]),
        Err(RngError::InvalidSeed(_))
    ));
    assert!(matches!(
        RandomState::try_new(-1),
        Err(RngError::InvalidSeed(_))
    ));
    assert!(matches!(
        RandomState::try_new(1 << 32),
        Err(RngError::InvalidSeed(_))
    ));
    assert!(RandomState::try_new((1 << 32) - 1).is_ok());
}

#[test]
fn messages_name_the_culprit() {
    let e = Generator::new(0).integers(7, 3, 1).unwrap_err();
    assert_eq!(e.to_string(), "empty integer range: low = 7, high = 3");
    let e = TorchGenerator::manual_seed(0)
        .bernoulli(1.5, 1)
        .unwrap_err();
    assert_eq!(e.to_string(), "probability p = 1.5 is outside [0, 1]");
}

#[test]
fn generator_distribution_parameters() {
    let mut g = Generator::new(3);
    let bad = |r: Result<Vec<f64>, RngError>, want: &str| {
        let e = r.unwrap_err();
        assert!(matches!(e, RngError::InvalidParameter { .. }), "{e:?}");
        assert!(e.to_string().contains(want), "{e}");
    };
    bad(g.exponential(-1.0, 2), "scale");
    bad(g.exponential(-0.0, 2), "scale"); // numpy checks the sign bit
    bad(g.standard_gamma(-0.5, 2), "shape");
    bad(g.gamma(1.0, -2.0, 2), "scale");
    bad(g.beta(0.0, 1.0, 2), "a");
    bad(g.beta(1.0, -3.0, 2), "b");
    let e = g.poisson(-1.0, 2).unwrap_err();
    assert_eq!(e.to_string(), "invalid lam = -1: lam < 0 or lam is NaN");
    assert!(g.poisson(f64::NAN, 2).is_err());
    let e = g.poisson(1e19, 2).unwrap_err();
    assert!(e.to_string().contains("lam value too large"), "{e}");
    assert_eq!(
        g.binomial(-1, 0.5, 2),
        Err(RngError::NegativeCount {
            name: "n",
            value: -1
        })
    );
    assert!(matches!(
        g.binomial(3, 1.5, 2),
        Err(RngError::Probability { name: "p", .. })
    ));
    assert!(g.binomial(3, f64::NAN, 2).is_err());
    // NaN shape / scale / a pass numpy's checks and give NaN
    assert!(g.exponential(f64::NAN, 1).unwrap()[0].is_nan());
    assert!(g.beta(f64::NAN, 1.0, 1).unwrap()[0].is_nan());
    // the errors draw nothing: a fresh generator after the same valid calls agrees
    let mut a = Generator::new(9);
    let mut b = Generator::new(9);
    assert!(a.poisson(-2.0, 5).is_err());
    assert_eq!(a.random(3), b.random(3));
}

#[test]
fn shuffle_axis_shapes() {
    let mut g = Generator::new(1);
    let mut x = vec![0i64; 6];
    assert!(matches!(
        g.shuffle_axis(&mut x, &[2, 3], 2),
        Err(RngError::Shape(_))
    ));
    assert!(matches!(
        g.shuffle_axis(&mut x, &[4, 2], 0),
        Err(RngError::Shape(_))
    ));
    let mut empty: Vec<i64> = Vec::new();
    g.shuffle_axis(&mut empty, &[0, 3], 1).unwrap();
}

#[test]
fn torch_multinomial_exponential_and_tensor_normal() {
    let mut g = TorchGenerator::manual_seed(0);
    let msg = |r: Result<Vec<i64>, RngError>| r.unwrap_err().to_string();
    assert_eq!(
        msg(g.multinomial(&[0.5f32, -0.1, 0.6], 3, 2, false)),
        "invalid probabilities: probability tensor contains either inf, nan or element < 0 (found -0.10000000149011612)"
    );
    assert_eq!(
        msg(g.multinomial(&[0.5f32, f32::NAN], 2, 3, true)),
        "invalid probabilities: invalid multinomial distribution (encountering probability entry = infinity or NaN)"
    );
    assert_eq!(
        msg(g.multinomial(&[0.5f64, -1.0], 2, 3, true)),
        "invalid probabilities: invalid multinomial distribution (encountering probability entry < 0)"
    );
    assert_eq!(
        msg(g.multinomial(&[1.0f32, 2.0, 0.0, 0.0], 2, 1, false)),
        "invalid probabilities: invalid multinomial distribution (sum of probabilities <= 0) in row 1"
    );
    assert_eq!(
        msg(g.multinomial(&[0.0f32, 0.0], 2, 2, true)),
        "invalid probabilities: invalid multinomial distribution (sum of probabilities <= 0)"
    );
    assert_eq!(
        msg(g.multinomial(&[1.0f32, 0.0, 2.0], 3, 3, false)),
        "invalid probabilities: row 0 has 2 non-zero probabilities, fewer than the 3 samples to draw without replacement"
    );
    assert!(matches!(
        g.multinomial(&[1.0f32, 2.0], 2, 3, false),
        Err(RngError::SampleTooLarge {
            size: 3,
            population: 2
        })
    ));
    assert!(matches!(
        g.multinomial(&[1.0f32, 2.0, 3.0], 2, 1, true),
        Err(RngError::Shape(_))
    ));
    assert_eq!(
        msg(g.multinomial::<f32>(&[], 0, 1, true)),
        "invalid probabilities: prob_dist must have at least one category"
    );
    assert_eq!(
        msg(g.multinomial(&[1.0f32], 1, 0, true)),
        "invalid probabilities: cannot sample num_samples <= 0 samples"
    );
    assert_eq!(
        g.exponential(0.0, 3).unwrap_err().to_string(),
        "invalid lambd = 0: exponential_ expects lambd > 0"
    );
    assert_eq!(
        g.normal_tensor(&[0.0f32, 1.0], &[1.0, -2.0])
            .unwrap_err()
            .to_string(),
        "std must be non-negative, got -2"
    );
    assert!(matches!(
        g.normal_tensor(&[0.0f64, 1.0], &[1.0]),
        Err(RngError::Shape(_))
    ));
    assert!(g.normal_mean_tensor(&[0.0f32], f64::NAN).is_err());
    assert!(g.normal_std_tensor(0.0, &[f32::NAN]).is_err());
    // a refused call draws nothing: the stream continues as if it was not made
    let mut fresh = TorchGenerator::manual_seed(0);
    assert_eq!(g.rand(4), fresh.rand(4));
}
