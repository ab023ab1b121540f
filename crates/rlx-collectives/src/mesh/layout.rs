//! The mesh: ranks laid out on data / tensor / pipeline axes.

use crate::error::{CollectiveError, Result};
use crate::group::GroupId;
use crate::registry::GroupRegistry;

/// One axis of a [`DeviceMesh`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MeshAxis {
    /// Replicas that see different samples and all-reduce gradients.
    Data,
    /// Ranks that split each layer's weights (Megatron `f` / `g`).
    Tensor,
    /// Stages that each hold a contiguous run of layers.
    Pipeline,
}

impl MeshAxis {
    /// The three axes, in the order [`DeviceMesh::register`] registers them.
    pub const ALL: [MeshAxis; 3] = [MeshAxis::Data, MeshAxis::Tensor, MeshAxis::Pipeline];
}

/// A rank's position on the mesh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MeshCoord {
    /// Index on the data axis.
    pub data: usize,
    /// Index on the tensor axis.
    pub tensor: usize,
    /// Index on the pipeline axis.
    pub pipeline: usize,
}

/// A `data × tensor × pipeline` layout of a world of ranks.
///
/// The tensor axis varies fastest, then data, then pipeline:
/// `rank = tensor + tp · (data + dp · pipeline)`, so a tensor-parallel group
/// is a run of neighbouring ranks (the ones most likely on one host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceMesh {
    data: usize,
    tensor: usize,
    pipeline: usize,
}

/// The ids of the three sub-groups a rank belongs to, one per axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MeshGroups {
    /// This rank's data-parallel group.
    pub data: GroupId,
    /// This rank's tensor-parallel group.
    pub tensor: GroupId,
    /// This rank's pipeline group.
    pub pipeline: GroupId,
}

impl MeshGroups {
    /// The group id on `axis`.
    pub fn get(&self, axis: MeshAxis) -> GroupId {
        match axis {
            MeshAxis::Data => self.data,
            MeshAxis::Tensor => self.tensor,
            MeshAxis::Pipeline => self.pipeline,
        }
    }
}

impl DeviceMesh {
    /// A mesh of `data × tensor × pipeline` ranks; every size must be >= 1.
    pub fn new(data: usize, tensor: usize, pipeline: usize) -> Result<Self> {
        if data == 0 || tensor == 0 || pipeline == 0 {
            return Err(CollectiveError::InvalidConfig(format!(
                "mesh axes must be >= 1, got data {data} × tensor {tensor} × pipeline {pipeline}"
            )));
        }
        Ok(DeviceMesh {
            data,
            tensor,
            pipeline,
        })
    }

    /// A mesh of `data × tensor × pipeline` that must cover exactly `world` ranks.
    pub fn for_world(world: usize, data: usize, tensor: usize, pipeline: usize) -> Result<Self> {
        let mesh = Self::new(data, tensor, pipeline)?;
        if mesh.world_size() != world {
            return Err(CollectiveError::InvalidConfig(format!(
                "mesh data {data} × tensor {tensor} × pipeline {pipeline} = {} ranks, but the world has {world}",
                mesh.world_size()
            )));
        }
        Ok(mesh)
    }

    /// The size of `axis`.
    pub fn size(&self, axis: MeshAxis) -> usize {
        match axis {
            MeshAxis::Data => self.data,
            MeshAxis::Tensor => self.tensor,
            MeshAxis::Pipeline => self.pipeline,
        }
    }

    /// Number of ranks: the product of the axis sizes.
    pub fn world_size(&self) -> usize {
        self.data * self.tensor * self.pipeline
    }

    /// Where `rank` sits on the mesh.
    pub fn coord(&self, rank: usize) -> Result<MeshCoord> {
        if rank >= self.world_size() {
            return Err(CollectiveError::InvalidRank {
                rank,
                world: self.world_size(),
            });
        }
        Ok(MeshCoord {
            tensor: rank % self.tensor,
            data: (rank / self.tensor) % self.data,
            pipeline: rank / (self.tensor * self.data),
        })
    }

    /// The rank at `coord`.
    pub fn rank(&self, coord: MeshCoord) -> Result<usize> {
        if coord.data >= self.data || coord.tensor >= self.tensor || coord.pipeline >= self.pipeline
        {
            return Err(CollectiveError::InvalidConfig(format!(
                "mesh coordinate {coord:?} is outside data {} × tensor {} × pipeline {}",
                self.data, self.tensor, self.pipeline
            )));
        }
        Ok(coord.tensor + self.tensor * (coord.data + self.data * coord.pipeline))
    }

    /// The lines of `axis`: each is the ranks that differ only in their
    /// `axis` coordinate, in coordinate order. Lines come in rank order of
    /// their first member.
    pub fn axis_groups(&self, axis: MeshAxis) -> Vec<Vec<usize>> {
        let mut lines = Vec::new();
        for rank in 0..self.world_size() {
            let c = self.coord(rank).expect("rank < world");
            let first = match axis {
                MeshAxis::Data => c.data == 0,
                MeshAxis::Tensor => c.tensor == 0,
                MeshAxis::Pipeline => c.pipeline == 0,
            };
            if !first {
                continue;
            }
            let line = (0..self.size(axis))
                .map(|i| {
                    let mut at = c;
                    match axis {
                        MeshAxis::Data => at.data = i,
                        MeshAxis::Tensor => at.tensor = i,
                        MeshAxis::Pipeline => at.pipeline = i,
                    }
                    self.rank(at).expect("coordinate inside the mesh")
                })
                .collect();
            lines.push(line);
        }
        lines
    }

    /// Registers every line of every axis (data, tensor, pipeline, each in
    /// [`axis_groups`](Self::axis_groups) order) as a sub-group of the
    /// registry's world and returns the ids of `rank`'s three groups.
    ///
    /// Every process must call this with the same mesh at the same point so
    /// the ids agree (the registry hands ids out in creation order).
    pub fn register(&self, registry: &GroupRegistry, rank: usize) -> Result<MeshGroups> {
        let world = registry.world().world_size();
        if world != self.world_size() {
            return Err(CollectiveError::InvalidConfig(format!(
                "mesh covers {} ranks, the registry's world has {world}",
                self.world_size()
            )));
        }
        let mut mine = [GroupId(0); 3];
        for (slot, axis) in mine.iter_mut().zip(MeshAxis::ALL) {
            for line in self.axis_groups(axis) {
                let id = registry.new_subgroup(&line)?;
                if line.contains(&rank) {
                    *slot = id;
                }
            }
        }
        Ok(MeshGroups {
            data: mine[0],
            tensor: mine[1],
            pipeline: mine[2],
        })
    }
}
