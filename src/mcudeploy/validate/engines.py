"""Execution engines: run an IR graph on a batch of samples, by engine name.

An engine is ``run(graph, feeds) -> outputs`` on batched arrays: every feed is
``(N, *declared_input_shape)`` with the input's own dtype, every result
``(N, *declared_output_shape)`` with the output's own dtype (an int8 output stays int8).
``capture=True`` returns every tensor by value name instead (for the per-layer comparison).
Engines register in :data:`ENGINES` with :func:`engine`.

What each built-in engine accepts, by the graph's :func:`precision`:

* ``float`` -- the float reference (:func:`~mcudeploy.reference.run_float`), one sample at a
  time. Runs float graphs and QDQ graphs; in a QDQ graph QuantizeLinear / DequantizeLinear
  keep their ONNX meaning (round to the grid, then back to float), so the result is the
  float simulation of quantization with dequantized weights. A full-integer graph
  (TFLite int8) is refused: its kernels take integer tensors that have no float-executor
  meaning; run it with ``--engine int``.
* ``int`` -- the bit-exact integer reference (:func:`~mcudeploy.reference.int_executor.run_int`,
  batched) for full-integer graphs; mixed-precision graphs (some nodes kept float) run
  through :func:`~mcudeploy.quantize.simulate.run_quantized`; QDQ graphs (ONNX) are first
  converted by :mod:`mcudeploy.passes.qdq_to_quantized`. A float graph
  is refused: quantize it first with ``mcudeploy quantize``.
The generated C code (``run --engine c-host|qemu-m4|qemu-m55``, ``validate --on``) is not a
graph engine: it runs a whole :class:`~mcudeploy.deployment.Deployment`
(:mod:`.generated_code`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import UsageError
from ..ir import Graph, precision
from ..passes.qdq_to_quantized import to_integer_graph
from ..quantize.simulate import run_float_batch, run_quantized
from ..reference.int_executor import run_int

Runner = Callable[..., dict[str, np.ndarray]]


@dataclass(frozen=True)
class Engine:
    name: str
    description: str
    run: Runner   # run(graph, feeds, *, capture=False) -> outputs


ENGINES: dict[str, Engine] = {}


def engine(name: str, description: str) -> Callable[[Runner], Runner]:
    """Register the decorated ``run(graph, feeds, *, capture=False)`` as engine ``name``."""
    def decorate(run: Runner) -> Runner:
        ENGINES[name] = Engine(name, description, run)
        return run
    return decorate


def get_engine(name: str) -> Engine:
    try:
        return ENGINES[name]
    except KeyError:
        raise UsageError(f"--engine {name!r}: unknown engine; choose one of "
                         f"{', '.join(sorted(ENGINES))}") from None


def default_engine(graph: Graph) -> str:
    """``int`` for a quantized graph (integer, mixed or QDQ), ``float`` otherwise."""
    return "float" if precision(graph) == "float" else "int"


def _model_name(graph: Graph) -> str:
    return graph.metadata.get("path", graph.name)


@engine("float", "float32 reference executor (QDQ graphs: quantize-dequantize simulation)")
def run_float_engine(graph: Graph, feeds: dict[str, np.ndarray], *,
                     capture: bool = False) -> dict[str, np.ndarray]:
    kind = precision(graph)
    if kind in ("integer", "mixed"):
        described = "full-integer" if kind == "integer" else "mixed-precision"
        raise UsageError(f"{_model_name(graph)} is a {described} quantized model: its kernels compute on "
                         "integers, which the float engine does not run; use --engine int, or "
                         "run the float model")
    return run_float_batch(graph, feeds, capture=capture)


@engine("int", "bit-exact integer reference executor (TFLite Micro reference kernels)")
def run_int_engine(graph: Graph, feeds: dict[str, np.ndarray], *,
                   capture: bool = False) -> dict[str, np.ndarray]:
    kind = precision(graph)
    if kind == "float":
        raise UsageError(f"{_model_name(graph)} is a float model; the int engine runs quantized "
                         "models: quantize it first with mcudeploy quantize, or use --engine float")
    if kind == "qdq":
        graph = to_integer_graph(graph)
        kind = precision(graph)
    if kind == "mixed":
        return run_quantized(graph, feeds, capture=capture)
    return run_int(graph, feeds, batch=True, capture=capture)
