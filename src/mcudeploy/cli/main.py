"""Entry point of the ``mcudeploy`` command.

Errors caused by the user (:class:`~mcudeploy.errors.McuDeployError`) print one line
``mcudeploy: error: ...`` and exit with the error class's code; only bugs show a
traceback. ``-v`` logs at INFO, ``-vv`` at DEBUG.
"""
from __future__ import annotations

import argparse
import logging
import sys

from .. import __version__
from ..errors import McuDeployError
from . import commands  # noqa: F401  (registers the subcommands)
from .registry import COMMANDS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcudeploy",
        description="Deploy ONNX / TFLite neural networks onto microcontrollers.")
    parser.add_argument("--version", action="version", version=f"mcudeploy {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more logging: -v for progress, -vv for debugging detail")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in sorted(COMMANDS):
        cmd = COMMANDS[name]
        cmd_parser = sub.add_parser(name, help=cmd.help, description=cmd.help)
        cmd.add_arguments(cmd_parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="mcudeploy: %(levelname)s: %(message)s")
    try:
        return COMMANDS[args.command].run(args)
    except McuDeployError as err:
        print(f"mcudeploy: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("mcudeploy: interrupted", file=sys.stderr)
        return 130
