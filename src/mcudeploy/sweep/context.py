"""What a cell's stages share: the request, its local files, and what earlier stages computed.

    context = CellContext(request, paths)
    context.float_graph()      # the model as imported (with the cell's input shapes), loaded once
    context.graph()            # what is deployed: the quantized graph when quantize made one
    context.deployment()       # driver.deploy of graph() with the cell's options, built once

Plugin stages receive this object too: ``parameters`` (the cell's axis values), ``options``
(its :class:`~mcudeploy.options.DeploymentOptions`), ``model_path``, ``graph()``,
``deployment()`` and the ``metrics`` of the stages before them.
"""
from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

from ..driver import deploy, load_graph
from ..ir import Graph
from ..options import DeploymentOptions


class CellContext:
    def __init__(self, request: dict[str, Any], paths: dict[str, Path]):
        self.request = request
        self.paths = paths
        self.metrics: dict[str, Any] = {}
        self.cache: dict[str, Any] = {}

    @property
    def parameters(self) -> dict[str, Any]:
        return dict(self.request["parameters"])

    @property
    def model_path(self) -> Path:
        return self.paths["model"]

    @property
    def quantization(self) -> str:
        return self.request["quantization"]

    def settings(self, section: str) -> dict[str, Any]:
        return dict(self.request["settings"].get(section, {}))

    @cached_property
    def options(self) -> DeploymentOptions:
        """The cell's options, target and memory pools pointing at the local files."""
        values = dict(self.request["options"])
        values["target"] = str(self.paths["target"]) if "target" in self.paths else self.request["target"]
        if "memory_pools" in self.paths:
            values["memory_pools"] = str(self.paths["memory_pools"])
        return DeploymentOptions().with_values(**values)

    @property
    def input_shapes(self) -> dict[str, tuple[int, ...]]:
        return {name: tuple(shape) for name, shape in self.request["input_shapes"].items()}

    def float_graph(self) -> Graph:
        """The model as imported (a copy: stages may rewrite what they get)."""
        if "float" not in self.cache:
            self.cache["float"] = load_graph(self.model_path, input_shapes=self.input_shapes or None)
        return self.cache["float"].copy()

    def graph(self) -> Graph:
        """The graph the later stages deploy: quantize's result, else the model as imported."""
        return self.cache["quantized"].copy() if "quantized" in self.cache else self.float_graph()

    def deployment(self):
        if "deployment" not in self.cache:
            self.cache["deployment"] = deploy(self.graph(), self.options)
        return self.cache["deployment"]
