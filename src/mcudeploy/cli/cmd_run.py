"""``mcudeploy run MODEL --inputs X.npz -o Y.npz [--engine float|int]``: run a model on data.

Inputs: a ``.npz`` keyed by input name, or a ``.npy`` for a single-input model, each array
with the input's dtype and shape, or with a leading sample axis (see
:mod:`mcudeploy.validate.data`). Outputs: a ``.npz`` keyed by output name with the raw
output dtype (int8 stays int8); shaped as declared, or ``(N, *declared)`` when the inputs
carried a sample axis. Engines: :mod:`mcudeploy.validate.engines` (default: ``int`` for a
quantized model, ``float`` otherwise).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ..errors import UsageError
from ..importers import load_model
from ..report.console import make_console
from ..validate.data import load_samples
from ..validate.engines import ENGINES, default_engine, get_engine
from .cmd_analyze import add_model_arguments, input_shapes_from
from .registry import command


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--inputs", required=True, type=Path, metavar="X.npz|X.npy",
                        help="input data: .npz keyed by input name, or .npy for a single-input "
                             "model; a leading sample axis runs a batch")
    parser.add_argument("-o", "--output", required=True, type=Path, metavar="Y.npz",
                        help="where to write the outputs (.npz keyed by output name)")
    parser.add_argument("--engine", metavar="NAME",
                        help="execution engine: " + ", ".join(
                            f"{name} ({ENGINES[name].description})" for name in sorted(ENGINES))
                        + "; default: int for a quantized model, float otherwise")


@command("run", "Run a model on given inputs with a reference engine and save its outputs",
         _arguments)
def run(args: argparse.Namespace) -> int:
    if not args.output.parent.exists():
        raise UsageError(f"-o {args.output}: folder {args.output.parent} does not exist")
    graph = load_model(args.model, input_shapes=input_shapes_from(args))
    chosen = get_engine(args.engine or default_engine(graph))
    samples = load_samples(args.inputs, graph)
    results = chosen.run(graph, samples.arrays)
    outputs = {value.name: np.asarray(results[value.name]) for value in graph.outputs}
    if not samples.batched:
        outputs = {name: array[0] for name, array in outputs.items()}
    with open(args.output, "wb") as handle:
        np.savez(handle, **outputs)
    make_console().print(f"{args.output}: {len(outputs)} output(s) from {samples.count} sample(s), engine "
          f"{chosen.name}: " + ", ".join(f"{name} {array.dtype}{list(array.shape)}"
                                        for name, array in outputs.items()))
    return 0
