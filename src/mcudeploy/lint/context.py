"""What every lint rule reads: the graph as it will be deployed (``graph``: cleaned up, QDQ
turned into integer ops, Pads folded: what the mapping and the memory plan see), the model
as imported (``source``: for rules about how the model was designed or exported, such as a
BatchNormalization that cannot be folded or a Dropout left in), the target, the NPU/CPU
mapping of the deployed graph (what the NPU could take), the executor, and small graph queries shared by several rules (layout of a
tensor, node order, producers)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Graph, Node, Value
from ..ir.layout import image_layout
from ..mapping import Mapping
from ..targets import Target

FOLDING_PRODUCERS = ("Conv", "ConvTranspose", "Gemm")
REMOVED_BY_CLEANUP = ("Dropout", "Identity")


@dataclass
class LintContext:
    graph: Graph
    target: Target
    mapping: Mapping
    source: Graph | None = None
    order: dict[str, int] = field(default_factory=dict)
    source_names: frozenset[str] = frozenset()   # names of the nodes of ``source``
    executor: str = "vendor-npu"     # who runs the generated code's nodes (mapping/executor.py)

    def __post_init__(self) -> None:
        if self.source is None:
            self.source = self.graph
        self.order = {node.name: index for index, node in enumerate(self.graph.nodes)}
        self.source_names = frozenset(node.name for node in self.source.nodes)

    @property
    def source_graph(self) -> Graph:
        """``source``, which ``__post_init__`` sets (to ``graph`` when none is given)."""
        assert self.source is not None
        return self.source

    def layout_of(self, value: Value) -> str | None:
        """``NCHW`` / ``NHWC`` of a rank-4 tensor (:func:`mcudeploy.ir.layout.image_layout`)."""
        return image_layout(value)

    def spatial_size(self, value: Value) -> tuple[int, int] | None:
        layout = self.layout_of(value)
        if layout is None:
            return None
        if layout == "NCHW":
            return value.shape[2], value.shape[3]
        return value.shape[1], value.shape[2]

    def on_npu(self, node: Node) -> bool:
        return self.target.npu is not None and self.mapping.placement(node.name).device == "npu"

    def fold_blocker(self, node: Node) -> str | None:
        """Why BatchNormalization ``node`` cannot fold into its producer, or ``None``."""
        source = node.inputs[0]
        producer = source.producer
        if producer is None:
            return f"its input {source.name!r} is a graph input, not a convolution output"
        if producer.op not in FOLDING_PRODUCERS:
            return f"its input comes from {producer.op} {producer.name!r}, not from Conv / Gemm"
        readers = len(source.users) + (source in self.graph.outputs)
        if readers > 1:
            return (f"the output of {producer.op} {producer.name!r} is also read by "
                    f"{readers - 1} other consumer(s), which need the un-normalised values")
        return None

    def removed_by_cleanup(self, node: Node) -> bool:
        """Whether the cleanup pipeline removes ``node`` before mapping (a no-op, or a
        BatchNormalization it folds), so NPU placement questions do not apply to it."""
        if node.op in REMOVED_BY_CLEANUP:
            return True
        return node.op == "BatchNormalization" and self.fold_blocker(node) is None
