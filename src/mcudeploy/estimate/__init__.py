"""The estimate stage: latency, memory traffic and bandwidth of a deployment, per layer and in
total, from cost models whose constants are data (``data/*.toml``, the generated
``data/instruction_model.json``) and from the target's figures.

    estimate(deployment, runtime="mcudeploy", core_clock_hz=None, npu_clock_hz=None,
             overlay=None) -> Estimate

Public names: :func:`estimate`, the records :class:`Estimate` and :class:`LayerCost`,
:func:`load_overlay` / :class:`Overlay` (calibrated constants), :func:`calibrate`
(fit an overlay to measured latencies), :func:`runtime_names`.
Imports go one way: this stage reads ``ir``, ``targets``, ``kernels``, ``mapping``, ``plan``,
``options`` and ``deployment`` records, never ``codegen``, ``validate`` or ``cli``.
"""
from .estimator import estimate
from .overlay import Overlay, load_overlay
from .profiles import runtime_profiles
from .records import Estimate, LayerCost


def runtime_names() -> list[str]:
    return list(runtime_profiles())


__all__ = ["Estimate", "LayerCost", "Overlay", "estimate", "load_overlay", "runtime_names"]
