"""``mcudeploy init MODEL [--target T] [--calib DATA] [--data VAL] [--labels Y]``: write the
project file ``mcudeploy.toml`` that ``mcudeploy deploy`` runs.

The file (:mod:`mcudeploy.workflow.project_template`) has every key with its help and
accepted values; the ones given here are set, the others commented out at their default. The
model is imported first (its inputs and outputs go into the header) and the target resolved,
so a mistake shows now rather than at deploy time. Paths are written relative to the project
file's folder (control characters escaped; a name that is not UTF-8 cannot be written in TOML
and is refused). The text is read back as a project file BEFORE it is written, so a refused
file never replaces the one there. An existing file is never overwritten unless ``--force``.
Exit codes: 0; a model, target or path that is wrong, or an existing file: 2-7 (see
:mod:`mcudeploy.errors`).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..driver import load_graph
from ..errors import UsageError
from ..ir import precision
from ..report.console import make_console
from ..safe_io import check_output_path, write_text
from ..targets import load_target
from ..workflow.project import PROJECT_FILE, parse_project
from ..workflow.project_template import project_text
from .cmd_analyze import input_shapes_from
from .registry import command


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path, help="the model to deploy (ONNX, TFLite or Keras .h5 / .keras)")
    parser.add_argument("--target", metavar="NAME|FILE.toml", help="built-in target name or a target file")
    parser.add_argument("--calib", type=Path, metavar="DATA", help="calibration data (.npy / .npz / image folder)")
    parser.add_argument("--data", type=Path, metavar="VAL", help="validation inputs (.npy / .npz)")
    parser.add_argument("--labels", type=Path, metavar="Y.npy", help="class index per validation sample")
    parser.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
                        help="fix the shape of input NAME (needed for dynamic dimensions); repeatable")
    parser.add_argument("-o", "--output", type=Path, default=Path(PROJECT_FILE), metavar="FILE",
                        help=f"project file to write (default {PROJECT_FILE})")
    parser.add_argument("--force", action="store_true", help="overwrite an existing project file")


def _relative(path: Path, folder: Path, option: str) -> str:
    """``path`` relative to ``folder``, as the file writes it; :class:`UsageError` for a name
    that is not UTF-8 (TOML text cannot hold it)."""
    text = os.path.relpath(path.resolve(), folder.resolve())
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{option} {text.encode('utf-8', 'backslashreplace').decode()}: the file name is not "
                         "valid UTF-8, which a TOML project file cannot hold; rename the file") from None
    return text


def _values(args: argparse.Namespace, folder: Path) -> dict[tuple[str, str], object]:
    values: dict[tuple[str, str], object] = {}
    for option, (section, key) in (("calib", ("calibration", "data")), ("data", ("validation", "data")),
                                   ("labels", ("validation", "labels"))):
        path = getattr(args, option)
        if path is not None:
            if not path.exists():
                raise UsageError(f"--{option} {path}: no such file or folder")
            values[(section, key)] = _relative(path, folder, f"--{option}")
    if args.target is not None:
        target = load_target(args.target)   # a wrong name fails here, with the known names
        is_file = args.target.endswith(".toml")
        values[("deployment.target", "name")] = _relative(Path(args.target), folder, "--target") if is_file \
            else target.name
    shapes = input_shapes_from(args)
    if shapes:
        values[("project", "input_shapes")] = {name: list(shape) for name, shape in shapes.items()}
    return values


@command("init", "Write a commented project file (mcudeploy.toml) for the staged deployment", _arguments)
def run(args: argparse.Namespace) -> int:
    destination = check_output_path(args.output, "-o", inputs=[args.model, args.calib, args.data, args.labels])
    if destination.exists() and not args.force:
        raise UsageError(f"{destination} exists; it is not overwritten (give --force to replace it, or -o FILE "
                         "for another name)")
    folder = destination.resolve().parent
    graph = load_graph(args.model, input_shapes=input_shapes_from(args))
    values = _values(args, folder)
    summary = [f"model {args.model.name}: " + ", ".join(f"input {v.name} {v.type_str()}" for v in graph.inputs)
               + "; " + ", ".join(f"output {v.name} {v.type_str()}" for v in graph.outputs)]
    shapes = {("project", "input_shapes"): {value.name: list(value.shape) for value in graph.inputs}}
    text = project_text(_relative(args.model, folder, "model"), values, summary, origin=f" for {args.model.name}",
                        examples=shapes)
    parse_project(text, destination)   # reads back before anything is replaced (a bug otherwise)
    write_text(destination, text, "-o")
    console = make_console()
    console.print(f"wrote {destination}: model {args.model.name}"
                  + (f", target {values[('deployment.target', 'name')]}" if args.target else ", no target")
                  + ("" if args.calib or precision(graph) != "float" else
                     "; set [calibration] data before 'mcudeploy deploy' (the float model needs it to quantize)"))
    console.print(f"next: mcudeploy deploy {destination}")
    return 0
