//! Param names of a graph, as `set_param` and weight loaders take them.

use rlx_ir::Graph;

/// The names of `g`'s params in declaration order: what
/// `CompiledGraph::set_param` and `set_params_from` bind, and what a weights
/// file must provide.
///
/// ```
/// use rlx_ir::{DType, Graph, GraphExt, Shape};
/// let mut g = Graph::new("mlp");
/// let x = g.input("x", Shape::new(&[1, 4], DType::F32));
/// let w = g.param("w", Shape::new(&[4, 2], DType::F32));
/// let b = g.param("b", Shape::new(&[2], DType::F32));
/// let y = g.mm(x, w);
/// let y = g.add(y, b);
/// g.set_outputs(vec![y]);
/// assert_eq!(rlx_runtime::graph_param_names(&g), ["w", "b"]);
/// ```
pub fn graph_param_names(g: &Graph) -> Vec<String> {
    g.params()
        .into_iter()
        .map(|(_, name, _)| name.to_string())
        .collect()
}
