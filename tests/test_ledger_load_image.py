"""Flash counts the load image of the weights copied to RAM (plan/ledger.py): the start-up code
copies them from flash, so they are in flash too. Reference: the cross compiler's sections of the
generated network_data.c (arm-none-eabi-gcc; the writable ``.data.mcu_weights.*`` sections are
what the linker puts ``AT > FLASH``)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from mcudeploy.codegen import generate_files
from mcudeploy.driver import deploy
from mcudeploy.options import DeploymentOptions
from tiling_models import shared_int8

VWW = "mlperf_tiny/mobilenetv1_vww_int8.tflite"


def _flash_lines(deployment, region: str) -> dict[str, int]:
    return {line.item: line.bytes for line in deployment.ledger.lines if line.region == region}


def test_copied_weights_are_charged_to_flash_too():
    deployment = deploy(shared_int8(VWW), DeploymentOptions(target="stm32n6", weights="ram"))
    copied = [name for name, region in deployment.plan.weights.items() if region != "octoFlash"]
    assert copied, "weights = ram copies the hot weights on chip"
    sizes = {v.name: v.nbytes for v in deployment.graph.constants()}
    image = _flash_lines(deployment, "octoFlash")["weights (load image)"]
    assert image == sum(-(-sizes[name] // 16) * 16 for name in copied)      # each array 16-byte aligned
    used = {r.region: r.used for r in deployment.ledger.regions}
    assert used["octoFlash"] >= image > 200_000
    kept = deploy(shared_int8(VWW), DeploymentOptions(target="stm32n6", weights="flash"))
    assert "weights (load image)" not in _flash_lines(kept, "octoFlash")      # nothing copied, no image


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no cross compiler")
def test_the_load_image_is_what_the_cross_compiler_puts_in_flash(tmp_path):
    deployment = deploy(shared_int8(VWW), DeploymentOptions(target="stm32n6", weights="ram"))
    files = generate_files(deployment)
    for name in ("network_data.c", "network_data.h"):
        (tmp_path / name).write_text(files[name])
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m55", "-O2", "-c", str(tmp_path / "network_data.c"),
                    "-o", str(tmp_path / "data.o")], check=True)
    symbols = subprocess.run(["arm-none-eabi-nm", "-S", str(tmp_path / "data.o")], check=True,
                             capture_output=True, text=True).stdout
    sizes = [(fields[3], int(fields[1], 16)) for fields in (line.split() for line in symbols.splitlines())
             if len(fields) == 4 and fields[2] in "dD"]
    # the code generator adds the per-channel requantization arrays (8 bytes per output channel,
    # ``layerN_..._multiplier`` / ``_shift``: not graph constants, not in the ledger's weights: a
    # known undercount, 21,888 B here); the graph's own arrays are emitted in the chosen
    # variants' layouts (rows padded, depthwise channel groups), a few percent larger than the
    # graph's constants: the ledger's image is at least 90 % of them and never more
    requantization = sum(size for name, size in sizes if name.endswith(("_multiplier", "_shift")))
    graph_arrays = sum(size for _, size in sizes) - requantization
    image = _flash_lines(deployment, "octoFlash")["weights (load image)"]
    assert requantization > 0 and 0.9 * graph_arrays <= image <= graph_arrays
