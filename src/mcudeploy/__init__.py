"""mcudeploy: deploy trained neural networks (ONNX, TFLite) onto microcontrollers.

The public API (everything else is internal and may change)::

    import mcudeploy

    graph = mcudeploy.load("model.tflite")                       # ir.Graph as imported
    options = mcudeploy.DeploymentOptions(target="stm32h743", sram_limit=384 * 1024)
    deployment = mcudeploy.deploy("model.tflite", options)      # the whole pipeline
    deployment.fits, deployment.ledger.verdict(), deployment.plan.arena_bytes
    files = mcudeploy.generate(deployment)                       # {path: C source text}
    options = mcudeploy.load_options("pinned.toml")              # a --config file

Names are imported on first use, so ``import mcudeploy`` stays cheap.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> (module, attribute)
_PUBLIC = {
    "load": ("mcudeploy.driver", "load_graph"),
    "deploy": ("mcudeploy.driver", "deploy"),
    "Deployment": ("mcudeploy.deployment", "Deployment"),
    "DeploymentOptions": ("mcudeploy.options", "DeploymentOptions"),
    "load_options": ("mcudeploy.options", "load_options"),
    "load_target": ("mcudeploy.targets", "load_target"),
    "Graph": ("mcudeploy.ir", "Graph"),
    "generate": ("mcudeploy.codegen", "generate_files"),
    "ProjectOptions": ("mcudeploy.codegen", "ProjectOptions"),
    "quantize_model": ("mcudeploy.quantize", "quantize_model"),
    "QuantizationConfig": ("mcudeploy.quantize", "QuantizationConfig"),
    "run_float": ("mcudeploy.reference", "run_float"),
    "run_int": ("mcudeploy.reference", "run_int"),
    "McuDeployError": ("mcudeploy.errors", "McuDeployError"),
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'mcudeploy' has no attribute {name!r}")
    module, attribute = _PUBLIC[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
