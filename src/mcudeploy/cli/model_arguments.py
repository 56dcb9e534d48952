"""The model arguments every command that reads a model shares (``MODEL``, ``--input-shape``),
in a module of their own so that a command needs none of another command's imports to use
them (:mod:`.cmd_analyze` re-exports them)."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..importers import parse_input_shape


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments every command that reads a model shares."""
    parser.add_argument("model", type=Path, help="ONNX (.onnx), TFLite (.tflite) or Keras (.h5, .keras) model file")
    parser.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
                        help="fix the shape of input NAME (needed for dynamic dimensions); repeatable")


def input_shapes_from(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    return dict(parse_input_shape(text) for text in args.input_shape)
