"""Benchmark: the M55 arena of every full-integer shared model with the Helium depthwise's two
overlap distances given to the plan.

Run ``python benchmarks/depthwise_overlap_bench.py`` (under a minute). Writes
``benchmarks/results/depthwise_overlap.md``.

``stricter``: what the plan gets (``kernels/mve.py: depthwise_overlap``, the pixel-order
distance on both paths); ``band``: the band path's own distance (``band_overlap``, smaller,
often 0). Both are safe for the kernel; ``plan/paired_greedy`` is not monotone in the
distances, so the smaller one does not always give the smaller arena. Planning only: no code
is compiled or run.
"""
from __future__ import annotations

import logging
import os
import platform
import sys
from pathlib import Path

import mcudeploy.kernels.mve as mve
from mcudeploy.driver import deploy
from mcudeploy.options import DeploymentOptions
from paths import INT8_MODELS, RESULTS, SHARED_MODELS, git_commit

log = logging.getLogger("depthwise_overlap_bench")
TARGET = "stm32n6"


def arenas() -> dict[str, tuple[int, int]]:
    """(arena bytes, mve-depthwise layers) per model with the variant's current proof."""
    result = {}
    for model in INT8_MODELS:
        deployment = deploy(SHARED_MODELS / model, DeploymentOptions(target=TARGET, kernels="auto"))
        result[Path(model).name] = (deployment.plan.arena_bytes, deployment.kernels.counts().get("mve-depthwise", 0))
    return result


def with_proof(proof) -> dict[str, tuple[int, int]]:
    """The arenas with ``proof`` as mve-depthwise's overlap proof (restored afterwards)."""
    original = mve.MVE_DEPTHWISE.overlap_proof
    object.__setattr__(mve.MVE_DEPTHWISE, "overlap_proof", proof)   # the registered variant, frozen
    try:
        return arenas()
    finally:
        object.__setattr__(mve.MVE_DEPTHWISE, "overlap_proof", original)


def main() -> None:
    logging.basicConfig(level=logging.ERROR)
    stricter, band = with_proof(mve.depthwise_overlap), with_proof(mve.band_overlap)
    commit = git_commit()
    lines = ["# Helium depthwise: the plan's overlap distance and the M55 arena", "",
             f"`python benchmarks/{Path(__file__).name}` at {commit} on {platform.machine()} ({os.cpu_count()} CPUs, "
             f"load average {os.getloadavg()[0]:.1f}); Python {platform.python_version()}; target {TARGET}, "
             "`kernels = auto`, planned arena (scratch included), bytes.", "",
             "| model | mve-depthwise layers | arena, stricter distance (used) | arena, band path's distance | "
             "difference |", "|---|---:|---:|---:|---:|"]
    for name, (arena, layers) in stricter.items():
        other = band[name][0]
        lines.append(f"| {name} | {layers} | {arena:,} | {other:,} | {other - arena:+,} |")
    lines += ["", __doc__.split("\n\n")[2].replace("\n", " ")]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "depthwise_overlap.md").write_text("\n".join(lines) + "\n")
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
