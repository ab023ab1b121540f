//! [`OnnxModel`]: load, inspect, compile and run an ONNX model.

use crate::compile_cache::{self, ModelKey, Specialised};
use crate::import::{checked_graph, import_model, ImportOptions, Imported};
use crate::model::{decode_model, model_info, read_file, tensor_info, ModelInfo, TensorInfo};
use crate::proto::ModelProto;
use crate::{OnnxError, Result};
use prost::bytes::Bytes;
use rlx_driver::Device;
use rlx_ir::{Dim, Graph, HostTensor, OpKind};
use rlx_runtime::{CompileOptions, CompiledGraph, Precision, Session};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// How an [`OnnxModel`] compiles.
///
/// ```
/// use rlx_onnx::{OnnxOptions, Precision};
/// let o = OnnxOptions::default().bind_dim("batch", 4).precision(Precision::F32);
/// assert_eq!(o.dim_bindings["batch"], 4);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct OnnxOptions {
    /// Session precision.
    pub precision: Precision,
    /// Fixed sizes for symbolic input dims (`dim_param` names, or
    /// `<input>:<axis>` for unnamed ones). Unbound dims are taken from the
    /// tensors given to [`OnnxModel::run`], one compile per distinct shape.
    pub dim_bindings: HashMap<String, usize>,
    /// Decompose every composite op even where the device has a native kernel.
    pub decompose_composites: bool,
    /// Share decoded models and compiled graphs through the process-wide
    /// cache ([`crate::compile_cache`]; default on).
    pub compile_cache: bool,
}

impl Default for OnnxOptions {
    fn default() -> Self {
        OnnxOptions {
            precision: Precision::default(),
            dim_bindings: HashMap::new(),
            decompose_composites: false,
            compile_cache: true,
        }
    }
}

impl OnnxOptions {
    /// Sets the precision.
    pub fn precision(mut self, p: Precision) -> Self {
        self.precision = p;
        self
    }

    /// Fixes a symbolic dim.
    pub fn bind_dim(mut self, name: &str, size: usize) -> Self {
        self.dim_bindings.insert(name.to_string(), size);
        self
    }

    /// Forces decomposition of composite ops.
    pub fn decompose_composites(mut self, on: bool) -> Self {
        self.decompose_composites = on;
        self
    }

    /// Uses the compiled-graph cache (on by default).
    pub fn compile_cache(mut self, on: bool) -> Self {
        self.compile_cache = on;
        self
    }

    /// The options as cache-key text (the bindings sorted), with the device.
    fn cache_key(&self, device: Device) -> String {
        let bindings: BTreeMap<&String, &usize> = self.dim_bindings.iter().collect();
        format!(
            "{device:?} {:?} {bindings:?} {}",
            self.precision, self.decompose_composites
        )
    }
}

/// The cache key of one specialisation: input dims, and the values of the
/// inputs the import had to know (shape inputs).
pub(crate) type Key = (Vec<Vec<usize>>, Vec<Vec<u8>>);

/// An ONNX model imported into RLX, compiled per input shape on a [`Device`].
pub struct OnnxModel {
    proto: Arc<ModelProto>,
    /// The model's key in the compiled-graph cache (`None`: not cached).
    cached_as: Option<ModelKey>,
    base_dir: Option<PathBuf>,
    device: Device,
    options: OnnxOptions,
    info: ModelInfo,
    inputs: Vec<TensorInfo>,
    outputs: Vec<TensorInfo>,
    /// Inputs the import needs as values (a `Reshape` shape fed at run time).
    baked: BTreeSet<String>,
    cache: HashMap<Key, Arc<Specialised>>,
    last: Option<Key>,
}

impl std::fmt::Debug for OnnxModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxModel")
            .field("device", &self.device)
            .field("info", &self.info)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish()
    }
}

impl OnnxModel {
    /// Loads an `.onnx` file (external data resolved next to it).
    pub fn load(path: impl AsRef<Path>, device: Device) -> Result<OnnxModel> {
        OnnxModel::load_with(path, device, OnnxOptions::default())
    }

    /// Loads an `.onnx` file with options.
    pub fn load_with(
        path: impl AsRef<Path>,
        device: Device,
        options: OnnxOptions,
    ) -> Result<OnnxModel> {
        let path = path.as_ref();
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if options.compile_cache && compile_cache::holds_dir(&Some(base.clone())) {
            // A cached model is found by hashing the file as it streams,
            // without reading it into memory (a miss reads it then; with
            // nothing cached from this directory, a miss is certain).
            let key = ModelKey::of_file(path, Some(base.clone())).map_err(|e| OnnxError::Io {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
            if let Some(proto) = compile_cache::cached_proto(&key) {
                return OnnxModel::from_proto(proto, Some(key), Some(base), device, options);
            }
        }
        let bytes = read_file(path)?;
        OnnxModel::from_shared_bytes(bytes, Some(base), device, options)
    }

    /// Loads a model from bytes; external data is an error.
    pub fn from_bytes(bytes: &[u8], device: Device) -> Result<OnnxModel> {
        OnnxModel::from_bytes_with(bytes, None, device, OnnxOptions::default())
    }

    /// Loads a model from bytes; `base_dir` resolves external data.
    pub fn from_bytes_with(
        bytes: &[u8],
        base_dir: Option<&Path>,
        device: Device,
        options: OnnxOptions,
    ) -> Result<OnnxModel> {
        let base_dir = base_dir.map(Path::to_path_buf);
        OnnxModel::from_shared_bytes(Bytes::copy_from_slice(bytes), base_dir, device, options)
    }

    /// Loads a model from the file's bytes, which its constants then share.
    fn from_shared_bytes(
        bytes: Bytes,
        base_dir: Option<PathBuf>,
        device: Device,
        options: OnnxOptions,
    ) -> Result<OnnxModel> {
        let (proto, cached_as) = if options.compile_cache {
            let key = ModelKey::of(&bytes, base_dir.clone());
            (
                compile_cache::proto(&key, || decode_model(bytes))?,
                Some(key),
            )
        } else {
            (Arc::new(decode_model(bytes)?), None)
        };
        OnnxModel::from_proto(proto, cached_as, base_dir, device, options)
    }

    fn from_proto(
        proto: Arc<ModelProto>,
        cached_as: Option<ModelKey>,
        base_dir: Option<PathBuf>,
        device: Device,
        options: OnnxOptions,
    ) -> Result<OnnxModel> {
        let g = checked_graph(&proto)?;
        let inits: BTreeSet<&str> = g
            .initializer
            .iter()
            .filter_map(|t| t.name.as_deref())
            .collect();
        let inputs = g
            .input
            .iter()
            .filter(|v| !inits.contains(v.name.as_deref().unwrap_or_default()))
            .map(tensor_info)
            .collect::<Result<Vec<_>>>()?;
        let outputs = g
            .output
            .iter()
            .map(tensor_info)
            .collect::<Result<Vec<_>>>()?;
        let info = model_info(&proto);
        Ok(OnnxModel {
            proto,
            cached_as,
            base_dir,
            device,
            options,
            info,
            inputs,
            outputs,
            baked: BTreeSet::new(),
            cache: HashMap::new(),
            last: None,
        })
    }

    /// Model metadata, opsets, producer.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// The device it compiles for.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Graph inputs (initializers excluded) as declared by the file.
    pub fn inputs(&self) -> &[TensorInfo] {
        &self.inputs
    }

    /// Graph outputs as declared by the file.
    pub fn outputs(&self) -> &[TensorInfo] {
        &self.outputs
    }

    /// Imports the graph with the options' dim bindings (symbolic dims stay
    /// symbolic where the ops allow).
    pub fn import(&self) -> Result<Imported> {
        let opts = ImportOptions {
            dim_bindings: self.options.dim_bindings.clone(),
            input_values: HashMap::new(),
        };
        import_model(&self.proto, self.base_dir.as_deref(), &opts)
    }

    /// The imported graph in the IR's textual form: the last compiled
    /// specialisation, else a fresh import.
    pub fn graph_text(&self) -> Result<String> {
        match self.last.as_ref().and_then(|k| self.cache.get(k)) {
            Some(s) => Ok(rlx_ir::inspect_graph(&s.imported.graph)),
            None => Ok(rlx_ir::inspect_graph(&self.import()?.graph)),
        }
    }

    /// What ran where: ONNX op types and their counts, then per IR op kind
    /// whether the device runs it natively or decomposed.
    pub fn dispatch_report(&self) -> Result<String> {
        let fresh;
        let imported = match self.last.as_ref().and_then(|k| self.cache.get(k)) {
            Some(s) => &s.imported,
            None => {
                fresh = self.import()?;
                &fresh
            }
        };
        Ok(dispatch_report(self.device, imported))
    }

    fn bindings_for(&self, given: &[&HostTensor]) -> Result<HashMap<String, usize>> {
        let mut b = self.options.dim_bindings.clone();
        for (info, t) in self.inputs.iter().zip(given) {
            for (d, &n) in info.dims.iter().zip(t.dims()) {
                if let Dim::Sym(s) = d {
                    match b.get(s) {
                        Some(&m) if m != n => {
                            return Err(OnnxError::Invalid(format!(
                                "input \"{}\": dim \"{s}\" is {n}, but is {m} elsewhere",
                                info.name
                            )))
                        }
                        _ => {
                            b.insert(s.clone(), n);
                        }
                    }
                }
            }
        }
        Ok(b)
    }

    /// Checks the given tensors against the signature; returns them in input order.
    fn order<'a>(&self, inputs: &[(&str, &'a HostTensor)]) -> Result<Vec<&'a HostTensor>> {
        let mut out: Vec<Option<&HostTensor>> = vec![None; self.inputs.len()];
        for &(name, t) in inputs {
            let i = self
                .inputs
                .iter()
                .position(|x| x.name == name)
                .ok_or_else(|| {
                    OnnxError::Invalid(format!(
                        "unknown input \"{name}\" (the model's inputs are {:?})",
                        self.inputs.iter().map(|x| &x.name).collect::<Vec<_>>()
                    ))
                })?;
            if out[i].replace(t).is_some() {
                return Err(OnnxError::Invalid(format!("input \"{name}\" given twice")));
            }
            let info = &self.inputs[i];
            let dims_ok = info.dims.len() == t.dims().len()
                && info
                    .dims
                    .iter()
                    .zip(t.dims())
                    .all(|(d, &n)| d.as_static().is_none_or(|s| s == n));
            if t.dtype() != info.dtype || !dims_ok {
                return Err(OnnxError::Invalid(format!(
                    "input \"{name}\": expected {} {:?}, given {} {:?}",
                    info.dtype,
                    info.dims,
                    t.dtype(),
                    t.dims()
                )));
            }
        }
        out.into_iter()
            .zip(&self.inputs)
            .map(|(t, info)| {
                t.ok_or_else(|| {
                    OnnxError::Invalid(format!(
                        "missing input \"{}\" {} {:?}",
                        info.name, info.dtype, info.dims
                    ))
                })
            })
            .collect()
    }

    fn key(&self, given: &[&HostTensor]) -> Key {
        let dims = given.iter().map(|t| t.dims().to_vec()).collect();
        let vals = self
            .inputs
            .iter()
            .zip(given)
            .filter(|(i, _)| self.baked.contains(&i.name))
            .map(|(_, t)| t.bytes().to_vec())
            .collect();
        (dims, vals)
    }

    /// Imports and compiles for these inputs, learning which inputs must be baked.
    fn specialise(&mut self, given: &[&HostTensor]) -> Result<Key> {
        loop {
            let key = self.key(given);
            if self.cache.contains_key(&key) {
                return Ok(key);
            }
            let shared_key = self
                .cached_as
                .as_ref()
                .map(|m| (m, (self.options.cache_key(self.device), key.clone())));
            if let Some(s) = shared_key
                .as_ref()
                .and_then(|(m, spec)| compile_cache::specialised(m, spec))
            {
                self.cache.insert(key.clone(), s);
                return Ok(key);
            }
            let opts = ImportOptions {
                dim_bindings: self.bindings_for(given)?,
                input_values: self
                    .inputs
                    .iter()
                    .zip(given)
                    .filter(|(i, _)| self.baked.contains(&i.name))
                    .map(|(i, t)| (i.name.clone(), (*t).clone()))
                    .collect(),
            };
            match import_model(&self.proto, self.base_dir.as_deref(), &opts) {
                Ok(imported) => {
                    let copts = CompileOptions::default()
                        .precision(self.options.precision)
                        .decompose_composites(self.options.decompose_composites);
                    let compiled = Session::new(self.device)
                        .try_compile_with(imported.graph.clone(), &copts)?;
                    let s = Arc::new(Specialised {
                        imported,
                        compiled: Mutex::new(compiled),
                    });
                    if let Some((m, spec)) = shared_key {
                        compile_cache::insert(m, spec, s.clone());
                    }
                    self.cache.insert(key.clone(), s);
                    return Ok(key);
                }
                Err(OnnxError::NeedsValue { value, node, what }) => {
                    let before = self.baked.len();
                    if self.inputs.iter().any(|i| i.name == value) {
                        self.baked.insert(value.clone());
                    } else {
                        // Derived from run-time inputs: bake every integer input.
                        for i in &self.inputs {
                            if i.dtype.is_int() {
                                self.baked.insert(i.name.clone());
                            }
                        }
                    }
                    if self.baked.len() == before {
                        return Err(OnnxError::NeedsValue { value, node, what });
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Imports and compiles for inputs like these (their shapes, and the
    /// values of inputs the import needs as values) without running, so the
    /// first [`OnnxModel::run`] on such inputs starts at once — what ONNX
    /// Runtime does when it creates a session, or `jit(f).lower(x).compile()`
    /// in JAX. The inputs are checked as `run` checks them; a second call
    /// for the same shapes does nothing.
    pub fn prepare(&mut self, inputs: &[(&str, &HostTensor)]) -> Result<()> {
        let given = self.order(inputs)?;
        let key = self.specialise(&given)?;
        self.last = Some(key);
        Ok(())
    }

    /// Runs on named typed inputs; outputs in the model's output order.
    /// Compiles on first use of each input shape ([`OnnxModel::prepare`]
    /// does that ahead of time).
    pub fn run(&mut self, inputs: &[(&str, &HostTensor)]) -> Result<Vec<HostTensor>> {
        self.with_feed(inputs, |compiled, feed| compiled.try_run_typed(feed))
    }

    /// Zero-filled tensors of the outputs a run on inputs like these
    /// returns (compiling for their shapes first, as
    /// [`OnnxModel::prepare`]): the `outputs` of [`OnnxModel::run_into`].
    pub fn output_tensors(&mut self, inputs: &[(&str, &HostTensor)]) -> Result<Vec<HostTensor>> {
        self.prepare(inputs)?;
        Ok(self.compiled().expect("prepared").output_tensors())
    }

    /// Runs like [`OnnxModel::run`], writing the outputs into `outputs`
    /// (from [`OnnxModel::output_tensors`]) instead of returning new
    /// tensors, like ONNX Runtime's bound outputs: a loop of runs allocates
    /// and copies nothing for its outputs (the CPU backend computes an
    /// output straight into its tensor; YOLO's 1.3 MB of detection maps
    /// were copied into fresh pages every run). A tensor of the wrong
    /// count, dtype or dims is an error; any error leaves the outputs'
    /// values unspecified.
    pub fn run_into(
        &mut self,
        inputs: &[(&str, &HostTensor)],
        outputs: &mut [HostTensor],
    ) -> Result<()> {
        self.with_feed(inputs, |compiled, feed| {
            compiled.try_run_into(feed, outputs)
        })
    }

    /// Orders and checks `inputs`, compiles for their shapes on first use,
    /// and calls `f` with the compiled graph and the inputs it reads.
    fn with_feed<T>(
        &mut self,
        inputs: &[(&str, &HostTensor)],
        f: impl FnOnce(&mut CompiledGraph, &[(&str, &HostTensor)]) -> rlx_runtime::Result<T>,
    ) -> Result<T> {
        let given = self.order(inputs)?;
        let key = self.specialise(&given)?;
        self.last = Some(key.clone());
        let s = self.cache.get(&key).expect("specialised");
        let mut compiled = s.compiled();
        let wanted = compiled.input_names();
        let feed: Vec<(&str, &HostTensor)> = self
            .inputs
            .iter()
            .zip(&given)
            .filter(|(i, _)| wanted.contains(&i.name))
            .map(|(i, t)| (i.name.as_str(), *t))
            .collect();
        Ok(f(&mut compiled, &feed)?)
    }

    /// [`OnnxModel::run`] with each output paired with its name.
    pub fn run_named(
        &mut self,
        inputs: &[(&str, &HostTensor)],
    ) -> Result<Vec<(String, HostTensor)>> {
        let outs = self.run(inputs)?;
        Ok(self
            .outputs
            .iter()
            .map(|o| o.name.clone())
            .zip(outs)
            .collect())
    }

    /// The compiled graph of the last run (its `lir().fusion` says what
    /// fused), or `None` before the first run. It is locked while held:
    /// models loaded from the same bytes share it (the compile cache).
    pub fn compiled(&self) -> Option<MutexGuard<'_, CompiledGraph>> {
        self.last
            .as_ref()
            .and_then(|k| self.cache.get(k))
            .map(|s| s.compiled())
    }

    /// The imported RLX graph of the last run (or a fresh import).
    pub fn graph(&self) -> Result<Graph> {
        match self.last.as_ref().and_then(|k| self.cache.get(k)) {
            Some(s) => Ok(s.imported.graph.clone()),
            None => Ok(self.import()?.graph),
        }
    }
}

/// The text of a dispatch report of an imported graph on `device`.
pub(crate) fn dispatch_report(device: Device, imported: &Imported) -> String {
    let mut out = String::from("ONNX op types:\n");
    for (op, n) in &imported.op_counts {
        out.push_str(&format!("  {op:<24} {n}\n"));
    }
    out.push_str(&format!(
        "folded to constants at import: {}\n",
        imported.folded
    ));
    let _ = Session::new(device);
    let backend = rlx_driver::registry::backend_for(device);
    let mut kinds: BTreeMap<OpKind, (usize, bool)> = BTreeMap::new();
    for n in imported.graph.nodes() {
        let native = backend.as_ref().is_some_and(|b| b.claims(&n.op));
        let e = kinds.entry(n.op.kind()).or_insert((0, native));
        e.0 += 1;
        e.1 &= native;
    }
    out.push_str(&format!("RLX ops on {device:?}:\n"));
    for (k, (n, native)) in kinds {
        let how = if native {
            "native"
        } else if k.is_composite() {
            "decomposed"
        } else {
            "unsupported"
        };
        out.push_str(&format!("  {:<24} {n:>5}  {how}\n", format!("{k:?}")));
    }
    out
}
