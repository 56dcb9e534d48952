"""Automatic mixed precision from per-layer sensitivity.

1. Sensitivity: for each candidate node, quantize *only that node* (every other node kept
   float) and measure the model output against the float model: SQNR and cosine
   (:mod:`.metrics`). Low SQNR = sensitive.
2. Selection: start from the fully quantized model; while the target (``cosine >=
   target_cosine`` and, if given, ``sqnr >= target_sqnr``) does not hold, move the next most
   sensitive layer to the fallback precision (``int16`` = 16x8, or ``float``) and measure
   again. The result is the shortest prefix of the sensitivity order that meets the target
   (or every candidate, with ``met = False``).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

import numpy as np

from ..ir import Graph
from ..progress import progress_bar
from .apply import QuantizeOptions, quantize_graph
from .metrics import Agreement
from .simulate import batches, real_outputs, run_quantized, samples_per_batch

log = logging.getLogger(__name__)

PASSIVE_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity",
                         "Dropout", "Slice", "Split", "Concat", "Pad", "MaxPool"})


@dataclass
class LayerSensitivity:
    node: str
    op: str
    sqnr_db: float
    cosine: float


@dataclass
class MixedPrecisionChoice:
    fallback: str                      # "int16" or "float"
    nodes: list[str]                   # the layers moved to the fallback, most sensitive first
    met: bool
    sqnr_db: float
    cosine: float
    sensitivity: list[LayerSensitivity] = field(default_factory=list)
    history: list[tuple[int, float, float]] = field(default_factory=list)  # (count, sqnr, cosine)


class OutputScorer:
    """Scores a quantized graph's outputs on fixed samples against the float outputs, in
    batches (:func:`~.simulate.samples_per_batch`), accumulating the sums of
    :class:`~.metrics.Agreement`: memory is one batch, whatever the number of samples."""

    def __init__(self, source: Graph, feeds: dict[str, np.ndarray],
                 float_outputs: dict[str, np.ndarray]) -> None:
        self.names = [v.name for v in source.outputs]
        self.feeds = feeds
        self.reference = float_outputs

    def __call__(self, quantized: Graph) -> tuple[float, float]:
        agreement, start = Agreement(), 0
        for batch in batches(self.feeds, samples_per_batch(quantized)):
            outputs = real_outputs(quantized, run_quantized(quantized, batch))
            count = next(iter(batch.values())).shape[0]
            for name in self.names:
                agreement.add(self.reference[name][start:start + count], outputs[name])
            start += count
        return agreement.sqnr_db, agreement.cosine


def candidate_nodes(graph: Graph) -> list[str]:
    """Nodes that compute (not pure data movement): the ones worth a precision choice."""
    return [node.name for node in graph.nodes if node.op not in PASSIVE_OPS]


def layer_sensitivity(graph: Graph, ranges: dict[str, tuple[float, float]], scorer: OutputScorer,
                      options: QuantizeOptions = QuantizeOptions(),
                      candidates: list[str] | None = None, progress: bool = False) -> list[LayerSensitivity]:
    """Per-candidate output SQNR / cosine with only that node quantized, most sensitive first."""
    names = {node.name: node for node in graph.nodes}
    candidates = candidate_nodes(graph) if candidates is None else candidates
    results = []
    with progress_bar(f"sensitivity of {graph.name}", len(candidates), unit="layer", enabled=progress) as advance:
        for name in candidates:
            others = frozenset(names) - {name}
            single = quantize_graph(graph, ranges, replace(options, keep_float=others)).graph
            sqnr, cos = scorer(single)
            results.append(LayerSensitivity(name, names[name].op, sqnr, cos))
            log.debug("sensitivity %s: %.1f dB, cosine %.5f", name, sqnr, cos)
            advance()
    return sorted(results, key=lambda r: (r.sqnr_db, r.cosine))


def _meets(sqnr: float, cos: float, target_cosine: float, target_sqnr: float | None) -> bool:
    return cos >= target_cosine and (target_sqnr is None or sqnr >= target_sqnr)


def choose_mixed_precision(graph: Graph, ranges: dict[str, tuple[float, float]],
                           scorer: OutputScorer, *, target_cosine: float = 0.99,
                           target_sqnr: float | None = None, fallback: str = "int16",
                           options: QuantizeOptions = QuantizeOptions(),
                           candidates: list[str] | None = None, progress: bool = False) -> MixedPrecisionChoice:
    """The fewest most-sensitive layers to run in ``fallback`` so that the target holds."""
    if fallback not in ("int16", "float"):
        raise ValueError(f"fallback must be 'int16' or 'float', got {fallback!r}")
    sqnr, cos = scorer(quantize_graph(graph, ranges, options).graph)
    history = [(0, sqnr, cos)]
    if _meets(sqnr, cos, target_cosine, target_sqnr):
        return MixedPrecisionChoice(fallback, [], True, sqnr, cos, [], history)
    ranking = layer_sensitivity(graph, ranges, scorer, options, candidates, progress=progress)
    chosen: list[str] = []
    for entry in ranking:
        chosen.append(entry.node)
        trial = (replace(options, int16=options.int16 | frozenset(chosen)) if fallback == "int16"
                 else replace(options, keep_float=options.keep_float | frozenset(chosen)))
        sqnr, cos = scorer(quantize_graph(graph, ranges, trial).graph)
        history.append((len(chosen), sqnr, cos))
        log.info("mixed precision: %d layer(s) in %s -> %.1f dB, cosine %.5f",
                 len(chosen), fallback, sqnr, cos)
        if _meets(sqnr, cos, target_cosine, target_sqnr):
            return MixedPrecisionChoice(fallback, chosen, True, sqnr, cos, ranking, history)
    return MixedPrecisionChoice(fallback, chosen, False, sqnr, cos, ranking, history)
