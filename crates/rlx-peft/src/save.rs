//! Writing an [`AdapterSet`] back in PEFT's `save_pretrained` format, so an
//! adapter trained with RLX loads in PEFT (`PeftModel.from_pretrained`).

use crate::error::{PeftError, Result};
use crate::load::AdapterSet;
use safetensors::tensor::TensorView;
use safetensors::Dtype;
use std::path::Path;

impl AdapterSet {
    /// `adapter_model.safetensors`: every tensor, f32, under its key.
    pub fn to_safetensors(&self) -> Result<Vec<u8>> {
        let views = self
            .tensors
            .iter()
            .map(|(key, t)| {
                let view = TensorView::new(Dtype::F32, t.dims().to_vec(), t.bytes()).map_err(
                    |source| PeftError::SafetensorsCrate {
                        context: format!("tensor {key:?}: "),
                        source,
                    },
                )?;
                Ok((key.clone(), view))
            })
            .collect::<Result<Vec<_>>>()?;
        safetensors::serialize(views, None).map_err(|source| PeftError::SafetensorsCrate {
            context: String::new(),
            source,
        })
    }

    /// Writes `dir/adapter_config.json` (the config text as loaded) and
    /// `dir/adapter_model.safetensors`, creating `dir` if needed.
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<()> {
        let dir = dir.as_ref();
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| PeftError::Io { path, source }
        };
        let weights = self.to_safetensors()?;
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let config = dir.join("adapter_config.json");
        std::fs::write(&config, &self.config_json).map_err(io(&config))?;
        let model = dir.join("adapter_model.safetensors");
        std::fs::write(&model, weights).map_err(io(&model))
    }
}
