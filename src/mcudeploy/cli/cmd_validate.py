"""``mcudeploy validate FLOAT_MODEL --quantized Q_MODEL``: compare a quantized model with its
float original on the same inputs (in the spirit of ``stedgeai validate``).

Exit codes: 0 when every check passes, 9 (:class:`~mcudeploy.errors.ValidationFailed`)
when one fails; bad models, options or data exit with their error's code before anything
runs (see :mod:`mcudeploy.errors`).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from ..errors import UsageError, ValidationFailed
from ..importers import load_model
from ..validate.compare import check_models, default_range, integer_form, validate_models
from ..validate.data import Samples, load_labels, load_samples, parse_range, random_samples
from ..validate.metrics import class_count
from ..validate.plot import write_scatter
from ..validate.report import print_report, to_json
from ..validate.thresholds import Thresholds
from ..report.console import make_console
from .cmd_analyze import add_model_arguments, input_shapes_from
from .registry import command

DEFAULT_SAMPLES = 50


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--quantized", required=True, type=Path, metavar="Q_MODEL",
                        help="the quantized model: full-integer TFLite, or ONNX QDQ")
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
    parser.add_argument("--on", choices=("host", "qemu-m4", "qemu-m55"),
                        help="also generate the C code, run it on the host or a QEMU Cortex-M board and "
                             "check it bit-exactly against the integer reference (full-integer models)")
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
        samples = load_samples(args.data, float_graph)
    labels = None
    if args.labels is not None:
        classes = next((class_count(v.shape) for v in float_graph.outputs if class_count(v.shape)), None)
        labels = load_labels(args.labels, samples.count, classes)
    if args.data is not None and args.samples:
        samples = samples.head(args.samples)
        labels = None if labels is None else labels[:args.samples]
    return samples, labels


def _thresholds(args: argparse.Namespace) -> Thresholds:
    return Thresholds(cosine_min=args.cosine_min, top1_min=args.top1_min,
                      top5_min=args.top5_min, accuracy_drop_max=args.accuracy_drop_max)


def _check_generated_code(on: str, float_graph, quantized_graph, samples: Samples) -> None:
    """``--on``: the generated code must match the integer reference bit for bit."""
    from ..validate.c_runner import check_generated_code
    from ..validate.compare import quantized_feeds
    from ..validate.engines import precision

    if precision(quantized_graph) != "integer":
        raise UsageError(f"--on {on}: C code is generated for full-integer models; this quantized "
                         "model keeps float nodes")
    check = check_generated_code(quantized_graph, quantized_feeds(float_graph, quantized_graph, samples), on)
    make_console().print(check.describe())
    if not check.bit_exact:
        raise ValidationFailed(check.describe())


@command("validate", "Compare a quantized model with its float original: metrics, PASS / FAIL",
         _arguments)
def run(args: argparse.Namespace) -> int:
    for path in (args.plot, Path(args.json) if args.json and args.json != "-" else None):
        if path is not None and not path.parent.exists():
            raise UsageError(f"cannot write {path}: folder {path.parent} does not exist")
    float_graph = load_model(args.model, input_shapes=input_shapes_from(args))
    quantized_graph = integer_form(load_model(args.quantized))
    check_models(float_graph, quantized_graph)
    samples, labels = _samples(args, float_graph, quantized_graph)
    result = validate_models(float_graph, quantized_graph, samples, labels=labels,
                             thresholds=_thresholds(args), per_layer=args.per_layer)
    if args.json == "-":
        sys.stdout.write(to_json(result))
    else:
        print_report(result)
        if args.json:
            Path(args.json).write_text(to_json(result))
    if args.plot:
        write_scatter(args.plot, result.float_outputs, result.quantized_outputs,
                      {m.output: m.cosine for m in result.metrics})
    if args.on:
        _check_generated_code(args.on, float_graph, quantized_graph, samples)
    if not result.passed:
        raise ValidationFailed("validation FAILED: " + "; ".join(
            f"{c.metric} of output {c.output!r} is {c.value:.4g}, needs {c.relation} {c.limit:g}"
            for c in result.failures))
    return 0
