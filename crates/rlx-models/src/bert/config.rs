//! `config.json` of a BERT model.

use crate::ModelError;
use serde_json::Value;
use std::path::Path;

/// The hyper-parameters the encoder graph needs (HF `BertConfig` names).
#[derive(Clone, Debug, PartialEq)]
pub struct BertConfig {
    /// Width of the hidden state.
    pub hidden_size: usize,
    /// Encoder layers.
    pub num_hidden_layers: usize,
    /// Attention heads (divides `hidden_size`).
    pub num_attention_heads: usize,
    /// Width of the feed-forward inner layer.
    pub intermediate_size: usize,
    /// Rows of the word embedding table.
    pub vocab_size: usize,
    /// Rows of the position embedding table (longest sequence).
    pub max_position_embeddings: usize,
    /// Rows of the token-type embedding table.
    pub type_vocab_size: usize,
    /// Epsilon of every layer norm.
    pub layer_norm_eps: f64,
}

impl BertConfig {
    /// Reads `config.json`.
    pub fn from_file(path: &Path) -> Result<BertConfig, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| ModelError::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        BertConfig::from_json(&text).map_err(|e| match e {
            ModelError::Config { reason, .. } => ModelError::Config {
                path: path.display().to_string(),
                reason,
            },
            other => other,
        })
    }

    /// Parses the text of a `config.json`; only absolute position
    /// embeddings and the exact (erf) GELU are supported.
    pub fn from_json(text: &str) -> Result<BertConfig, ModelError> {
        let bad = |reason: String| ModelError::Config {
            path: "<config>".into(),
            reason,
        };
        let v: Value = serde_json::from_str(text).map_err(|e| bad(format!("bad JSON: {e}")))?;
        let size = |key: &str| -> Result<usize, ModelError> {
            v[key]
                .as_u64()
                .filter(|&n| n > 0)
                .map(|n| n as usize)
                .ok_or_else(|| bad(format!("\"{key}\" missing or not a positive integer")))
        };
        for (key, want) in [
            ("hidden_act", "gelu"),
            ("position_embedding_type", "absolute"),
        ] {
            let fine = v[key].is_null() || v[key].as_str() == Some(want);
            if !fine {
                return Err(bad(format!(
                    "\"{key}\" is {}, only \"{want}\" is supported",
                    v[key]
                )));
            }
        }
        let cfg = BertConfig {
            hidden_size: size("hidden_size")?,
            num_hidden_layers: size("num_hidden_layers")?,
            num_attention_heads: size("num_attention_heads")?,
            intermediate_size: size("intermediate_size")?,
            vocab_size: size("vocab_size")?,
            max_position_embeddings: size("max_position_embeddings")?,
            type_vocab_size: size("type_vocab_size")?,
            layer_norm_eps: v["layer_norm_eps"].as_f64().unwrap_or(1e-12),
        };
        if !cfg.hidden_size.is_multiple_of(cfg.num_attention_heads) {
            return Err(bad(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                cfg.hidden_size, cfg.num_attention_heads
            )));
        }
        Ok(cfg)
    }

    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let ok = r#"{"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
            "intermediate_size": 16, "vocab_size": 10, "max_position_embeddings": 4,
            "type_vocab_size": 2, "hidden_act": "gelu"}"#;
        let c = BertConfig::from_json(ok).unwrap();
        assert_eq!((c.head_dim(), c.layer_norm_eps), (4, 1e-12));
        let e = BertConfig::from_json(
            &ok.replace("\"num_attention_heads\": 2", "\"num_attention_heads\": 3"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("multiple"), "{e}");
        let e = BertConfig::from_json(&ok.replace("\"gelu\"", "\"relu\"")).unwrap_err();
        assert!(e.to_string().contains("hidden_act"), "{e}");
        let e = BertConfig::from_json(&ok.replace("\"vocab_size\": 10", "\"vocab_size\": 0"))
            .unwrap_err();
        assert!(e.to_string().contains("vocab_size"), "{e}");
    }
}
