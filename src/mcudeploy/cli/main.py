"""Entry point of the ``mcudeploy`` command.

Errors caused by the user (:class:`~mcudeploy.errors.McuDeployError`) print one line
``mcudeploy: error: ...`` and exit with the error class's code; only bugs show a
traceback. Command-line mistakes argparse finds (unknown option, bad ``int``) take the same
one-line form with exit code 2 instead of a usage block; ``--help`` still prints the usage.
The line, and every log record, is cleaned of terminal control characters
(:func:`mcudeploy.report.console.printable`): messages quote names from model files.
``-v`` logs at INFO, ``-vv`` at DEBUG.

Start-up is kept short: the top-level parser lists the commands of :mod:`.commands`
without importing them, and only the command that runs (or shows its ``--help``) is
imported with its stages (:func:`~.registry.load_command`).

Every command that computes something runs inside :func:`.recording.record_command`, which
records it in the run store (``--runs``, ``--no-record``; see :mod:`mcudeploy.runs`).

The cyclic garbage collector is paused while the parser is built (the command's imports:
numpy and the pipeline's modules, which make thousands of objects and almost no garbage),
then the objects made so far are frozen (:func:`gc.freeze`: later collections skip them) and
collection resumes for the command itself. Start-up then spends no time in full collections
that traverse every module's objects again and again (~10% of a ``plan``). Done once per
process; a collector the caller disabled stays disabled.
"""
from __future__ import annotations

import argparse
import gc
import logging
import sys
from contextlib import contextmanager
from typing import Iterator

from .. import __version__
from ..errors import McuDeployError, UsageError
from ..report.console import PrintableFormatter, printable
from .commands import COMMANDS as COMMAND_MODULES
from .commands import HELP_ORDER, START_HERE
from .recording import add_recording_arguments, record_command
from .registry import load_command


class _ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose errors are :class:`UsageError` s (one line, exit code 2)."""

    def error(self, message: str):
        command = self.prog.partition(" ")[2]
        raise UsageError(f"{command + ': ' if command else ''}{message} (see {self.prog} --help)")


def _chosen_command(argv: list[str]) -> str | None:
    """The first argument that names a command (options before it are the top level's)."""
    return next((arg for arg in argv if arg in COMMAND_MODULES), None)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; only the command named in ``argv`` gets its arguments (all of them when
    ``argv`` is None, for documentation and tests)."""
    parser = _ArgumentParser(
        prog="mcudeploy",
        description="Deploy ONNX / TFLite neural networks onto microcontrollers.",
        epilog=START_HERE, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"mcudeploy {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more logging: -v for progress, -vv for debugging detail")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    chosen = _chosen_command(argv) if argv is not None else None
    # a command missing from HELP_ORDER is still registered (after the others)
    for name in [*HELP_ORDER, *sorted(set(COMMAND_MODULES) - set(HELP_ORDER))]:
        help_text = COMMAND_MODULES[name][1]
        cmd_parser = sub.add_parser(name, help=help_text, description=help_text)
        if argv is None or name == chosen:
            load_command(name).add_arguments(cmd_parser)
            add_recording_arguments(cmd_parser, name)
    return parser


_start_up_done = False


@contextmanager
def _start_up() -> Iterator[None]:
    """The collector paused around the start-up imports, then those objects frozen (module
    docstring); a no-op after the first call in a process."""
    global _start_up_done
    if _start_up_done or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        _start_up_done = True
        gc.freeze()
        gc.enable()


def _error(err: McuDeployError) -> int:
    print(f"mcudeploy: error: {printable(err, one_line=True)}", file=sys.stderr)
    return err.exit_code


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    try:
        with _start_up():
            args = build_parser(arguments).parse_args(arguments)
    except McuDeployError as err:
        return _error(err)
    level = {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    handler = logging.StreamHandler()
    handler.setLevel(level)   # the console's level; a run recorder may pass notes (INFO) on: mcudeploy.notes
    handler.setFormatter(PrintableFormatter("mcudeploy: %(levelname)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    try:
        return record_command(args, arguments, lambda: load_command(args.command).run(args))
    except McuDeployError as err:
        return _error(err)
    except KeyboardInterrupt:
        print("mcudeploy: interrupted", file=sys.stderr)
        return 130
