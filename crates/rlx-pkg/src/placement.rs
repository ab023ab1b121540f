//! [`Placement`]: which tensors each rank / device of a package needs.

use crate::error::{PkgError, Result};
use serde_json::{json, Value};

/// One rank's share of a package: the device it runs on and the tensors it
/// needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankPlacement {
    /// The rank.
    pub rank: u32,
    /// The device label it runs on (`cpu`, `cuda:0`, ...).
    pub device: String,
    /// The tensors it needs, by name.
    pub tensors: Vec<String>,
}

/// The placement table of a package: per rank, its device and the tensors
/// it needs (`docs/rlxp.md`, `placement`).
///
/// ```
/// use rlx_pkg::Placement;
/// let p = Placement::new()
///     .rank(0, "cpu", ["embed", "layer0"])
///     .rank(1, "cpu", ["layer1", "head"]);
/// assert_eq!(p.tensors(1).unwrap(), ["layer1".to_string(), "head".to_string()]);
/// assert!(p.tensors(2).is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// The ranks, in the order written.
    pub ranks: Vec<RankPlacement>,
}

impl Placement {
    /// An empty placement.
    pub fn new() -> Placement {
        Placement::default()
    }

    /// One rank on `device` that needs every tensor in `names`.
    pub fn single(device: &str, names: impl IntoIterator<Item = String>) -> Placement {
        Placement::new().rank(0, device, names)
    }

    /// This placement with `rank` added.
    pub fn rank<S: Into<String>>(
        mut self,
        rank: u32,
        device: &str,
        tensors: impl IntoIterator<Item = S>,
    ) -> Placement {
        self.ranks.push(RankPlacement {
            rank,
            device: device.to_string(),
            tensors: tensors.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// The ranks listed.
    pub fn rank_ids(&self) -> Vec<u32> {
        self.ranks.iter().map(|r| r.rank).collect()
    }

    /// The entry of `rank`.
    pub fn get(&self, rank: u32) -> Result<&RankPlacement> {
        self.ranks
            .iter()
            .find(|r| r.rank == rank)
            .ok_or_else(|| PkgError::UnknownRank {
                rank,
                known: self.rank_ids(),
            })
    }

    /// The tensor names `rank` needs, in the order written.
    pub fn tensors(&self, rank: u32) -> Result<&[String]> {
        self.get(rank).map(|r| r.tensors.as_slice())
    }

    /// The device label of `rank`.
    pub fn device(&self, rank: u32) -> Result<&str> {
        self.get(rank).map(|r| r.device.as_str())
    }

    /// Checks that no rank is listed twice, no rank names a tensor twice,
    /// and every name is one of `known`.
    pub(crate) fn check(&self, known: &dyn Fn(&str) -> bool) -> Result<()> {
        let mut seen = std::collections::HashSet::new();
        for r in &self.ranks {
            if !seen.insert(r.rank) {
                return Err(PkgError::BadPlacement {
                    reason: format!("rank {} is listed twice", r.rank),
                });
            }
            let mut names = std::collections::HashSet::new();
            for t in &r.tensors {
                if !known(t) {
                    return Err(PkgError::BadPlacement {
                        reason: format!(
                            "rank {} needs tensor \"{t}\", which is not stored",
                            r.rank
                        ),
                    });
                }
                if !names.insert(t.as_str()) {
                    return Err(PkgError::BadPlacement {
                        reason: format!("rank {} lists tensor \"{t}\" twice", r.rank),
                    });
                }
            }
        }
        Ok(())
    }

    pub(crate) fn to_json(&self) -> Value {
        Value::Array(
            self.ranks
                .iter()
                .map(|r| json!({"rank": r.rank, "device": r.device, "tensors": r.tensors}))
                .collect(),
        )
    }

    pub(crate) fn from_json(v: &Value) -> Result<Placement> {
        let bad = |reason: String| PkgError::BadToc { reason };
        let arr = v
            .as_array()
            .ok_or_else(|| bad("\"placement\" is not an array".into()))?;
        let mut ranks = Vec::with_capacity(arr.len());
        for (i, e) in arr.iter().enumerate() {
            let rank = e["rank"]
                .as_u64()
                .and_then(|r| u32::try_from(r).ok())
                .ok_or_else(|| bad(format!("placement[{i}].rank is not a u32")))?;
            let device = e["device"]
                .as_str()
                .ok_or_else(|| bad(format!("placement[{i}].device is not a string")))?
                .to_string();
            let tensors = e["tensors"]
                .as_array()
                .and_then(|a| {
                    a.iter()
                        .map(|x| x.as_str().map(str::to_string))
                        .collect::<Option<Vec<_>>>()
                })
                .ok_or_else(|| bad(format!("placement[{i}].tensors is not an array of strings")))?;
            ranks.push(RankPlacement {
                rank,
                device,
                tensors,
            });
        }
        Ok(Placement { ranks })
    }
}
