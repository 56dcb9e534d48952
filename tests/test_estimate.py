"""The latency estimator on hand-computed cases: loop-count features against a brute-force
count of the C kernel's loops, a convolution's cycles from the formula on a known target, the
bound a layer gets, the clock overrides, the NPU epoch model, and bad input."""
from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path

import pytest

from mcudeploy.driver import deploy
from mcudeploy.errors import UsageError
from mcudeploy.estimate import estimate
from mcudeploy.estimate.features import features_of
from mcudeploy.estimate.instructions import lookup
from mcudeploy.estimate.profiles import core_model
from mcudeploy.options import DeploymentOptions
from mcudeploy.targets import TargetError, parse_target

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from layer_graphs import LayerBatch  # noqa: E402

CPU_TARGET = """
name = "hand"
references = ["test"]
[core]
name = "Cortex-M4F"
clock_mhz = 100
dsp = true
[[regions]]
name = "SRAM"
base = 0x2000_0000
size = "256K"
latency_cycles = 1
bandwidth_mb_per_s = 400
[[regions]]
name = "XFLASH"
base = 0x9000_0000
size = "16M"
kind = "flash"
access = "r"
latency_cycles = {latency}
line_bytes = 8
bandwidth_mb_per_s = {bandwidth}
"""

NPU_TABLE = """
[npu]
name = "toy"
clock_mhz = 500
ops_per_cycle = 64
ops = ["Conv"]
accelerators = 2
macs_per_accelerator = 16
stream_engines = 4
stream_bytes_per_cycle = 4
bus_interfaces = 1
bus_bytes_per_cycle = 8
epoch_controller = true
epoch_setup_cycles = 1000
run_overhead_us = 5
"""


def cpu_target(latency: int = 10, bandwidth: float = 100):
    return parse_target(CPU_TARGET.format(latency=latency, bandwidth=bandwidth), "hand.toml", Path("."))


def one_conv(h=6, w=5, c=3, o=4, k=3, stride=1, pad="same", group=1):
    batch = LayerBatch("one", seed=3)
    batch.conv(h, w, c, o, k, stride, pad, group=group)
    return batch.finish()


def loop_counts(node) -> dict[str, int]:
    """The loop iterations of runtime/src/conv.c (conv_core + dot_at), counted by running them."""
    x, w, out = node.inputs[0], node.inputs[1], node.outputs[0]
    _, height, width, _ = x.shape
    _, out_h, out_w, out_c = out.shape
    kernel_h, kernel_w, per_group = w.shape[1:]
    (stride_h, stride_w), (pad_top, pad_left) = node.attrs["strides"], node.attrs["pads"][:2]
    counts = dict.fromkeys(("outputs", "tap_rows", "valid_rows", "tap_cols", "taps", "macs"), 0)
    for y, x_, _ in itertools.product(range(out_h), range(out_w), range(out_c)):
        counts["outputs"] += 1
        for i in range(kernel_h):
            counts["tap_rows"] += 1
            if not 0 <= y * stride_h - pad_top + i < height:
                continue
            counts["valid_rows"] += 1
            for j in range(kernel_w):
                counts["tap_cols"] += 1
                if 0 <= x_ * stride_w - pad_left + j < width:
                    counts["taps"] += 1
                    counts["macs"] += per_group
    return counts


@pytest.mark.parametrize("shape", [dict(), dict(stride=2), dict(pad="valid", k=3), dict(k=(1, 3), h=1, w=7),
                                   dict(c=4, o=8, group=4), dict(k=5, h=3, w=3)])
def test_window_features_count_the_kernel_loops(shape):
    node = one_conv(**shape).nodes[0]
    features = features_of("conv2d", node)
    assert {name: features[name] for name in loop_counts(node)} == loop_counts(node)


def test_conv_cycles_follow_the_formula_on_a_known_target():
    """instructions = sum c_f n_f; cycles = instructions x CPI(M4, scalar) + fills x latency, with
    weights and bias streamed from an external flash (no prefetch, no cache): every 8-byte line
    costs its 10 wait cycles. The priors (``defaults=False``): the shipped calibration scales the
    CPI and adds a flash cost per weight byte (tests/test_estimate_defaults.py)."""
    deployment = deploy(one_conv(), DeploymentOptions(kernels="reference", weights="flash"), target=cpu_target())
    layer = estimate(deployment, defaults=False).layers[0]
    node = deployment.graph.nodes[0]
    counts = loop_counts(node)
    # 6x5 output x 4 channels, 3x3 SAME: in-bounds rows 2+3+3+3+3+2 = 16, columns 2+3+3+3+2 = 13
    assert counts["outputs"] == 120 and counts["taps"] == 4 * 16 * 13 and counts["macs"] == 4 * 16 * 13 * 3
    fit, _ = lookup("mcudeploy", "cortex-m4", "reference", "conv2d")
    instructions = sum(c * features_of("conv2d", node).get(f, 0) for f, c in fit.coefficients.items())
    assert layer.instructions == pytest.approx(instructions)
    cpi = core_model(deployment.target.core).cpi["scalar"]
    assert layer.compute_cycles + layer.overhead_cycles == pytest.approx(instructions * cpi)
    weight_bytes = counts["macs"]                    # one byte per MAC: the reference kernel re-reads
    parameter_bytes = counts["outputs"] * 12         # bias, multiplier, shift (int32) per output
    assert layer.bytes_read["XFLASH"] == weight_bytes + parameter_bytes
    assert layer.memory_cycles == pytest.approx((weight_bytes + parameter_bytes) / 8 * 10)
    assert layer.time_us == pytest.approx(layer.cycles / 100e6 * 1e6)
    assert layer.bound == "compute"


def test_bounds_compute_memory_overhead():
    slow = cpu_target(latency=4000, bandwidth=1)     # a pathological flash: the weights dominate
    memory = estimate(deploy(one_conv(), DeploymentOptions(kernels="reference", weights="flash"), target=slow))
    assert memory.layers[0].bound == "memory" and "XFLASH" in memory.layers[0].cause
    compute = estimate(deploy(one_conv(h=16, w=16, c=16, o=16), DeploymentOptions(weights="ram"), target=cpu_target()))
    assert compute.layers[0].bound == "compute"
    batch = LayerBatch("copy")
    batch.reshape((1, 2, 2, 2), (1, 8))
    overhead = estimate(deploy(batch.finish(), DeploymentOptions(), target=cpu_target()))
    assert overhead.layers[0].bound == "overhead"


def test_core_clock_override_keeps_cycles_and_scales_memory_waits():
    deployment = deploy(one_conv(), DeploymentOptions(kernels="reference", weights="flash"), target=cpu_target())
    full, half = estimate(deployment), estimate(deployment, core_clock_hz=50e6)
    a, b = full.layers[0], half.layers[0]
    assert b.compute_cycles == pytest.approx(a.compute_cycles)
    assert b.memory_cycles == pytest.approx(a.memory_cycles / 2)        # the flash latency is a time
    assert b.time_us == pytest.approx((b.compute_cycles + b.overhead_cycles) / 50 + a.memory_cycles / 100, rel=1e-6)
    assert half.core_clock_hz == 50e6


def npu_deployment(**options):
    target = parse_target(CPU_TARGET.format(latency=10, bandwidth=100) + NPU_TABLE, "npu.toml", Path("."))
    return deploy(one_conv(h=8, w=8, c=8, o=8), DeploymentOptions(executor="vendor-npu", **options), target=target)


def test_npu_epoch_is_the_max_of_compute_and_memory_plus_setup():
    result = estimate(npu_deployment(weights="ram"))
    layer = next(layer for layer in result.layers if layer.device == "npu")
    outputs, macs_per_output = 8 * 8 * 8, 3 * 3 * 8     # 72 MACs per output, 32 per pass -> 3 passes
    assert layer.compute_cycles == outputs * math.ceil(macs_per_output / 32)
    assert set(layer.bytes_read) == {"SRAM"}          # weights copied on chip, activations on chip
    moved = layer.bytes_read["SRAM"] + layer.bytes_written["SRAM"]
    per_cycle = 400e6 / 500e6                         # the region's bandwidth at the NPU clock
    assert layer.memory_cycles == pytest.approx(max(moved / per_cycle, moved / 8, 8 * 8 * 8 / 4))
    assert layer.cycles == pytest.approx(max(layer.compute_cycles, layer.memory_cycles) + 1000)
    assert layer.time_us == pytest.approx(layer.cycles / 500e6 * 1e6)
    assert result.overhead_us >= 5.0                     # the NPU run's software control
    faster = estimate(npu_deployment(weights="ram"), npu_clock_hz=1e9)
    assert next(item for item in faster.layers if item.device == "npu").time_us == pytest.approx(layer.time_us / 2)


def test_estimate_records_are_json_and_csv_ready():
    result = estimate(deploy(one_conv(), DeploymentOptions(), target=cpu_target()))
    document = json.loads(json.dumps(result.to_json()))
    assert document["latency_ms"] == pytest.approx(result.latency_ms, rel=1e-5)
    assert set(document["bytes_per_region"]) <= {"SRAM", "XFLASH"}
    assert result.csv_rows()[0]["node"] == result.layers[0].node
    assert result.device_share() == {"cpu": pytest.approx(1.0)}


# ---------------------------------------------------------------- bad input

def test_no_target_is_a_usage_error():
    with pytest.raises(UsageError, match="needs a target"):
        estimate(deploy(one_conv(), DeploymentOptions()))


@pytest.mark.parametrize("option, value", [("core_clock_hz", 0.0), ("core_clock_hz", -5e6), ("npu_clock_hz", float("nan"))])
def test_bad_clocks_are_refused(option, value):
    with pytest.raises(UsageError, match="positive number of Hz"):
        estimate(deploy(one_conv(), DeploymentOptions(), target=cpu_target()), **{option: value})


def test_unknown_runtime_names_the_profiles():
    with pytest.raises(UsageError, match="mcudeploy, cmsis-nn"):
        estimate(deploy(one_conv(), DeploymentOptions(), target=cpu_target()), runtime="tvm")


def test_npu_without_its_figures_names_every_missing_key():
    bare = NPU_TABLE.split("accelerators")[0]
    target = parse_target(CPU_TARGET.format(latency=10, bandwidth=100) + bare, "bare.toml", Path("."))
    deployment = deploy(one_conv(), DeploymentOptions(executor="vendor-npu"), target=target)
    with pytest.raises(TargetError) as info:
        estimate(deployment)
    for key in ("accelerators", "macs_per_accelerator", "stream_bytes_per_cycle", "bus_interfaces", "bus_bytes_per_cycle"):
        assert key in str(info.value)


def test_region_without_speed_figures_makes_its_layers_unknown_not_free():
    target = cpu_target().with_regions([*cpu_target().regions[:1], __import__("dataclasses").replace(
        cpu_target().regions[1], bandwidth=0.0, latency_cycles=0)], "no figures")
    result = estimate(deploy(one_conv(), DeploymentOptions(weights="flash"), target=target))
    layer = result.layers[0]
    assert not layer.known and not result.complete
    assert "XFLASH" in " ".join(layer.notes) and "bandwidth_mb_per_s" in " ".join(layer.notes)
    assert result.latency_us == pytest.approx(result.overhead_us)        # nothing counted for it


def test_unknown_core_names_the_known_ones():
    text = CPU_TARGET.format(latency=10, bandwidth=100).replace('name = "Cortex-M4F"', 'name = "RISC-V"')
    target = parse_target(text, "riscv.toml", Path("."))
    with pytest.raises(TargetError, match="riscv.toml.*RISC-V.*Cortex-M4"):
        estimate(deploy(one_conv(), DeploymentOptions(), target=target))
