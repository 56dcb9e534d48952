"""The ledger's weights are the compiled arrays (plan/ledger.py, kernels/emitted_arrays.py: the
kernel variants' layouts and the per-channel requantization arrays included), and flash counts the
load image of the weights copied to RAM: the start-up code copies them from flash, so they are in
flash too. Reference: the arrays of the generated network_data.c, read from its text and compiled
by the cross compiler (arm-none-eabi-gcc; the writable ``.data.mcu_weights.*`` sections are what
the linker puts ``AT > FLASH``)."""
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
    writable = {r.name for r in deployment.target.regions if r.writable}
    ram_weights = sum(line.bytes for line in deployment.ledger.lines if line.item == "weights" and line.region in writable)
    # the image is the copied regions' weights as compiled: more than the graph's own bytes of
    # them (their requantization arrays and kernel layouts are copied too)
    assert image == ram_weights > sum(-(-sizes[name] // 16) * 16 for name in copied)
    used = {r.region: r.used for r in deployment.ledger.regions}
    assert used["octoFlash"] >= image > 200_000
    kept = deploy(shared_int8(VWW), DeploymentOptions(target="stm32n6", weights="flash"))
    assert "weights (load image)" not in _flash_lines(kept, "octoFlash")      # nothing copied, no image


def _compiled_arrays(deployment, tmp_path) -> list[tuple[str, str, int]]:
    """(symbol, nm type, bytes) of every array of the generated network_data.c, as compiled."""
    files = generate_files(deployment)
    for name in ("network_data.c", "network_data.h"):
        (tmp_path / name).write_text(files[name])
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m55", "-O2", "-c", str(tmp_path / "network_data.c"),
                    "-o", str(tmp_path / "data.o")], check=True)
    symbols = subprocess.run(["arm-none-eabi-nm", "-S", str(tmp_path / "data.o")], check=True,
                             capture_output=True, text=True).stdout
    return [(fields[3], fields[2], int(fields[1], 16)) for fields in (line.split() for line in symbols.splitlines())
            if len(fields) == 4]


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no cross compiler")
@pytest.mark.parametrize("weights", ["ram", "flash"])
def test_the_weight_lines_are_what_the_cross_compiler_emits(tmp_path, weights):
    """Equality, each array rounded up to the 16-byte alignment network_data.c gives it (the
    padding the linker leaves between them): the ledger counts the same arrays the code
    generator writes (kernel variants' layouts, per-channel requantization arrays)."""
    deployment = deploy(shared_int8(VWW), DeploymentOptions(target="stm32n6", weights=weights))
    arrays = _compiled_arrays(deployment, tmp_path)
    assert any(name.endswith(("_multiplier", "_shift")) for name, _, _ in arrays)
    padded = lambda kinds: sum(-(-size // 16) * 16 for _, kind, size in arrays if kind in kinds)  # noqa: E731
    lines = {line.region: line.bytes for line in deployment.ledger.lines if line.item == "weights"}
    writable = {r.name for r in deployment.target.regions if r.writable}
    assert sum(b for region, b in lines.items() if region in writable) == padded("dD")       # .data: copied
    assert sum(b for region, b in lines.items() if region not in writable) == padded("rR")   # .rodata: flash
    if weights == "ram":
        assert _flash_lines(deployment, "octoFlash")["weights (load image)"] == padded("dD")


C_SIZES = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4, "uint32_t": 4, "float": 4,
           "int64_t": 8, "double": 8}


def _written_bytes(deployment) -> dict[str, int]:
    """Section -> bytes of the arrays generate writes in network_data.c, each rounded up to
    its 16-byte alignment (read from the C text, no compiler needed)."""
    import re
    text = generate_files(deployment)["network_data.c"]
    sections: dict[str, int] = {}
    for ctype, count, section in re.findall(r'^const (\w+) \w+\[(\d+)\] NETWORK_PLACE\("([^"]+)"\)', text, re.M):
        sections[section] = sections.get(section, 0) + -(-C_SIZES[ctype] * int(count) // 16) * 16
    return sections


@pytest.mark.parametrize("model, target, weights", [
    (VWW, "stm32n6", "ram"), (VWW, "stm32h743", "auto"), ("mlperf_tiny/resnet8_int8.tflite", "mps3-an547", "auto"),
    ("mlperf_tiny/dscnn_kws_int8.tflite", "stm32f407", "ram"), ("tflite_micro/micro_speech_int8.tflite", None, "auto")])
def test_each_weight_line_equals_the_arrays_generate_writes(model, target, weights):
    from mcudeploy.codegen.emit_data import section_of
    deployment = deploy(shared_int8(model), DeploymentOptions(target=target, weights=weights))
    written = _written_bytes(deployment)
    lines = {line.region: line.bytes for line in deployment.ledger.lines if line.item == "weights"}
    by_section = {section_of(deployment.target, region).section: size for region, size in lines.items() if size}
    assert by_section == written
    assert any("requantization" in line.note and line.bytes for line in deployment.ledger.lines)


def test_a_tiled_layer_stores_its_weights_once_in_the_layout_its_tiles_read():
    """Every tile of a tiled Conv reads one weight tensor through the same variant: it is stored
    once, in that layout, not also in the graph's form that no node reads (kernels/emitted_arrays
    .layout_readers); the ledger equals what generate writes."""
    from mcudeploy.codegen.emit_data import section_of
    from mcudeploy.kernels.emitted_arrays import emitted_arrays, region_bytes
    from tiling_models import unet
    deployment = deploy(unet(32), DeploymentOptions(target="stm32n6", external_activations=False, weights="flash",
                                                    sram_limit=40_000, split_levels=True))
    tiled = [n for n in deployment.graph.nodes if n.op == "Conv" and "@tile" in n.name]
    assert tiled and deployment.kernels.variant(tiled[0]).prepare_constants is not None
    arrays = emitted_arrays(deployment.graph, deployment.kernels, deployment.params, dict(deployment.plan.weights))
    shared = {n.inputs[1].name for n in tiled}
    assert all(a.kind == "layout" for a in arrays if a.key in shared)
    layouts = sum(t["layout"] for t in region_bytes(arrays).values())
    assert layouts >= sum(v.const.nbytes for v in deployment.graph.constants() if v.name in shared)
    lines = {line.region: line.bytes for line in deployment.ledger.lines if line.item == "weights"}
    by_section = {section_of(deployment.target, region).section: size for region, size in lines.items() if size}
    assert by_section == _written_bytes(deployment)
