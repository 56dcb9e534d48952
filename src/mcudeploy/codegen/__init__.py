"""C code generation: a :class:`~mcudeploy.deployment.Deployment` -> a C project (see
:mod:`.emit_project`).

Decides nothing: the order, offsets and regions come from the deployment's memory plan, the
kernel of every node from its kernel selection, every number from the integer kernels'
``prepare`` (the deployment's ``params``); this package only writes text (Jinja2 templates
in ``templates/``). A deployment that does not fit is refused (exit 8, naming the region and
the bytes): the generated code never holds an arena larger than its region, and
``network.c`` asserts it at compile time too.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .emit_project import ProjectOptions, TestVectors, generate_files
from .output_dir import MANIFEST, write_project

if TYPE_CHECKING:
    from ..deployment import Deployment

__all__ = ["MANIFEST", "ProjectOptions", "TestVectors", "generate_files", "generate_project",
           "write_project"]


def generate_project(deployment: Deployment, folder: Path, options: ProjectOptions, *, force: bool = False) -> list[Path]:
    """Generate the project of ``deployment`` and write it into ``folder``."""
    return write_project(generate_files(deployment, options), folder, force=force)
