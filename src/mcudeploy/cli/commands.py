"""Imports every subcommand module so that each registers itself."""
from . import cmd_analyze  # noqa: F401
