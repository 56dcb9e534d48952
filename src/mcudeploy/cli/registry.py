"""The one place CLI subcommands register.

A subcommand is a module in :mod:`mcudeploy.cli` (listed in :mod:`.commands`) that calls
:func:`command` with its name, a one-line help, a function that adds its arguments to an
``argparse`` parser, and a function that runs it (taking the parsed namespace, returning
the exit code). The run function stays thin: parse options, call the library, render the
result. :func:`load_command` imports a command's module on first use.
"""
from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Callable

from .commands import COMMANDS as COMMAND_MODULES


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, help line, argument adder and run function."""
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


COMMANDS: dict[str, Command] = {}


def command(name: str, help: str, add_arguments: Callable[[argparse.ArgumentParser], None]):
    """Decorator registering ``run`` as subcommand ``name``."""
    def decorate(run: Callable[[argparse.Namespace], int]):
        COMMANDS[name] = Command(name, help, add_arguments, run)
        return run
    return decorate


def load_command(name: str) -> Command:
    """The registered command ``name``, importing its module first if needed."""
    if name not in COMMANDS:
        importlib.import_module(f"{__package__}.{COMMAND_MODULES[name][0]}")
    return COMMANDS[name]
