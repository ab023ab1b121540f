//! The op codes the kernels switch on (`unary` / `binary` in
//! `elementwise.cu`, `op` of `reduce.cu`): the discriminants are the codes.

/// A unary op of `rlx_unary_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum UnaryOp {
    /// `-x`.
    Neg = 0,
    /// `|x|`.
    Abs = 1,
    /// `e^x`.
    Exp = 2,
    /// Natural log.
    Log = 3,
    /// Square root.
    Sqrt = 4,
    /// `1 / sqrt(x)`.
    Rsqrt = 5,
    /// Hyperbolic tangent.
    Tanh = 6,
    /// Logistic sigmoid.
    Sigmoid = 7,
    /// `max(x, 0)`.
    Relu = 8,
    /// GELU with erf.
    Gelu = 9,
    /// GELU, tanh approximation.
    GeluTanh = 10,
    /// `x * sigmoid(x)`.
    Silu = 11,
    /// Sine.
    Sin = 12,
    /// Cosine.
    Cos = 13,
    /// `1 / x`.
    Recip = 14,
    /// `x * x`.
    Square = 15,
    /// Floor.
    Floor = 16,
    /// Ceiling.
    Ceil = 17,
    /// Round half to even.
    Round = 18,
    /// Sign (-1, 0, 1; NaN stays NaN).
    Sign = 19,
    /// Error function.
    Erf = 20,
    /// `log(1 + e^x)`, computed stably.
    Softplus = 21,
}

impl UnaryOp {
    /// Every op, in code order.
    pub const ALL: [UnaryOp; 22] = [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Relu,
        UnaryOp::Gelu,
        UnaryOp::GeluTanh,
        UnaryOp::Silu,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Recip,
        UnaryOp::Square,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Sign,
        UnaryOp::Erf,
        UnaryOp::Softplus,
    ];
}

/// A binary op of `rlx_binary_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum BinaryOp {
    /// `a + b`.
    Add = 0,
    /// `a - b`.
    Sub = 1,
    /// `a * b`.
    Mul = 2,
    /// `a / b`.
    Div = 3,
    /// `max(a, b)`.
    Max = 4,
    /// `min(a, b)`.
    Min = 5,
    /// `a ^ b`.
    Pow = 6,
    /// Floored modulo (the result has b's sign, numpy `mod`).
    Mod = 7,
    /// `atan2(a, b)`.
    Atan2 = 8,
}

impl BinaryOp {
    /// Every op, in code order.
    pub const ALL: [BinaryOp; 9] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Max,
        BinaryOp::Min,
        BinaryOp::Pow,
        BinaryOp::Mod,
        BinaryOp::Atan2,
    ];
}

/// A reduction of `rlx_reduce_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum ReduceOp {
    /// Sum.
    Sum = 0,
    /// Mean.
    Mean = 1,
    /// Maximum.
    Max = 2,
    /// Minimum.
    Min = 3,
}
