"""``mcudeploy validate FLOAT_MODEL --quantized Q_MODEL [--on host|qemu-m4|qemu-m55]``:
compare a quantized model with its float original on the same inputs (in the spirit of
``stedgeai validate``), and with ``--on`` also the quantized model's generated C code with
the integer reference, bit for bit.

``mcudeploy validate Q_MODEL --on ...`` (no ``--quantized``): a quantized model alone (a
full-integer TFLite file, an ONNX QDQ file): only the generated code is checked, on
``--data`` (float data quantized with the input's parameters, or integer data) or uniform
random integers. The code is the deployment's (:func:`mcudeploy.driver.deploy` with the
deployment options given here): exactly what ``generate`` writes with the same options.

Exit codes: 0 when every check passes, 9 (:class:`~mcudeploy.errors.ValidationFailed`)
when one fails; bad models, options or data exit with their error's code before anything
runs (see :mod:`mcudeploy.errors`).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from ..driver import deploy, load_graph
from ..errors import UsageError, ValidationFailed
from ..ir import precision
from ..preprocess.dataset import folder_arrays
from ..preprocess.spec import preprocess_from_file
from ..report.console import make_console
from ..report.validation_render import print_report
from ..runs.capture import note_validation
from ..safe_io import check_output_path, write_text
from ..validate.compare import check_models, default_range, integer_form, quantized_feeds, validate_models
from ..validate.data import (
    Samples,
    _read_file,
    check_arrays,
    load_labels,
    load_samples,
    parse_range,
    random_samples,
)
from ..validate.flash_tools import flash_line
from ..validate.generated_code import (
    TARGETS,
    build_summary,
    check_generated_code,
    code_target,
    integer_samples,
    options_for_run,
    random_integer_feeds,
)
from ..validate.metrics import class_count
from ..validate.plot import write_scatter
from ..validate.report import to_json
from ..validate.serial_run import is_serial
from ..validate.thresholds import Thresholds
from .cmd_analyze import add_model_arguments, input_shapes_from
from .deployment_args import add_deployment_arguments, deployment_options
from .registry import command

DEFAULT_SAMPLES = 50


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--quantized", type=Path, metavar="Q_MODEL",
                        help="the quantized model: full-integer TFLite, or ONNX QDQ (without it, MODEL "
                             "is a quantized model whose generated code --on checks)")
    parser.add_argument("--data", type=Path, metavar="X.npz|X.npy",
                        help="validation inputs (float, keyed by the float model's input names); "
                             "default: random")
    parser.add_argument("--labels", type=Path, metavar="Y.npy", help="class index per sample")
    parser.add_argument("--samples", type=int, metavar="N",
                        help=f"number of samples (random: default {DEFAULT_SAMPLES}; data: the first N)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument("--range", metavar="LO,HI",
                        help="range of the random inputs, e.g. 0,1 (write --range=-1,1 when LO is negative; default: what the quantized model's "
                             "input can represent, else -1,1)")
    parser.add_argument("--per-layer", action="store_true",
                        help="compare every layer and name the first where the error jumps")
    parser.add_argument("--plot", type=Path, metavar="OUT.png", help="scatter plot of the outputs")
    parser.add_argument("--json", metavar="OUT.json", help="write the report as JSON ('-' = stdout)")
    parser.add_argument("--on", type=code_target, metavar="|".join(TARGETS),
                        help="also generate the C code, run it on the host or a QEMU Cortex-M board, or on a "
                             "board running the serial firmware (serial:/dev/ttyACM0, serial:socket://HOST:PORT; "
                             "docs/serial-protocol.md), and check it bit-exactly against the integer reference "
                             "(full-integer models)")
    parser.add_argument("--preprocess", type=Path, metavar="FILE.toml",
                        help="the [preprocess] of a project / --config file: --data FOLDER of images or WAV "
                             "files goes through the pipeline the generated preprocess.c runs")
    parser.add_argument("--per-layer-instructions", action="store_true",
                        help="with --on qemu-*: also count instructions per layer (serial: cycles per layer, "
                             "firmware built with make serial PROFILE=1)")
    add_deployment_arguments(parser)
    defaults = Thresholds()
    for name, help_text in (("cosine-min", "minimum cosine similarity"),
                            ("top1-min", "minimum top-1 agreement (fraction)"),
                            ("top5-min", "minimum top-5 agreement (fraction)"),
                            ("accuracy-drop-max", "maximum accuracy drop (percentage points)")):
        field = name.replace("-", "_")
        parser.add_argument(f"--{name}", type=float, default=getattr(defaults, field),
                            help=f"{help_text} (default {getattr(defaults, field):g})")


def _samples(args: argparse.Namespace, float_graph, quantized_graph) -> tuple[Samples, np.ndarray | None]:
    """The validation samples and labels, all checked (nothing has run yet)."""
    if args.samples is not None and args.samples < 1:
        raise UsageError(f"--samples {args.samples}: give at least one sample")
    if args.data is None:
        value_range = parse_range(args.range) if args.range else default_range(quantized_graph)
        samples = random_samples(float_graph, args.samples or DEFAULT_SAMPLES, args.seed, value_range)
    elif args.range:
        raise UsageError("--range applies to random inputs; it cannot be combined with --data")
    else:
        samples = _folder_or_file(args, float_graph)
    labels = None
    if args.labels is not None:
        classes = next((class_count(v.shape) for v in float_graph.outputs if class_count(v.shape)), None)
        labels = load_labels(args.labels, samples.count, classes)
    if args.data is not None and args.samples:
        samples = samples.head(args.samples)
        labels = None if labels is None else labels[:args.samples]
    return samples, labels


def _folder_or_file(args: argparse.Namespace, graph) -> Samples:
    """``--data``: a .npz / .npy, or with ``--preprocess`` a folder of images / WAV files run
    through the board's own preprocessing (:mod:`mcudeploy.preprocess.dataset`)."""
    if args.preprocess is None:
        return load_samples(args.data, graph)
    spec = preprocess_from_file(args.preprocess)
    if spec is None:
        raise UsageError(f"--preprocess {args.preprocess}: the file has no [preprocess] section")
    if not args.data.is_dir():
        raise UsageError(f"--data {args.data} with --preprocess: give a folder of images or WAV files")
    return check_arrays(graph, folder_arrays(graph, args.data, spec), str(args.data))


def _thresholds(args: argparse.Namespace) -> Thresholds:
    return Thresholds(cosine_min=args.cosine_min, top1_min=args.top1_min,
                      top5_min=args.top5_min, accuracy_drop_max=args.accuracy_drop_max)


def _check_generated_code(args: argparse.Namespace, built: tuple, feeds: dict) -> None:
    """``--on``: the generated code must match the integer reference bit for bit; ``built`` is
    ``(deployment, whether its target was defaulted)`` (:func:`_deployment_for_code`)."""
    deployment, defaulted = built
    console = make_console()
    console.print(build_summary(deployment, args.on, defaulted))
    if is_serial(args.on):
        console.print(flash_line(), markup=False)
    check = check_generated_code(deployment, feeds, args.on, profile=args.per_layer_instructions)
    console.print(check.describe())
    if check.layer_instructions:
        names = [n for n in deployment.plan.order if n not in deployment.plan.elided_nodes]
        for name, count in zip(names, check.layer_instructions[0]):
            console.print(f"  {name}: {count} {'cycles' if check.cycles else 'instructions'}")
    if not check.bit_exact:
        raise ValidationFailed(check.describe())


def _deployment_for_code(args: argparse.Namespace, quantized_path: Path, graph=None) -> tuple:
    """``(deployment, whether its target was defaulted to the QEMU board's)`` for ``--on``."""
    options, defaulted = options_for_run(deployment_options(args), args.on)
    deployment = deploy(graph if graph is not None else quantized_path, options)
    if deployment.precision != "integer":
        raise UsageError(f"--on {args.on}: {quantized_path} is a {deployment.precision} model; C code is "
                         "generated for full-integer models (quantize it fully with mcudeploy quantize)")
    return deployment, defaulted


def _validate_code_only(args: argparse.Namespace) -> int:
    """``validate Q_MODEL --on ...``: the generated code of a quantized model alone."""
    if args.on is None:
        raise UsageError(f"{args.model}: give the quantized model with --quantized Q_MODEL (to compare it "
                         "with this float model), or --on host|qemu-m4|qemu-m55 to check the generated "
                         "code of this quantized model")
    source = load_graph(args.model, input_shapes=input_shapes_from(args))
    if precision(source) == "float":
        raise UsageError(f"{args.model} is a float model: give --quantized Q_MODEL, the quantized model "
                         "whose code --on checks")
    built = _deployment_for_code(args, args.model, source)
    graph = built[0].graph
    if args.data is not None and args.preprocess is not None:
        samples = _folder_or_file(args, graph)
        feeds = samples.head(args.samples).arrays if args.samples else samples.arrays
    elif args.data is not None:
        samples = integer_samples(graph, _read_file(args.data, graph), str(args.data))
        feeds = samples.head(args.samples).arrays if args.samples else samples.arrays
    else:
        feeds = random_integer_feeds(graph, args.samples or DEFAULT_SAMPLES // 5, args.seed)
    _check_generated_code(args, built, feeds)
    return 0


@command("validate", "Compare a quantized model with its float original: metrics, PASS / FAIL",
         _arguments)
def run(args: argparse.Namespace) -> int:
    inputs = [args.model, args.quantized, args.data, args.labels]
    for option, path in (("--plot", args.plot), ("--json", args.json if args.json != "-" else None)):
        if path is not None:
            check_output_path(path, option, inputs=inputs)
    if args.seed < 0:
        raise UsageError(f"--seed {args.seed}: give a non-negative integer")
    for name in ("cosine_min", "top1_min", "top5_min", "accuracy_drop_max"):
        if not math.isfinite(getattr(args, name)):
            raise UsageError(f"--{name.replace('_', '-')} {getattr(args, name)}: give a finite number")
    if args.quantized is None:
        return _validate_code_only(args)
    float_graph = load_graph(args.model, input_shapes=input_shapes_from(args))
    quantized_graph = integer_form(load_graph(args.quantized))
    check_models(float_graph, quantized_graph)
    samples, labels = _samples(args, float_graph, quantized_graph)
    result = validate_models(float_graph, quantized_graph, samples, labels=labels,
                             thresholds=_thresholds(args), per_layer=args.per_layer)
    note_validation(result)
    if args.json == "-":
        sys.stdout.write(to_json(result))
    else:
        print_report(result)
        if args.json:
            write_text(args.json, to_json(result), "--json")
    if args.plot:
        write_scatter(args.plot, result.float_outputs, result.quantized_outputs,
                      {m.output: m.cosine for m in result.metrics})
    if args.on:
        built = _deployment_for_code(args, args.quantized)
        _check_generated_code(args, built, quantized_feeds(float_graph, built[0].graph, samples))
    if not result.passed:
        raise ValidationFailed("validation FAILED: " + "; ".join(c.describe(result.samples) for c in result.failures))
    return 0
