"""``mcudeploy run MODEL --inputs X.npz -o Y.npz [--engine float|int]``: run a model on data.

Inputs: a ``.npz`` keyed by input name, or a ``.npy`` for a single-input model, each array
with the input's dtype and shape, or with a leading sample axis (see
:mod:`mcudeploy.validate.data`). Outputs: a ``.npz`` keyed by output name with the raw
output dtype (int8 stays int8); shaped as declared, or ``(N, *declared)`` when the inputs
carried a sample axis; beside it ``Y.json`` (the engine, the model, the figures), which never
replaces a JSON file of the user's (:func:`mcudeploy.safe_io.check_sidecar_path`). Engines: :mod:`mcudeploy.validate.engines` (default: ``int`` for a
quantized model, ``float`` otherwise).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from ..data_files import npz_bytes
from ..driver import deploy, load_graph
from ..errors import UsageError
from ..report.console import make_console
from ..safe_io import check_output_path, check_sidecar_path, write_bytes, write_text
from ..validate.data import load_samples
from ..validate.engines import ENGINES, default_engine, get_engine
from ..validate.generated_code import build_summary, options_for_run, run_generated
from .cmd_analyze import add_model_arguments, input_shapes_from
from .deployment_args import add_deployment_arguments, deployment_options
from .registry import command

# the generated C code of the model's deployment (see mcudeploy.validate.generated_code)
GENERATED = {"c-host": "host", "qemu-m4": "qemu-m4", "qemu-m55": "qemu-m55"}
GENERATED_HELP = {"c-host": "generated C code built with the host compiler",
                  "qemu-m4": "generated C code on an emulated Cortex-M4 (QEMU mps2-an386)",
                  "qemu-m55": "generated C code on an emulated Cortex-M55 (QEMU mps3-an547)"}


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--inputs", required=True, type=Path, metavar="X.npz|X.npy",
                        help="input data: .npz keyed by input name, or .npy for a single-input "
                             "model; a leading sample axis runs a batch")
    parser.add_argument("-o", "--output", required=True, type=Path, metavar="Y.npz",
                        help="where to write the outputs (.npz keyed by output name); also writes Y.json "
                             "(engine, figures), which must not be a file of yours")
    parser.add_argument("--engine", metavar="NAME",
                        help="execution engine: " + ", ".join(
                            [f"{name} ({ENGINES[name].description})" for name in sorted(ENGINES)]
                            + [f"{name} ({text})" for name, text in GENERATED_HELP.items()])
                        + "; default: int for a quantized model, float otherwise")
    parser.add_argument("--per-layer", action="store_true",
                        help="with qemu-m4 / qemu-m55: also count instructions per layer")
    add_deployment_arguments(parser)


def _is_run_sidecar(path: Path) -> bool:
    """Whether ``path`` is a ``Y.json`` that ``run`` wrote: a JSON object with its engine."""
    try:
        document = json.loads(path.read_text(encoding="utf-8")) if path.stat().st_size < (1 << 20) else None
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(document, dict) and "engine" in document and "outputs" in document


@command("run", "Run a model on given inputs with a reference engine and save its outputs",
         _arguments)
def run(args: argparse.Namespace) -> int:
    sidecar = args.output.with_suffix(".json")
    check_output_path(args.output, "-o", inputs=[args.model, args.inputs])
    check_sidecar_path(sidecar, "-o (its .json sidecar)", belongs=_is_run_sidecar, inputs=[args.model, args.inputs])
    graph = load_graph(args.model, input_shapes=input_shapes_from(args))
    name = args.engine or default_engine(graph)
    if name not in GENERATED and name not in ENGINES:
        raise UsageError(f"--engine {name!r}: unknown engine; choose one of "
                         f"{', '.join(sorted([*ENGINES, *GENERATED]))}")
    if args.per_layer and name not in ("qemu-m4", "qemu-m55"):
        raise UsageError("--per-layer counts instructions of the generated code under QEMU: "
                         "use it with --engine qemu-m4 or qemu-m55")
    if name in GENERATED:
        results, figures = _run_generated_code(args, graph, name)
    else:
        samples = load_samples(args.inputs, graph)
        results, figures = get_engine(name).run(graph, samples.arrays), {"samples": samples.count}
        figures["batched"] = samples.batched
    outputs = {value.name: np.asarray(results[value.name]) for value in graph.outputs}
    if not figures.pop("batched"):
        outputs = {key: array[0] for key, array in outputs.items()}
    write_bytes(args.output, npz_bytes(outputs), "-o")
    write_text(sidecar, json.dumps({"engine": name, "model": str(args.model), "inputs": str(args.inputs),
                                    "outputs": {k: [str(a.dtype), list(a.shape)] for k, a in outputs.items()},
                                    **figures}, indent=1) + "\n", "-o (its .json sidecar)")
    console = make_console()
    console.print(f"{args.output}: {len(outputs)} output(s) from {figures['samples']} sample(s), engine "
                  f"{name}: " + ", ".join(f"{key} {array.dtype}{list(array.shape)}" for key, array in outputs.items()))
    if figures.get("instructions"):
        console.print(f"instructions per inference: {figures['instructions']}")
    return 0


def _run_generated_code(args: argparse.Namespace, graph, name: str):
    """Outputs and figures (instructions per inference, per layer) of the deployment's C code."""
    source_outputs = [value.name for value in graph.outputs]
    options, defaulted = options_for_run(deployment_options(args), GENERATED[name])
    deployment = deploy(graph, options)
    make_console().print(build_summary(deployment, GENERATED[name], defaulted))
    samples = load_samples(args.inputs, deployment.graph)
    result = run_generated(deployment, samples.arrays, GENERATED[name], profile=args.per_layer)
    figures = {"samples": samples.count, "batched": samples.batched, "instructions": result.instructions}
    if result.layer_instructions:
        layer_names = [n for n in deployment.plan.order if n not in deployment.plan.elided_nodes]
        figures["layer_instructions"] = [dict(zip(layer_names, counts)) for counts in result.layer_instructions]
    deployed_outputs = [value.name for value in deployment.graph.outputs]   # same outputs, by position
    return {source: result.outputs[deployed] for source, deployed in zip(source_outputs, deployed_outputs)}, figures
