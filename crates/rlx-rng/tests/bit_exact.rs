//! Replays the programs of `tests/fixtures/*.json` (written by
//! `tools/gen_rng_fixtures.py` from numpy / torch) and asserts identical
//! bits for every call. Each test gathers all mismatches of its file and
//! reports them in one message: seed, call, first differing word.

use rlx_rng::{
    BitGenerator, Generator, Mt19937, NumpyInt, Pcg64, RandomState, SeedSequence,
    TorchCpuCapability, TorchGenerator,
};
use serde_json::Value;

fn load(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn fnv(words: &[u64]) -> u64 {
    words.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &w| {
        (h ^ w).wrapping_mul(0x100_0000_01b3)
    })
}

/// Results as the fixture's 64-bit words.
trait Words {
    fn words(&self) -> Vec<u64>;
}
impl Words for Vec<f64> {
    fn words(&self) -> Vec<u64> {
        self.iter().map(|v| v.to_bits()).collect()
    }
}
impl Words for Vec<f32> {
    fn words(&self) -> Vec<u64> {
        self.iter().map(|v| v.to_bits() as u64).collect()
    }
}
macro_rules! int_words {
    ($($t:ty),*) => {$(
        impl Words for Vec<$t> {
            fn words(&self) -> Vec<u64> {
                self.iter().map(|&v| v as i64 as u64).collect()
            }
        }
    )*};
}
int_words!(i64, i32, i16, i8, u32, u16, u8);
impl Words for Vec<u64> {
    fn words(&self) -> Vec<u64> {
        self.clone()
    }
}
impl Words for Vec<bool> {
    fn words(&self) -> Vec<u64> {
        self.iter().map(|&v| v as u64).collect()
    }
}

/// Compares one call's result with its recorded `out` / `digest`.
fn check(ctx: &str, call: &Value, got: Vec<u64>, failures: &mut Vec<String>) {
    if let Some(out) = call["out"].as_str() {
        let want: Vec<u64> = out
            .split_whitespace()
            .map(|w| u64::from_str_radix(w, 16).unwrap())
            .collect();
        if want != got {
            let i = want
                .iter()
                .zip(&got)
                .position(|(a, b)| a != b)
                .unwrap_or(want.len().min(got.len()));
            failures.push(format!(
                "{ctx}: len {} vs {}, first difference at {i}: want {:x?} got {:x?}",
                want.len(),
                got.len(),
                want.get(i),
                got.get(i)
            ));
        }
    } else {
        let want = u64::from_str_radix(call["digest"].as_str().unwrap(), 16).unwrap();
        let len = call["len"].as_u64().unwrap() as usize;
        if got.len() != len || fnv(&got) != want {
            failures.push(format!(
                "{ctx}: digest of {len} words differs (got {} words)",
                got.len()
            ));
        }
    }
}

fn report(what: &str, checked: usize, failures: Vec<String>) {
    assert!(checked > 0, "{what}: no call checked");
    assert!(
        failures.is_empty(),
        "{what}: {} of {checked} calls differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn int(v: &Value) -> i128 {
    match v {
        // 2**128 - 1 entropy parses as u128 and wraps; only SeedSequence takes it, as u128
        Value::String(s) => s
            .parse::<i128>()
            .unwrap_or_else(|_| s.parse::<u128>().unwrap() as i128),
        v => v
            .as_i64()
            .map(i128::from)
            .or_else(|| v.as_u64().map(i128::from))
            .unwrap(),
    }
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn f32s_of(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

fn usize_of(v: &Value) -> usize {
    v.as_u64().unwrap() as usize
}

fn probs(v: &Value) -> Option<Vec<f64>> {
    v.as_array()
        .map(|a| a.iter().map(|x| x.as_f64().unwrap()).collect())
}

fn seed_ints(seed: &Value) -> Vec<i128> {
    match &seed["int"] {
        Value::Null => seed["array"].as_array().unwrap().iter().map(int).collect(),
        v => vec![int(v)],
    }
}

fn seed_sequence(seed: &Value) -> SeedSequence {
    let ints: Vec<u128> = seed_ints(seed).into_iter().map(|v| v as u128).collect();
    if seed["int"].is_null() {
        SeedSequence::from_ints(&ints)
    } else {
        SeedSequence::new(ints[0])
    }
}

/// `integers` / `randint` for the dtype named in the call.
fn ints_as<F>(dtype: &str, f: F) -> Vec<u64>
where
    F: IntFn,
{
    match dtype {
        "int64" => f.call::<i64>().words(),
        "int32" => f.call::<i32>().words(),
        "int16" => f.call::<i16>().words(),
        "int8" => f.call::<i8>().words(),
        "uint64" => f.call::<u64>().words(),
        "uint32" => f.call::<u32>().words(),
        "uint16" => f.call::<u16>().words(),
        "uint8" => f.call::<u8>().words(),
        "bool" => f.call::<bool>().words(),
        d => panic!("dtype {d}"),
    }
}

trait IntFn {
    fn call<T: NumpyInt>(self) -> Vec<T>;
}

struct RsInts<'a> {
    rs: &'a mut RandomState,
    low: i128,
    high: i128,
    n: usize,
}
impl IntFn for RsInts<'_> {
    fn call<T: NumpyInt>(self) -> Vec<T> {
        self.rs
            .randint_as::<T>(self.low, self.high, self.n)
            .unwrap()
    }
}

struct GenInts<'a, B: BitGenerator> {
    g: &'a mut Generator<B>,
    low: i128,
    high: i128,
    n: usize,
    endpoint: bool,
}
impl<B: BitGenerator> IntFn for GenInts<'_, B> {
    fn call<T: NumpyInt>(self) -> Vec<T> {
        self.g
            .integers_as::<T>(self.low, self.high, self.n, self.endpoint)
            .unwrap()
    }
}

fn random_state_call(rs: &mut RandomState, c: &Value) -> Vec<u64> {
    let n = || usize_of(&c["n"]);
    let f = |k: &str| c[k].as_f64().unwrap();
    match c["op"].as_str().unwrap() {
        "raw_u32" => (0..n())
            .map(|_| rs.mt19937_mut().next_u32() as u64)
            .collect(),
        "random_sample" => rs.random_sample(n()).words(),
        "randn" => rs.randn(n()).words(),
        "standard_normal" => rs.standard_normal(n()).words(),
        "randint" => {
            let (low, high, n) = (int(&c["low"]), int(&c["high"]), n());
            ints_as(c["dtype"].as_str().unwrap(), RsInts { rs, low, high, n })
        }
        "uniform" => rs.uniform(f("low"), f("high"), n()).unwrap().words(),
        "normal" => rs.normal(f("loc"), f("scale"), n()).unwrap().words(),
        "choice" => {
            let p = probs(&c["p"]);
            rs.choice(
                usize_of(&c["a"]),
                usize_of(&c["size"]),
                c["replace"].as_bool().unwrap(),
                p.as_deref(),
            )
            .unwrap()
            .words()
        }
        "permutation" => rs.permutation(n()).words(),
        "shuffle" => {
            let mut x: Vec<i64> = (0..n() as i64).collect();
            rs.shuffle(&mut x);
            x.words()
        }
        op => panic!("unknown RandomState op {op}"),
    }
}

#[test]
fn numpy_random_state() {
    let fx = load("numpy_random_state.json");
    let (mut failures, mut checked) = (Vec::new(), 0);
    for case in fx["cases"].as_array().unwrap() {
        let seed = &case["seed"];
        let mut rs = if seed["int"].is_null() {
            let key: Vec<u32> = seed_ints(seed).into_iter().map(|v| v as u32).collect();
            RandomState::from_array(&key).unwrap()
        } else {
            RandomState::try_new(int(&seed["int"])).unwrap()
        };
        for (i, call) in case["program"].as_array().unwrap().iter().enumerate() {
            let got = random_state_call(&mut rs, call);
            check(
                &format!("seed {seed} call {i} {}", call["op"]),
                call,
                got,
                &mut failures,
            );
            checked += 1;
        }
    }
    report("numpy RandomState", checked, failures);
}

/// `raw` is the bit generator's `random_raw` (64-bit words for PCG64,
/// 32-bit ones for MT19937).
fn generator_call<B: BitGenerator>(
    g: &mut Generator<B>,
    c: &Value,
    raw: fn(&mut B) -> u64,
) -> Vec<u64> {
    let n = || usize_of(&c["n"]);
    let f = |k: &str| c[k].as_f64().unwrap();
    match c["op"].as_str().unwrap() {
        "random_raw" => (0..n()).map(|_| raw(g.bit_generator_mut())).collect(),
        "random" => g.random(n()).words(),
        "random_f32" => g.random_f32(n()).words(),
        "standard_normal" => g.standard_normal(n()).words(),
        "standard_normal_f32" => g.standard_normal_f32(n()).words(),
        "normal" => g.normal(f("loc"), f("scale"), n()).unwrap().words(),
        "integers" => {
            let (low, high, n) = (int(&c["low"]), int(&c["high"]), n());
            let endpoint = c["endpoint"].as_bool().unwrap();
            ints_as(
                c["dtype"].as_str().unwrap(),
                GenInts {
                    g,
                    low,
                    high,
                    n,
                    endpoint,
                },
            )
        }
        "uniform" => g.uniform(f("low"), f("high"), n()).unwrap().words(),
        "permutation" => g.permutation(n()).words(),
        "shuffle" => {
            let mut x: Vec<i64> = (0..n() as i64).collect();
            g.shuffle(&mut x);
            x.words()
        }
        "choice" => {
            let p = probs(&c["p"]);
            g.choice(
                usize_of(&c["a"]),
                usize_of(&c["size"]),
                c["replace"].as_bool().unwrap(),
                p.as_deref(),
                c["shuffle"].as_bool().unwrap(),
            )
            .unwrap()
            .words()
        }
        "standard_exponential" => g.standard_exponential(n()).words(),
        "exponential" => g.exponential(f("scale"), n()).unwrap().words(),
        "standard_gamma" => g.standard_gamma(f("shape"), n()).unwrap().words(),
        "gamma" => g.gamma(f("shape"), f("scale"), n()).unwrap().words(),
        "beta" => g.beta(f("a"), f("b"), n()).unwrap().words(),
        "poisson" => g.poisson(f("lam"), n()).unwrap().words(),
        "binomial" => g
            .binomial(int(&c["trials"]) as i64, f("p"), n())
            .unwrap()
            .words(),
        "shuffle_axis" => {
            let shape = [usize_of(&c["rows"]), usize_of(&c["cols"])];
            let mut x: Vec<i64> = (0..(shape[0] * shape[1]) as i64).collect();
            g.shuffle_axis(&mut x, &shape, usize_of(&c["axis"]))
                .unwrap();
            x.words()
        }
        op => panic!("unknown Generator op {op}"),
    }
}

#[test]
fn numpy_generator() {
    replay_generator("numpy_generator.json", "numpy Generator");
}

/// exponential, gamma, beta, poisson, binomial, shuffle along an axis,
/// choice with `p`: each call followed by one `random()` (draw accounting).
#[test]
fn numpy_generator_distributions() {
    replay_generator("numpy_generator_dist.json", "numpy Generator distributions");
}

fn replay_generator(file: &str, what: &str) {
    let fx = load(file);
    let (mut failures, mut checked) = (Vec::new(), 0);
    for case in fx["cases"].as_array().unwrap() {
        let seed = &case["seed"];
        let ss = seed_sequence(seed);
        let kind = case["bit_generator"].as_str().unwrap();
        let program = case["program"].as_array().unwrap();
        let mut run = |next: &mut dyn FnMut(&Value) -> Vec<u64>| {
            for (i, call) in program.iter().enumerate() {
                let got = next(call);
                check(
                    &format!("{kind} seed {seed} call {i} {}", call["op"]),
                    call,
                    got,
                    &mut failures,
                );
                checked += 1;
            }
        };
        match kind {
            "PCG64" => {
                let mut g = Generator::from_seed_sequence(&ss);
                run(&mut |c| generator_call(&mut g, c, |b| b.next_u64()));
            }
            "MT19937" => {
                let mut g = Generator::from_bit_generator(Mt19937::from_seed_sequence(&ss));
                run(&mut |c| generator_call(&mut g, c, |b| b.next_u32() as u64));
            }
            k => panic!("bit generator {k}"),
        }
    }
    report(what, checked, failures);
}

#[test]
fn numpy_seed_sequence_and_pcg64_state() {
    let fx = load("numpy_seed_sequence.json");
    let (mut failures, mut checked) = (Vec::new(), 0);
    let u32s = |v: &Value| -> Vec<u32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect()
    };
    let hex = |v: &Value| u128::from_str_radix(v.as_str().unwrap(), 16).unwrap();
    for case in fx["cases"].as_array().unwrap() {
        let e = &case["entropy"];
        let ss = if e.is_array() {
            SeedSequence::from_ints(
                &e.as_array()
                    .unwrap()
                    .iter()
                    .map(|v| int(v) as u128)
                    .collect::<Vec<_>>(),
            )
        } else {
            SeedSequence::new(int(e) as u128)
        };
        let mut expect = |what: &str, ok: bool| {
            checked += 1;
            if !ok {
                failures.push(format!("entropy {e}: {what}"));
            }
        };
        expect("pool", ss.pool().to_vec() == u32s(&case["pool"]));
        expect(
            "generate_state(9, u32)",
            ss.generate_state_u32(9) == u32s(&case["state_u32_9"]),
        );
        let u64s: Vec<u64> = case["state_u64_5"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| hex(v) as u64)
            .collect();
        expect("generate_state(5, u64)", ss.generate_state_u64(5) == u64s);
        let pcg = Pcg64::from_seed_sequence(&ss);
        expect(
            "PCG64 state",
            pcg.state() == (hex(&case["pcg64_state"]), hex(&case["pcg64_inc"])),
        );
        let mut mt = Mt19937::from_seed_sequence(&ss);
        let raw: Vec<u32> = (0..630).map(|_| mt.next_u32()).collect();
        let picked: Vec<u32> = [0, 1, 2, 622, 623, 624, 629]
            .iter()
            .map(|&i| raw[i])
            .collect();
        expect(
            "MT19937(seed) raw outputs",
            picked == u32s(&case["mt19937_raw_u32"]),
        );
        let mut parent = ss.clone();
        let kids = parent.spawn(2);
        let want_kids: Vec<Vec<u32>> = case["spawn2_state_u32_4"]
            .as_array()
            .unwrap()
            .iter()
            .map(u32s)
            .collect();
        expect(
            "spawn(2)",
            kids.iter()
                .map(|k| k.generate_state_u32(4))
                .collect::<Vec<_>>()
                == want_kids,
        );
        let grand = kids[1].clone().spawn(1).remove(0);
        expect(
            "spawn(2)[1].spawn(1)[0]",
            grand.generate_state_u32(4) == u32s(&case["spawn_1_0_state_u32_4"]),
        );
        // raw draws, a buffered half, advance, then 32-bit draws
        let mut g = Generator::from_seed_sequence(&ss);
        for _ in 0..3 {
            g.bit_generator_mut().next_u64();
        }
        g.integers(0, 10, 1).unwrap();
        g.bit_generator_mut().advance(12345);
        let after: Vec<u32> = g.integers_as::<u32>(0, 1 << 32, 3, false).unwrap();
        expect(
            "advance then integers(uint32)",
            after == u32s(&case["advance_12345_then_u32"]),
        );
    }
    report("numpy SeedSequence", checked, failures);
}

fn torch_call(g: &mut TorchGenerator, c: &Value) -> Vec<u64> {
    let n = || usize_of(&c["n"]);
    let f = |k: &str| c[k].as_f64().unwrap();
    match c["op"].as_str().unwrap() {
        "rand" => g.rand(n()).words(),
        "rand_f64" => g.rand_f64(n()).words(),
        "randn" => g.randn(n()).words(),
        "randn_f64" => g.randn_f64(n()).words(),
        "randint" => g
            .randint(int(&c["low"]) as i64, int(&c["high"]) as i64, n())
            .unwrap()
            .words(),
        "randperm" => g.randperm(n()).words(),
        "normal" => g.normal(f("mean"), f("std"), n()).unwrap().words(),
        "normal_f64" => g.normal_f64(f("mean"), f("std"), n()).unwrap().words(),
        "uniform" => g.uniform(f("low"), f("high"), n()).unwrap().words(),
        "bernoulli" => g.bernoulli(f("p"), n()).unwrap().words(),
        "bernoulli_scalar" => g.bernoulli_scalar(f("p"), n()).unwrap().words(),
        "dropout" => g.dropout(&vec![1.0; n()], f("p")).unwrap().words(),
        "exponential" => g.exponential(f("lambd"), n()).unwrap().words(),
        "exponential_f64" => g.exponential_f64(f("lambd"), n()).unwrap().words(),
        "multinomial" => {
            let probs = f64s(&c["probs"]);
            let cats = probs.len() / usize_of(&c["rows"]);
            let (k, rep) = (
                usize_of(&c["num_samples"]),
                c["replacement"].as_bool().unwrap(),
            );
            if c["dtype"] == "f64" {
                g.multinomial(&probs, cats, k, rep).unwrap().words()
            } else {
                g.multinomial(&f32s_of(&probs), cats, k, rep)
                    .unwrap()
                    .words()
            }
        }
        op @ ("normal_tensor" | "normal_mean_tensor" | "normal_std_tensor") => {
            let wide = c["dtype"] == "f64";
            let (m, s) = (&c["mean"], &c["std"]);
            macro_rules! run {
                ($conv:expr) => {
                    match op {
                        "normal_tensor" => g.normal_tensor(&$conv(&f64s(m)), &$conv(&f64s(s))),
                        "normal_mean_tensor" => g.normal_mean_tensor(&$conv(&f64s(m)), f("std")),
                        _ => g.normal_std_tensor(f("mean"), &$conv(&f64s(s))),
                    }
                    .unwrap()
                    .words()
                };
            }
            if wide {
                run!(|v: &[f64]| v.to_vec())
            } else {
                run!(f32s_of)
            }
        }
        "linear" => {
            let (i, o) = (usize_of(&c["in_features"]), usize_of(&c["out_features"]));
            let init = g.linear_init_with(i, o, c["bias"].as_bool().unwrap());
            let mut v = init.weight;
            v.extend(init.bias);
            v.words()
        }
        op => panic!("unknown torch op {op}"),
    }
}

#[test]
fn torch_cpu_generator() {
    let fx = load("torch.json");
    let (mut failures, mut checked) = (Vec::new(), 0);
    for run in fx["runs"].as_array().unwrap() {
        let cap = match run["capability"].as_str().unwrap() {
            "AVX2" => TorchCpuCapability::Avx2,
            _ => TorchCpuCapability::Default,
        };
        for case in run["cases"].as_array().unwrap() {
            let seed: u64 = case["seed"].as_str().unwrap().parse().unwrap();
            let mut g = TorchGenerator::manual_seed(seed).with_capability(cap);
            for (i, call) in case["program"].as_array().unwrap().iter().enumerate() {
                let got = torch_call(&mut g, call);
                check(
                    &format!(
                        "{cap:?} seed {seed} call {i} {} n={}",
                        call["op"], call["n"]
                    ),
                    call,
                    got,
                    &mut failures,
                );
                checked += 1;
            }
        }
    }
    report("torch", checked, failures);
}
