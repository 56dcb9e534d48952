"""Tiled and split deployments generated as C: byte for byte equal to the UNTILED integer
reference on the host (ASan + UBSan) and on QEMU Cortex-M4. The numpy reference covers every
tilable shared int8 model x {2, 4, 8 stripes, 2x2 patches} (test_tiling.py); here each case
is one C build (the CI time), so every tilable model is built once, the platforms
alternating and the tilings rotating, and a U-Net once per platform with 8 / 4 / 2 stripes
and 2x2 patches on its levels at once: every tiling runs on each platform. A tiled + split
U-Net on the Cortex-M55 with its external arena in the board's DDR. The U-Net 512 on the
STM32N6 is opt-in (MCUDEPLOY_LONG_TESTS=1: 8.4 G instructions, about 6 minutes under QEMU on an idle machine;
its figures are in benchmarks/results/tiling.md).
"""
from __future__ import annotations

import os
import shutil
from dataclasses import replace

import numpy as np
import pytest

from conftest import INT8_MODELS
from mcudeploy.driver import deploy
from mcudeploy.options import DeploymentOptions, TilingRegion
from mcudeploy.plan.tiling import longest_region
from mcudeploy.reference import run_int
from mcudeploy.validate import qemu
from mcudeploy.validate.generated_code import run_generated
from test_tiling import NO_COLUMNS, TILINGS, UNTILABLE
from tiling_models import random_feeds, shared_int8, unet

HAVE_TOOLCHAIN = all(shutil.which(tool) for tool in qemu.TOOLS)
needs_toolchain = pytest.mark.skipif(not HAVE_TOOLCHAIN, reason="arm-none-eabi-gcc / qemu-system-arm missing: "
                                     "tools/install_toolchain.sh")
TILABLE = [m for m in INT8_MODELS if m not in UNTILABLE]


def assert_c_matches_untiled(untiled, options: DeploymentOptions, feeds, on: str):
    deployment = deploy(untiled, options)
    expected = run_int(untiled, feeds, batch=True)
    result = run_generated(deployment, feeds, on, sanitize=on == "host")
    for name, array in expected.items():
        np.testing.assert_array_equal(result.outputs[name], array, err_msg=f"{name} on {on}")
    return deployment, result


PLATFORMS = ("host", "qemu-m4")


def _cases():
    """(model, rows, columns, platform): each model once, the platforms alternating, taking
    the next tiling of a rotation that it allows."""
    pending: list = []
    for index, model in enumerate(TILABLE):
        pending = pending or list(TILINGS)
        allowed = [t for t in pending if not (t[1] > 1 and model in NO_COLUMNS)] or [TILINGS[0]]
        if allowed[0] in pending:
            pending.remove(allowed[0])
        yield model, *allowed[0], PLATFORMS[index % len(PLATFORMS)]


def test_the_c_cases_cover_every_model_tiling_and_platform():
    cases = list(_cases())
    assert {model for model, *_ in cases} == set(TILABLE)
    assert {(rows, columns) for _, rows, columns, _ in cases} == set(TILINGS)
    assert {on for *_, on in cases} == set(PLATFORMS)
    # the U-Net build runs every tiling on each platform
    assert {(r.rows, r.columns) for r in UNET_MIXED} == set(TILINGS)
    assert {on for *_, on in UNET_CASES} == set(PLATFORMS)


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("model,rows,columns,on", list(_cases()))
def test_tiled_shared_model_in_c_equals_the_untiled_reference(model, rows, columns, on):
    graph = shared_int8(model)
    region = replace(longest_region(graph, min_rows=8), rows=rows, columns=columns)
    assert_c_matches_untiled(graph, DeploymentOptions(tiling_regions=(region,)), random_feeds(graph, 1, rows), on)


# U-Net 32: every tiling at once, on the levels whose outputs have 16 / 8 / 4 / 8 / 16 / 32 rows
UNET_MIXED = (TilingRegion("conv_3", "maxpool_9", 8), TilingRegion("conv_12", "maxpool_18", 2, 2),
              TilingRegion("conv_21", "maxpool_27", 2), TilingRegion("resize_37", "conv_45", 4),
              TilingRegion("resize_48", "conv_56", 2), TilingRegion("resize_59", "conv_71", 2, 2))
UNET_CASES = [("levels", UNET_MIXED, on) for on in PLATFORMS]


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("what,regions,on", UNET_CASES, ids=[f"{c[0]}-{c[2]}" for c in UNET_CASES])
def test_tiled_unet_in_c_equals_the_untiled_reference(what, regions, on):
    graph = unet(32)     # 0.2 GMACC: under QEMU in seconds
    assert_c_matches_untiled(graph, DeploymentOptions(tiling_regions=regions), random_feeds(graph, 1), on)


def unet_n6_options(size: int, stripes: dict[str, int]) -> DeploymentOptions:
    """Every U-Net level tiled and its outputs spilled to the STM32N6's hyperRAM."""
    regions = tuple(TilingRegion(start, end, *_counts(stripes[start])) for start, end in UNET_LEVELS)
    return DeploymentOptions(target="stm32n6", external_activations=False, tiling_regions=regions,
                             split_points=tuple(end for _, end in UNET_LEVELS[:-1]), weights="flash")


UNET_LEVELS = [("conv_3", "maxpool_9"), ("conv_12", "maxpool_18"), ("conv_21", "maxpool_27"), ("conv_30", "conv_34"),
               ("resize_37", "conv_45"), ("resize_48", "conv_56"), ("resize_59", "conv_71")]
# tiles (rows, or (rows, columns)) per level: benchmarks/tiling_bench.py UNET_512_TILES (fits, +11.7 % MACC)
UNET_512_TILES = {"conv_3": 32, "conv_12": 16, "conv_21": 8, "conv_30": 8, "resize_37": 16, "resize_48": 32,
                    "resize_59": (32, 4)}


def _counts(tiles) -> tuple[int, ...]:
    return tiles if isinstance(tiles, tuple) else (tiles,)


def _scaled(tiles, factor: int):
    return tuple(max(2, count // factor) for count in tiles) if isinstance(tiles, tuple) else max(2, tiles // factor)


@pytest.mark.slow
@needs_toolchain
def test_tiled_and_split_unet_on_the_m55_with_an_external_arena():
    graph = unet(32)     # every level still has >= 4 rows for its stripes
    stripes = {start: _scaled(tiles, 8) for start, tiles in UNET_512_TILES.items()}
    deployment, _ = assert_c_matches_untiled(graph, unet_n6_options(32, stripes), random_feeds(graph, 1), "qemu-m55")
    assert deployment.plan.external_bytes > 0 and deployment.plan.transfers
    assert deployment.fits


@pytest.mark.slow
@needs_toolchain
@pytest.mark.skipif(os.environ.get("MCUDEPLOY_LONG_TESTS") != "1",
                    reason="U-Net 512 under QEMU takes about 6 minutes: set MCUDEPLOY_LONG_TESTS=1")
def test_unet_512_fits_the_stm32n6_and_is_bit_exact_on_the_m55(monkeypatch):
    monkeypatch.setattr(qemu, "RUN_TIMEOUT_PER_SAMPLE", 4 * 3600.0)
    graph = unet(512)
    deployment, result = assert_c_matches_untiled(graph, unet_n6_options(512, UNET_512_TILES),
                                                  random_feeds(graph, 1), "qemu-m55")
    assert deployment.fits and deployment.plan.placement.arena_region != "hyperRAM"
    assert deployment.plan.arena_bytes <= 1024 * 1024
