//! [`FusionPolicy`]: how much the compiler may fuse, in one word.

/// How much the compiler fuses, from everything the target claims down to
/// nothing (`CompileOptions::fusion_policy`; `rlx_fusion::FusionOptions::for_policy`
/// turns it into the pass-by-pass switches). Fusion never changes results
/// beyond the documented tolerance of a fused kernel; the policy chooses
/// between speed and a graph that runs op by op as written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FusionPolicy {
    /// Every fusion the target claims: elementwise regions and matmul
    /// epilogues (loop fusion), and the pattern rewrites — attention blocks,
    /// residual add + norm, gated matmuls, stacked Q / K / V weights,
    /// erf-spelled GELU, transposed matmul operands read in place.
    #[default]
    Full,
    /// Loop fusion only: elementwise chains become one-pass regions and
    /// bias / activation tails fold into matmuls, but no pattern is rewritten
    /// into a different op, so every matmul, norm and attention the graph
    /// spells out runs as its own kernel (profiles map to the source graph).
    LoopsOnly,
    /// No fusion: every node runs as its own kernel (debugging, exact
    /// op-by-op tracing).
    Off,
}

impl FusionPolicy {
    /// Every policy, from the most fusion to none.
    pub const ALL: [FusionPolicy; 3] = [
        FusionPolicy::Full,
        FusionPolicy::LoopsOnly,
        FusionPolicy::Off,
    ];

    /// The policy's name as `RLX_*` knobs and reports write it.
    pub fn name(self) -> &'static str {
        match self {
            FusionPolicy::Full => "full",
            FusionPolicy::LoopsOnly => "loops-only",
            FusionPolicy::Off => "off",
        }
    }
}

impl std::fmt::Display for FusionPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
