//! Loading a runnable model (a graph and where its params come from) from
//! the file formats `rlx run` / `rlx bench` take.

use crate::llama::{self, LlamaRunner};
use anyhow::{bail, Context, Result};
use rlx::gguf::GgufReader;
use rlx::onnx::OnnxModel;
use rlx::pkg::Package;
use rlx::runtime::BytesWeightLoader;
use rlx::{
    CompileOptions, CompiledGraph, DType, Device, DeviceCandidate, Dim, Graph, HostTensor, Session,
    Shape,
};
use std::path::Path;

/// The file kinds the CLI reads, by extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// An ONNX model.
    Onnx,
    /// A `.rlxp` package.
    Rlxp,
    /// A GGUF file.
    Gguf,
    /// A safetensors file.
    Safetensors,
    /// RLX's textual IR (`.rlx`).
    TextIr,
}

impl FileKind {
    /// The kind of `path` by its extension.
    pub fn of(path: &Path) -> Result<FileKind> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        Ok(match ext.to_ascii_lowercase().as_str() {
            "onnx" => FileKind::Onnx,
            "rlxp" => FileKind::Rlxp,
            "gguf" => FileKind::Gguf,
            "safetensors" => FileKind::Safetensors,
            "rlx" | "mir" => FileKind::TextIr,
            _ => bail!(
                "{}: unknown file type (expected .onnx, .rlxp, .gguf, .safetensors or .rlx text IR)",
                path.display()
            ),
        })
    }
}

/// Fails with a message naming `path` when it is not a readable file.
pub fn require_file(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => bail!("{}: not a file", path.display()),
        Err(e) => bail!("{}: {e}", path.display()),
    }
}

/// Package metadata key: the outputs' names, a JSON array of strings.
pub const OUTPUT_NAMES: &str = "output_names";

/// Where a model's params come from.
enum Params {
    /// A llama-family model: its GGUF (read from the file or rebuilt from a package).
    Llama(Box<GgufReader<Vec<u8>>>),
    /// None: the graph holds its weights as constants (ONNX) or has no params.
    None,
    /// An open package, bound by name.
    Package(Box<Package>),
    /// A safetensors file, bound by name.
    Safetensors(BytesWeightLoader),
}

/// A graph ready to compile, with its params' source and output names.
pub struct Model {
    /// The graph.
    pub graph: Graph,
    /// Options stored with the model (a package's), else the defaults.
    pub options: CompileOptions,
    /// One name per output (the ONNX names, else `output_<i>`).
    pub output_names: Vec<String>,
    params: Params,
}

impl Model {
    /// Loads `path`; `weights` is a safetensors file for a text-IR graph's params.
    pub fn load(path: &Path, weights: Option<&Path>) -> Result<Model> {
        require_file(path)?;
        let kind = FileKind::of(path)?;
        if weights.is_some() && kind != FileKind::TextIr {
            bail!("--weights is only for a .rlx text-IR graph");
        }
        let (graph, options, names, params) = match kind {
            FileKind::Onnx => {
                let m = OnnxModel::load(path, Device::Cpu)
                    .with_context(|| format!("{}", path.display()))?;
                let imported = m.import().with_context(|| format!("{}", path.display()))?;
                let names = imported.outputs.iter().map(|o| o.name.clone()).collect();
                (imported.graph, CompileOptions::default(), names, Params::None)
            }
            FileKind::Rlxp => {
                let pkg = Package::open(path).with_context(|| format!("{}", path.display()))?;
                if pkg.blob_entries().iter().any(|b| b.name == llama::METADATA_BLOB) {
                    let r = llama::gguf_of_package(&pkg)
                        .with_context(|| format!("{}", path.display()))?;
                    return Ok(Model::llama(r));
                }
                let graph = pkg
                    .graph()
                    .with_context(|| format!("{}", path.display()))?
                    .clone();
                let opts = pkg.options().clone();
                // Written by `rlx pack`; a package without it numbers its outputs.
                let names = pkg
                    .metadata()
                    .get(OUTPUT_NAMES)
                    .and_then(|s| serde_json::from_str::<Vec<String>>(s).ok())
                    .unwrap_or_default();
                (graph, opts, names, Params::Package(Box::new(pkg)))
            }
            FileKind::TextIr => {
                let graph = read_text_ir(path)?;
                let params = match weights {
                    Some(w) => {
                        require_file(w)?;
                        Params::Safetensors(
                            BytesWeightLoader::open(w)
                                .with_context(|| format!("{}", w.display()))?,
                        )
                    }
                    None => Params::None,
                };
                (graph, CompileOptions::default(), Vec::new(), params)
            }
            FileKind::Gguf => {
                let bytes = std::fs::read(path).with_context(|| format!("{}", path.display()))?;
                let r = GgufReader::new(bytes).with_context(|| format!("{}", path.display()))?;
                if !llama::is_llama(&r) {
                    bail!(
                        "{}: this GGUF file is not a llama-family model (no graph to run)",
                        path.display()
                    );
                }
                return Ok(Model::llama(r));
            }
            FileKind::Safetensors => bail!(
                "{}: a safetensors file holds weights, not a graph: pass a .rlx graph with --weights, or `rlx pack` them",
                path.display()
            ),
        };
        let output_names = if names.len() == graph.outputs().len() {
            names
        } else {
            (0..graph.outputs().len())
                .map(|i| format!("output_{i}"))
                .collect()
        };
        Ok(Model {
            graph,
            options,
            output_names,
            params,
        })
    }

    /// A llama model: `input_ids` `I64 [tokens]` in, `logits` out.
    fn llama(r: GgufReader<Vec<u8>>) -> Model {
        let mut graph = Graph::new("llama");
        let ids = graph.input(
            llama::INPUT,
            Shape::from_dims(vec![Dim::Sym("tokens".into())], DType::I64),
        );
        graph.set_outputs(vec![ids]);
        Model {
            graph,
            options: CompileOptions::default(),
            output_names: vec!["logits".into()],
            params: Params::Llama(Box::new(r)),
        }
    }

    /// Compiles (graph models, with the input dims bound from `inputs`) or
    /// loads (llama models) for `candidate` (its device and thread count):
    /// what runs the inputs.
    pub fn prepare(
        &self,
        candidate: DeviceCandidate,
        inputs: &[(String, HostTensor)],
    ) -> Result<Runner> {
        let device = candidate.device;
        if let Params::Llama(r) = &self.params {
            if device != Device::Cpu {
                bail!("llama models run on the CPU only, not on {device}");
            }
            let n = inputs.iter().map(|(_, t)| t.numel()).max().unwrap_or(1);
            return Ok(Runner::Llama(Box::new(LlamaRunner::new(r, n)?)));
        }
        let opts = candidate.options(&self.options_for(inputs)?);
        Ok(Runner::Graph(Box::new(self.compile(device, &opts)?)))
    }

    /// The model's options with every symbolic input dim bound from `inputs`'
    /// dims (an input the graph does not have is an error naming it).
    pub fn options_for(&self, inputs: &[(String, HostTensor)]) -> Result<CompileOptions> {
        let mut opts = self.options.clone();
        for (name, t) in inputs {
            let id = self.graph.find_input(name).with_context(|| {
                format!(
                    "the model has no input \"{name}\" (its inputs: {})",
                    input_list(&self.graph)
                )
            })?;
            let dims = self.graph.shape(id).dims();
            if dims.len() != t.dims().len() {
                bail!(
                    "input \"{name}\" has rank {} in the model, the array has dims {:?}",
                    dims.len(),
                    t.dims()
                );
            }
            for (d, &n) in dims.iter().zip(t.dims()) {
                if let Dim::Sym(s) = d {
                    opts = opts.bind_dim(s, n);
                }
            }
        }
        Ok(opts)
    }

    /// Compiles on `device` with `opts` and binds the params.
    pub fn compile(&self, device: Device, opts: &CompileOptions) -> Result<CompiledGraph> {
        let session = Session::new(device);
        let compiled = match &self.params {
            Params::Package(pkg) => rlx::pkg::compile_rlxp_bind_params(&session, pkg, opts)?,
            Params::Safetensors(st) => {
                let mut c = session.try_compile_with(self.graph.clone(), opts)?;
                for name in c.param_names() {
                    c.set_param_from(&name, st, &name)
                        .with_context(|| format!("param \"{name}\""))?;
                }
                c
            }
            Params::None => session.try_compile_with(self.graph.clone(), opts)?,
            Params::Llama(_) => bail!("a llama model is not compiled as one graph"),
        };
        if let Params::None = self.params {
            if let Some(name) = compiled.param_names().first() {
                bail!("param \"{name}\" has no values: pass --weights FILE.safetensors");
            }
        }
        Ok(compiled)
    }
}

/// Parses the text-IR graph at `path`.
pub fn read_text_ir(path: &Path) -> Result<Graph> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    rlx::parse_graph(&text).with_context(|| format!("{}", path.display()))
}

/// `name [dims] dtype, ...` of a graph's inputs.
pub fn input_list(g: &Graph) -> String {
    g.inputs()
        .iter()
        .map(|(_, n, s)| format!("{n} {s}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A prepared model.
pub enum Runner {
    /// A compiled graph.
    Graph(Box<CompiledGraph>),
    /// A loaded llama model.
    Llama(Box<LlamaRunner>),
}

impl Runner {
    /// Runs `inputs` (by name) and returns the outputs in order.
    pub fn run(&mut self, inputs: &[(String, HostTensor)]) -> Result<Vec<HostTensor>> {
        match self {
            Runner::Graph(c) => {
                let feed: Vec<(&str, &HostTensor)> =
                    inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
                Ok(c.try_run_typed(&feed)?)
            }
            Runner::Llama(m) => {
                let ids = inputs
                    .iter()
                    .find(|(n, _)| n == llama::INPUT)
                    .map(|(_, t)| t)
                    .with_context(|| format!("missing --input {}", llama::INPUT))?;
                Ok(vec![m.run(ids)?])
            }
        }
    }
}
