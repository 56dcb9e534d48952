"""Tiled and split deployments generated as C: byte for byte equal to the UNTILED integer
reference on the host (ASan + UBSan) and on QEMU Cortex-M4, for 2, 4 and 8 row stripes and
2x2 patches of every tilable shared int8 model and of a U-Net; a tiled + split U-Net on the
Cortex-M55 with its external arena in the board's DDR. The U-Net 512 on the STM32N6 is
opt-in (MCUDEPLOY_LONG_TESTS=1: 8.7 G instructions, about 25 minutes under QEMU)."""
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


def _cases():
    for model in TILABLE:
        for rows, columns in TILINGS:
            if not (columns > 1 and model in NO_COLUMNS):
                yield model, rows, columns


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("on", ["host", "qemu-m4"])
@pytest.mark.parametrize("model,rows,columns", list(_cases()))
def test_tiled_shared_model_in_c_equals_the_untiled_reference(model, rows, columns, on):
    graph = shared_int8(model)
    region = replace(longest_region(graph, min_rows=8), rows=rows, columns=columns)
    assert_c_matches_untiled(graph, DeploymentOptions(tiling_regions=(region,)), random_feeds(graph, 2, rows), on)


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("on", ["host", "qemu-m4"])
@pytest.mark.parametrize("rows,columns", TILINGS)
def test_tiled_unet_in_c_equals_the_untiled_reference(rows, columns, on):
    graph = unet(32)     # 0.2 GMACC: the whole network tiled, under QEMU in seconds
    region = TilingRegion("conv_3", "conv_71", rows, columns)
    assert_c_matches_untiled(graph, DeploymentOptions(tiling_regions=(region,)), random_feeds(graph, 1), on)


def unet_n6_options(size: int, stripes: dict[str, int]) -> DeploymentOptions:
    """Every U-Net level tiled and its outputs spilled to the STM32N6's hyperRAM."""
    regions = tuple(TilingRegion(start, end, stripes[start]) for start, end in UNET_LEVELS)
    return DeploymentOptions(target="stm32n6", external_activations=False, tiling_regions=regions,
                             split_points=tuple(end for _, end in UNET_LEVELS[:-1]), weights="flash")


UNET_LEVELS = [("conv_3", "maxpool_9"), ("conv_12", "maxpool_18"), ("conv_21", "maxpool_27"), ("conv_30", "conv_34"),
               ("resize_37", "conv_45"), ("resize_48", "conv_56"), ("resize_59", "conv_71")]
UNET_512_STRIPES = {"conv_3": 32, "conv_12": 16, "conv_21": 8, "conv_30": 8, "resize_37": 32, "resize_48": 64,
                    "resize_59": 128}


@pytest.mark.slow
@needs_toolchain
def test_tiled_and_split_unet_on_the_m55_with_an_external_arena():
    graph = unet(64)
    stripes = {start: max(2, count // 8) for start, count in UNET_512_STRIPES.items()}
    deployment, _ = assert_c_matches_untiled(graph, unet_n6_options(64, stripes), random_feeds(graph, 1), "qemu-m55")
    assert deployment.plan.external_bytes > 0 and deployment.plan.transfers
    assert deployment.fits


@pytest.mark.slow
@needs_toolchain
@pytest.mark.skipif(os.environ.get("MCUDEPLOY_LONG_TESTS") != "1",
                    reason="U-Net 512 under QEMU takes about 25 minutes: set MCUDEPLOY_LONG_TESTS=1")
def test_unet_512_fits_the_stm32n6_and_is_bit_exact_on_the_m55(monkeypatch):
    monkeypatch.setattr(qemu, "RUN_TIMEOUT_PER_SAMPLE", 4 * 3600.0)
    graph = unet(512)
    deployment, result = assert_c_matches_untiled(graph, unet_n6_options(512, UNET_512_STRIPES),
                                                  random_feeds(graph, 1), "qemu-m55")
    assert deployment.fits and deployment.plan.placement.arena_region != "hyperRAM"
    assert deployment.plan.arena_bytes <= 1024 * 1024
