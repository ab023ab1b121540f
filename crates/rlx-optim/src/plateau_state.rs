//! [`ReduceLrOnPlateau`]'s state as torch's `ReduceLROnPlateau.state_dict()`
//! (JSON with torch's key names), so a run can stop and resume — and resume
//! from a state torch saved.

use crate::error::{OptimError, Result};
use crate::plateau::{PlateauConfig, PlateauMode, ReduceLrOnPlateau, ThresholdMode};
use crate::state::{get, get_arr, get_num, get_obj, get_u64, num};
use serde_json::{json, Value};

fn bad(msg: String) -> OptimError {
    OptimError::BadState(msg)
}

/// The one value of a one-element list (`min_lrs`, `_last_lr`): this
/// scheduler drives a single parameter group.
fn single(top: &serde_json::Map<String, Value>, key: &str) -> Result<f64> {
    let xs = get_arr(get(top, key, "state")?, key)?;
    match xs.as_slice() {
        [x] => get_num(x, key),
        _ => Err(bad(format!(
            "{key}: {} values; one parameter group is supported",
            xs.len()
        ))),
    }
}

impl ReduceLrOnPlateau {
    /// The state as torch's `state_dict()` in JSON: `factor`, `min_lrs`,
    /// `patience`, `cooldown`, `eps`, `last_epoch`, `_last_lr`,
    /// `mode_worse`, `mode`, `threshold`, `threshold_mode`, `best`,
    /// `cooldown_counter`, `num_bad_epochs` (infinities as the strings
    /// `"inf"` / `"-inf"`, since JSON has none).
    pub fn state_json(&self) -> String {
        let cfg = self.config();
        let mode = match cfg.mode {
            PlateauMode::Min => "min",
            PlateauMode::Max => "max",
        };
        let threshold_mode = match cfg.threshold_mode {
            ThresholdMode::Rel => "rel",
            ThresholdMode::Abs => "abs",
        };
        let worse = match cfg.mode {
            PlateauMode::Min => f64::INFINITY,
            PlateauMode::Max => f64::NEG_INFINITY,
        };
        json!({
            "factor": num(cfg.factor), "default_min_lr": num(cfg.min_lr),
            "min_lrs": [num(cfg.min_lr)], "patience": cfg.patience,
            "cooldown": cfg.cooldown, "eps": num(cfg.eps), "last_epoch": self.steps(),
            "_last_lr": [num(self.lr())], "mode_worse": num(worse), "mode": mode,
            "threshold": num(cfg.threshold), "threshold_mode": threshold_mode,
            "best": num(self.best()), "cooldown_counter": self.cooldown_left(),
            "num_bad_epochs": self.num_bad_steps(),
        })
        .to_string()
    }

    /// A scheduler restored from [`state_json`](Self::state_json) or from
    /// torch's `state_dict()` dumped as JSON (numbers, or `"inf"` /
    /// `"Infinity"` / `"NaN"` strings for non-finite values). The rate is
    /// `_last_lr`. Every field is checked (missing, wrong type, a
    /// configuration [`ReduceLrOnPlateau::new`] refuses) and named in the
    /// [`OptimError::BadState`].
    pub fn from_state_json(text: &str) -> Result<Self> {
        let v: Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let top = get_obj(&v, "state")?;
        let text_of = |key: &str| -> Result<&str> {
            get(top, key, "state")?
                .as_str()
                .ok_or_else(|| bad(format!("state.{key}: not a string")))
        };
        let mode = match text_of("mode")? {
            "min" => PlateauMode::Min,
            "max" => PlateauMode::Max,
            m => return Err(bad(format!("state.mode: `{m}` is not min / max"))),
        };
        let threshold_mode = match text_of("threshold_mode")? {
            "rel" => ThresholdMode::Rel,
            "abs" => ThresholdMode::Abs,
            m => return Err(bad(format!("state.threshold_mode: `{m}` is not rel / abs"))),
        };
        let number = |key: &str| get_num(get(top, key, "state")?, &format!("state.{key}"));
        let cfg = PlateauConfig {
            mode,
            factor: number("factor")?,
            patience: get_u64(top, "patience", "state")?,
            threshold: number("threshold")?,
            threshold_mode,
            cooldown: get_u64(top, "cooldown", "state")?,
            min_lr: single(top, "min_lrs")?,
            eps: number("eps")?,
        };
        let mut s = ReduceLrOnPlateau::new(single(top, "_last_lr")?, cfg)
            .map_err(|e| bad(format!("state: {e}")))?;
        s.restore_counters(
            number("best")?,
            get_u64(top, "num_bad_epochs", "state")?,
            get_u64(top, "cooldown_counter", "state")?,
            get_u64(top, "last_epoch", "state")?,
        );
        Ok(s)
    }

    /// Replaces this scheduler's configuration and counters with a saved
    /// state (see [`from_state_json`](Self::from_state_json)); on an error
    /// nothing changes.
    pub fn load_state_json(&mut self, text: &str) -> Result<()> {
        *self = Self::from_state_json(text)?;
        Ok(())
    }
}
