"""``mcudeploy quantize MODEL --calib DATA -o OUT.onnx|OUT.tflite``: post-training int8 quantization.

Writes the quantized model as an ONNX QDQ file (or, ``-o X.tflite``, a full-integer TFLite
flatbuffer: :mod:`mcudeploy.exporters.tflite_writer`), prints the quantization report (worst
layers by SQNR, most clipped tensors) and, with ``--report``, writes it as JSON. Models that
are already quantized (int8 / int16 TFLite, ONNX QDQ), hybrid models and float16-weight
models are refused with a message saying what they are.
"""
from __future__ import annotations

import argparse
import logging
import math
from pathlib import Path

from ..errors import UsageError
from ..exporters.onnx_qdq import export_onnx_qdq
from ..exporters.tflite_writer import export_tflite
from ..importers import load_model
from ..pipeline import quantize
from ..preprocess.spec import preprocess_from_file
from ..quantize.apply import WEIGHT_GRANULARITIES
from ..quantize.calibration import ImagePreprocessing
from ..quantize.observers import RANGE_METHODS
from ..quantize.quantizer import QuantizationConfig
from ..quantize.report import to_json
from ..report.console import printable
from ..report.quantize_render import print_report
from ..runs.capture import note_quantization
from ..safe_io import check_output_path, write_text
from .cmd_analyze import add_model_arguments, input_shapes_from
from .registry import command

log = logging.getLogger(__name__)


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--calib", required=True, type=Path, metavar="DATA",
                        help="calibration data: .npy (one input), .npz keyed by input name, or a "
                             "folder of images (100-500 samples recommended)")
    parser.add_argument("-o", "--output", required=True, type=Path, metavar="OUT.onnx|OUT.tflite",
                        help="where to write the quantized model: ONNX QDQ (.onnx) or a full-integer "
                             "TFLite flatbuffer (.tflite, runs in TFLite Micro; float inputs are quantized "
                             "with TFLite's rounding)")
    parser.add_argument("--observer", choices=tuple(RANGE_METHODS), default="minmax",
                        help="how activation ranges are chosen (default: minmax)")
    parser.add_argument("--weights", choices=WEIGHT_GRANULARITIES, default="per-channel",
                        help="weight scales: per-channel (one per output channel, all layers; "
                             "default), per-tensor (one per tensor, all layers), or tflite "
                             "(what TFLite's converter does: per channel for Conv / "
                             "ConvTranspose / depthwise, per tensor for Gemm / MatMul, i.e. "
                             "fully connected)")
    parser.add_argument("--per-tensor", action="store_const", dest="weights", const="per-tensor",
                        help="alias of --weights per-tensor")
    parser.add_argument("--keep-float", nargs="+", default=[], metavar="NODE",
                        help="nodes that stay float (Dequantize before, Quantize after)")
    parser.add_argument("--int16", nargs="+", default=[], metavar="NODE",
                        help="nodes that run in 16x8 mode (int16 activations, int8 weights)")
    parser.add_argument("--activations", choices=("int8", "int16"), default="int8",
                        help="activation type of the whole model: int8, or int16 (16x8 mode)")
    parser.add_argument("--int8-io", action="store_true",
                        help="int8 graph inputs / outputs instead of float ones")
    parser.add_argument("--auto-mixed", action="store_true",
                        help="move the most sensitive layers to --fallback until the targets hold")
    parser.add_argument("--fallback", choices=("int16", "float"), default="int16",
                        help="precision of the layers --auto-mixed picks (default: int16)")
    parser.add_argument("--target-cosine", type=float, default=0.99, metavar="C",
                        help="--auto-mixed target: output cosine vs float (default: 0.99)")
    parser.add_argument("--target-sqnr", type=float, metavar="DB",
                        help="--auto-mixed target: output SQNR vs float in dB")
    parser.add_argument("--report", type=Path, metavar="REPORT.json",
                        help="write the quantization report as JSON")
    images = parser.add_argument_group("image folder preprocessing (--calib FOLDER)")
    images.add_argument("--image-scale", type=float, default=1.0 / 255.0,
                        help="pixel multiplier before mean / std (default: 1/255)")
    images.add_argument("--mean", type=_floats, default=(0.0,), metavar="M[,M,M]")
    images.add_argument("--std", type=_floats, default=(1.0,), metavar="S[,S,S]")
    images.add_argument("--bgr", action="store_true", help="feed channels as BGR (default: RGB)")
    images.add_argument("--layout", choices=("NCHW", "NHWC"),
                        help="layout of the image input (default: the input's, else NCHW)")
    images.add_argument("--preprocess", type=Path, metavar="FILE.toml",
                        help="the [preprocess] of a project / --config file: a folder of images or WAV files "
                             "goes through the pipeline the generated preprocess.c runs (docs/preprocess.md)")


def _check(args: argparse.Namespace) -> None:
    if args.output.suffix.lower() not in (".onnx", ".tflite"):
        raise UsageError(f"-o {args.output}: the quantized model is written as ONNX QDQ (.onnx) or as "
                         "a full-integer TFLite file (.tflite); give one of those file names")
    if not 0.0 < args.target_cosine <= 1.0:
        raise UsageError(f"--target-cosine {args.target_cosine}: give a value in (0, 1]")
    if (args.target_sqnr is not None or args.target_cosine != 0.99) and not args.auto_mixed:
        log.warning("--target-cosine / --target-sqnr only apply with --auto-mixed")
    for option, numbers in (("--image-scale", (args.image_scale,)), ("--mean", args.mean),
                            ("--std", args.std), ("--target-sqnr", (args.target_sqnr or 0.0,))):
        if not all(math.isfinite(number) for number in numbers):
            raise UsageError(f"{option} {','.join(map(str, numbers))}: give finite numbers")
    if any(number == 0 for number in args.std):
        raise UsageError(f"--std {','.join(map(str, args.std))}: a standard deviation of 0 "
                         "divides by zero; give non-zero values")
    inputs = [args.model, args.calib]
    check_output_path(args.output, "-o", inputs=inputs)
    if args.report is not None:
        check_output_path(args.report, "--report", inputs=inputs)
        if args.report.resolve() == args.output.resolve():
            raise UsageError(f"--report {args.report}: is also the -o file; give two names")


def _preprocess(args: argparse.Namespace):
    """``--calib FOLDER --preprocess FILE``: the spec of the board's preprocessing (None without)."""
    if args.preprocess is None:
        return None
    spec = preprocess_from_file(args.preprocess)
    if spec is None:
        raise UsageError(f"--preprocess {args.preprocess}: the file has no [preprocess] section")
    if not args.calib.is_dir():
        raise UsageError(f"--calib {args.calib} with --preprocess: give a folder of images or WAV files")
    return spec


def _writes_tflite(args: argparse.Namespace) -> bool:
    return args.output.suffix.lower() == ".tflite"


@command("quantize", "Post-training int8 quantization with calibration data -> ONNX QDQ model",
         _arguments)
def run(args: argparse.Namespace) -> int:
    _check(args)
    graph = load_model(args.model, input_shapes=input_shapes_from(args))
    config = QuantizationConfig(observer=args.observer, weights=args.weights,
                                keep_float=tuple(args.keep_float), int16=tuple(args.int16),
                                int8_io=args.int8_io, activations=args.activations,
                                auto_mixed=args.auto_mixed,
                                target_cosine=args.target_cosine, target_sqnr=args.target_sqnr,
                                fallback=args.fallback, tflite_rounding=_writes_tflite(args))
    preprocessing = ImagePreprocessing(args.image_scale, args.mean, args.std,
                                       "BGR" if args.bgr else "RGB", args.layout)
    outcome = quantize(graph, args.calib, config, preprocessing=preprocessing, preprocess=_preprocess(args))
    note_quantization(outcome.report)
    if _writes_tflite(args):
        export_tflite(outcome.graph, args.output)
    else:
        export_onnx_qdq(outcome.graph, args.output)
    print_report(outcome.report)
    if outcome.mixed is not None:
        print(printable(f"auto-mixed: {len(outcome.mixed.nodes)} layer(s) in {outcome.mixed.fallback}"
              f"{': ' + ', '.join(outcome.mixed.nodes) if outcome.mixed.nodes else ''}; target "
              f"{'met' if outcome.mixed.met else 'NOT met'}"))
    if args.report is not None:
        write_text(args.report, to_json(outcome.report), "--report")
    print(f"wrote {args.output}")
    return 0
