"""Model analysis: per-layer shapes, parameters, MACC and memory figures of an IR graph.

Input: a verified :class:`~mcudeploy.ir.Graph`. Output: an :class:`Analysis` record of
plain data (renderers in :mod:`.render` turn it into a table, JSON or CSV).

Definitions (also in ``docs/analyze.md``):

* **parameters** — elements of the constant inputs of nodes (weights, biases, BN
  statistics); a constant shared by several nodes counts once, at its first user.
* **weights bytes** — those constants as stored: an int8 weight is 1 byte, an int32 bias 4.
* **activation bytes** — the sum of every tensor a node produces, excluding graph outputs
  (no buffer reuse assumed).
* **peak live bytes** — in the graph's execution order, the largest total size of the
  non-constant tensors alive while one node runs: its inputs, its outputs, and everything
  produced earlier and still needed later (graph inputs are alive from the start until
  their last use, graph outputs until the end). It is the arena a planner with perfect
  packing and no in-place reuse would need for this order; issue-4's planner goes lower
  with in-place reuse.
* **I/O bytes** — graph inputs plus graph outputs.
* **MACC** — per op, as defined by the op registry (``docs/macc.md``).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..ir import Graph, Value, get_op
from ..plan.liveness import TensorLife, tensor_lives


@dataclass
class TensorInfo:
    name: str
    dtype: str
    shape: list[int]
    bytes: int
    layout: str | None = None
    scale: list[float] | None = None
    zero_point: list[int] | None = None
    quant_axis: int | None = None

    @classmethod
    def of(cls, value: Value) -> "TensorInfo":
        info = cls(value.name, str(value.dtype), list(value.shape), value.nbytes, value.layout)
        if value.quant is not None:
            info.scale = [float(s) for s in value.quant.scale]
            info.zero_point = [int(z) for z in value.quant.zero_point]
            info.quant_axis = value.quant.axis
        return info


@dataclass
class LayerInfo:
    index: int
    name: str
    op: str
    category: str
    input_shapes: list[list[int]]
    output_shapes: list[list[int]]
    output_dtype: str
    params: int
    macc: int
    weight_bytes: int
    output_bytes: int
    live_bytes: int


@dataclass
class Analysis:
    model: str
    sha256: str
    format: str
    graph_name: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    total_macc: int
    params: int
    weights_bytes: int
    activation_bytes: int
    peak_live_bytes: int
    peak_step: int
    peak_tensors: list[str]
    io_bytes: int
    node_count: int
    op_counts: dict[str, int]
    layers: list[LayerInfo] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)


def live_bytes_per_step(graph: Graph) -> list[tuple[int, list[Value]]]:
    """For each node (in order): the bytes alive while it runs and the tensors alive, from
    the planner's liveness (:func:`mcudeploy.plan.liveness.tensor_lives`: the file's order,
    inputs and outputs included, no alignment, no reuse)."""
    values = {v.name: v for v in graph.inputs}
    values.update({v.name: v for node in graph.nodes for v in node.outputs})
    starting: dict[int, list[TensorLife]] = {}
    for life in tensor_lives(graph):
        starting.setdefault(life.first_step, []).append(life)
    alive: dict[str, TensorLife] = {}
    result = []
    for step in range(len(graph.nodes)):
        alive.update((life.name, life) for life in starting.get(step, ()))
        result.append((sum(life.size for life in alive.values()), [values[name] for name in alive]))
        for name in [name for name, life in alive.items() if life.last_step <= step]:
            del alive[name]
    return result


def analyze_graph(graph: Graph) -> Analysis:
    """Compute the :class:`Analysis` of ``graph`` (see module docstring for definitions)."""
    seen_constants: set[int] = set()
    output_ids = {id(v) for v in graph.outputs}
    live = live_bytes_per_step(graph)
    layers: list[LayerInfo] = []
    for index, node in enumerate(graph.nodes):
        opdef = get_op(node.op)
        constants = [v for v in node.inputs if v is not None and v.is_constant
                     and id(v) not in seen_constants]
        seen_constants.update(id(v) for v in constants)
        layers.append(LayerInfo(
            index=index, name=node.name, op=node.op, category=opdef.category,
            input_shapes=[list(v.shape) for v in node.inputs if v is not None and not v.is_constant],
            output_shapes=[list(v.shape) for v in node.outputs],
            output_dtype=str(node.outputs[0].dtype) if node.outputs else "",
            params=sum(v.size for v in constants), macc=int(opdef.macc(node)),
            weight_bytes=sum(v.nbytes for v in constants),
            output_bytes=sum(v.nbytes for v in node.outputs), live_bytes=live[index][0]))
    peak_step = max(range(len(live)), key=lambda i: live[i][0]) if live else 0
    meta = graph.metadata
    return Analysis(
        model=str(meta.get("path", "")), sha256=str(meta.get("sha256", "")),
        format=str(meta.get("format", "")), graph_name=graph.name,
        inputs=[TensorInfo.of(v) for v in graph.inputs],
        outputs=[TensorInfo.of(v) for v in graph.outputs],
        total_macc=sum(layer.macc for layer in layers),
        params=sum(layer.params for layer in layers),
        weights_bytes=sum(layer.weight_bytes for layer in layers),
        activation_bytes=sum(v.nbytes for node in graph.nodes for v in node.outputs
                             if id(v) not in output_ids),
        peak_live_bytes=live[peak_step][0] if live else sum(v.nbytes for v in graph.inputs),
        peak_step=peak_step,
        peak_tensors=[v.name for v in live[peak_step][1]] if live else [],
        io_bytes=sum(v.nbytes for v in graph.inputs) + sum(v.nbytes for v in graph.outputs),
        node_count=len(graph.nodes),
        op_counts=dict(sorted(Counter(n.op for n in graph.nodes).items())),
        layers=layers,
        metadata={k: str(v) for k, v in sorted(meta.items()) if k not in ("path", "sha256")})
