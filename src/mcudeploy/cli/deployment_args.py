"""The command-line options of every command that builds a deployment (``plan``,
``generate``, ``lint``, ``run --engine c-*``, ``validate --on``, ``estimate``, ...).

:func:`add_deployment_arguments` adds them; :func:`deployment_options` turns the parsed
arguments into one :class:`~mcudeploy.options.DeploymentOptions`: the defaults, then the
``--config FILE`` values, then the options given on the command line (only those given:
every option's argparse default is ``None``, so a config file is never overridden by a
default).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError
from ..options import EXECUTORS, KERNEL_PREFERENCES, SCHEDULES, DeploymentOptions, load_options
from ..units import parse_size

# command-line option -> DeploymentOptions field (and how to read the text)
SIZE_OPTIONS = {"sram_limit": "--sram-limit", "reserve": "--reserve", "stack": "--stack",
                "weights_ram_limit": "--weights-ram-limit"}


def add_deployment_arguments(parser: argparse.ArgumentParser, *, target_required: bool = False) -> None:
    group = parser.add_argument_group("deployment options (also from --config FILE)")
    group.add_argument("--target", required=target_required, metavar="NAME|FILE.toml",
                       help="built-in target name (see 'mcudeploy targets') or a target file")
    group.add_argument("--config", type=Path, metavar="FILE.toml",
                       help="deployment options from a file (as written by 'plan --save-config' / "
                            "'search -o'); options given here override it")
    group.add_argument("--memory-pools", metavar="FILE",
                       help="replace the target's memory regions by an ST .mpool / memory-pool JSON file")
    group.add_argument("--executor", metavar="NAME",
                       help="who runs the nodes: mcudeploy (its CPU code, the default; on an NPU target every "
                            "node runs on the CPU) or vendor-npu (the vendor's NPU compiler runs the NPU nodes: "
                            "NPU estimate, and generate writes the hand-off files)")
    group.add_argument("--cpu", dest="force_cpu", action="append", metavar="NODE",
                       help="force node NODE onto the CPU; repeatable")
    group.add_argument("--sram-limit", metavar="BYTES", help="cap each on-chip region at this size (e.g. 384K)")
    group.add_argument("--reserve", metavar="BYTES", help="on-chip bytes kept for the application (e.g. 200K)")
    group.add_argument("--reserve-region", dest="reserve_regions", action="append", metavar="REGION",
                       help="a region the application keeps entirely; repeatable")
    group.add_argument("--stack", metavar="BYTES", help="stack size (default 4K)")
    group.add_argument("--alignment", type=int, help="tensor alignment in bytes (default 16)")
    group.add_argument("--no-io-in-arena", dest="io_in_arena", action="store_const", const=False,
                       help="graph inputs / outputs are application buffers, not in the arena")
    group.add_argument("--activation-region", metavar="REGION", help="put the arena in this region")
    group.add_argument("--on-chip-only", dest="external_activations", action="store_const", const=False,
                       help="never put activations in external RAM (PSRAM)")
    group.add_argument("--schedule", choices=SCHEDULES, help="execution order (default memory-aware)")
    group.add_argument("--no-reuse", dest="reuse", action="store_const", const=False,
                       help="no in-place / overlap / concat reuse (views still alias)")
    group.add_argument("--weights-to-ram", dest="weights", action="store_const", const="ram",
                       help="copy the most-read weights from flash into free on-chip RAM")
    group.add_argument("--weights-in-flash", dest="weights", action="store_const", const="flash",
                       help="never copy weights to RAM, even from slow external flash")
    group.add_argument("--weights-ram-limit", metavar="BYTES",
                       help="at most this much on-chip RAM for weights copied out of flash, the most-read "
                            "first (e.g. 64K; default: all the room the arena leaves)")
    group.add_argument("--kernels", choices=KERNEL_PREFERENCES,
                       help="kernel variants: auto (the fastest the core runs while the deployment fits, "
                            "else the fewest fall back that make it fit; default), arena (fast only where they cost no "
                            "arena over the reference kernels), fastest (everywhere, fit or not) or reference")


def deployment_options(args: argparse.Namespace) -> DeploymentOptions:
    """Defaults < ``--config`` < command line (module docstring)."""
    config = getattr(args, "config", None)
    options = load_options(config) if config is not None else DeploymentOptions()
    given = {}
    executor = getattr(args, "executor", None)
    if executor is not None and executor not in EXECUTORS:
        raise UsageError(f"--executor {executor!r}: unknown executor; use mcudeploy (mcudeploy's CPU code, the "
                         "default) or vendor-npu (the vendor's NPU compiler)")
    for field in ("target", "memory_pools", "force_cpu", "executor", "reserve_regions", "alignment", "io_in_arena",
                  "activation_region", "external_activations", "schedule", "reuse", "weights", "kernels"):
        value = getattr(args, field, None)
        if value is not None:
            given[field] = value
    for field, option in SIZE_OPTIONS.items():
        text = getattr(args, field, None)
        if text is not None:
            try:
                given[field] = parse_size(text)
            except ValueError as err:
                raise UsageError(f"{option} {text!r}: {err}") from None
    time_limit = getattr(args, "time_limit", None)
    if time_limit is not None:
        given["time_limit"] = time_limit
    return options.with_values(**given) if given else options
