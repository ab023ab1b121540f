//! The textual HIR:
//!
//! ```text
//! hir "bert" {
//!   %x = input : f32[16,64]
//!   %layer0 = encoder_block{heads=4, ffn=256, eps=1e-12} %x : f32[16,64]
//!   return %layer0
//! }
//! ```

use super::{HirDef, HirModule, HirOp, MlpActivation};
use std::fmt;

impl HirOp {
    /// Attributes as `{k=v, ...}` (empty for none).
    pub fn attributes(&self) -> String {
        let attrs: Vec<String> = match self {
            HirOp::Linear {
                out_features, bias, ..
            } => vec![format!("out={out_features}"), format!("bias={bias}")],
            HirOp::Attention {
                heads,
                causal,
                bias,
                ..
            } => vec![
                format!("heads={heads}"),
                format!("causal={causal}"),
                format!("bias={bias}"),
            ],
            HirOp::LayerNorm { eps, .. } | HirOp::RmsNorm { eps, .. } => {
                vec![format!("eps={eps:e}")]
            }
            HirOp::Mlp {
                hidden,
                activation,
                bias,
                ..
            } => vec![
                format!("hidden={hidden}"),
                format!(
                    "act={}",
                    match activation {
                        MlpActivation::Gelu => "gelu",
                        MlpActivation::SwiGlu => "swiglu",
                    }
                ),
                format!("bias={bias}"),
            ],
            HirOp::Add { .. } => vec![],
            HirOp::EncoderBlock {
                heads, ffn, eps, ..
            }
            | HirOp::DecoderBlock {
                heads, ffn, eps, ..
            } => vec![
                format!("heads={heads}"),
                format!("ffn={ffn}"),
                format!("eps={eps:e}"),
            ],
        };
        if attrs.is_empty() {
            String::new()
        } else {
            format!("{{{}}}", attrs.join(", "))
        }
    }
}

impl fmt::Display for HirModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "hir \"{}\" {{", self.name())?;
        for n in self.nodes() {
            match &n.def {
                HirDef::Input => writeln!(f, "  %{} = input : {}", n.name, n.shape)?,
                HirDef::Op(op) => {
                    let args: Vec<String> = op
                        .inputs()
                        .iter()
                        .map(|v| format!("%{}", self.node(*v).name))
                        .collect();
                    writeln!(
                        f,
                        "  %{} = {}{} {} : {}",
                        n.name,
                        op.mnemonic(),
                        op.attributes(),
                        args.join(", "),
                        n.shape
                    )?
                }
            }
        }
        let outs: Vec<String> = self
            .outputs()
            .iter()
            .map(|v| format!("%{}", self.node(*v).name))
            .collect();
        writeln!(f, "  return {}", outs.join(", "))?;
        f.write_str("}")
    }
}
