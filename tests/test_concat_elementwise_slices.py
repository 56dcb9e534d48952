"""A channel Concat whose inputs are Adds / Muls (residual branches joined, as in DenseNet-style
or Inception-ResNet blocks) is done in place on DSP and Helium cores: the ``dsp-elementwise`` /
``mve-elementwise`` Add and Mul write their slice with an out c_stride (runtime/src/dsp, src/mve:
one run of C elements per pixel), as the reference Add does.

Recipe: x = conv 3x3 (3 -> 16); [Add(x, conv 1x1 (x))] || [Mul(x, x)] || conv 1x1 (x) ->
concat (48 channels) -> conv 3x3 (48 -> 4), quantized by mcudeploy (int8 I/O; 16
channels each: the slices start at multiples of 16 bytes, the default alignment);
deployed for a DSP core (stm32h743) and a Helium core (stm32n6): the Concat is elided, the
Add and the Mul run the optimised variant with the concat's channel stride, and the generated C (host
build; QEMU M4 / M55 when the cross compiler is there) equals the integer reference.
"""
from __future__ import annotations

import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

from kernel_cases import mismatches
from mcudeploy.driver import deployable_graph
from mcudeploy.importers import load_model
from test_codegen_qemu import needs_toolchain
from test_concat_channel_slices import SIZE, _builder, _model, concat_of, feeds_of
from tiling_models import quantize_int8_io

TARGETS = [("stm32h743", "dsp-elementwise", "qemu-m4"), ("stm32n6", "mve-elementwise", "qemu-m55")]


def residual_concat_model():
    build = _builder()
    x = build.conv("input", 3, 16, 3)
    left, right = build.node("Add", [x, build.conv(x, 16, 16, 1)]), build.node("Mul", [x, x])
    joined = build.node("Concat", [left, right, build.conv(x, 16, 16, 1)], axis=1)
    return _model(build, build.conv(joined, 48, 4, 3, relu=False), "residual_concat")


@lru_cache(maxsize=None)
def _graph():
    import onnx
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "residual_concat.onnx"
        onnx.save(residual_concat_model(), path)
        graph = load_model(path)
    return deployable_graph(quantize_int8_io(graph, (1, 3, SIZE, SIZE), samples=1))


def _check(target: str, variant: str, on: str) -> None:
    graph = _graph().copy()
    wrong, deployment = mismatches(graph, feeds_of(graph, 2), target, on)
    assert not wrong, wrong
    concat = concat_of(deployment.graph)
    assert concat.name in deployment.plan.elided_nodes
    adds = [value for value in concat.inputs if value.producer.op in ("Add", "Mul")]
    assert len(adds) == 2
    for value in adds:
        assert deployment.kernels.choices[value.producer.name].variant == variant
    assert [deployment.plan.channel_strides[value.name] for value in concat.inputs] == [48, 48, 48]


@pytest.mark.parametrize("target, variant, on", [*(pytest.param(*row, marks=pytest.mark.slow) for row in TARGETS),
                                                 (None, "reference", None)])
def test_elementwise_producers_write_their_slices_on_the_host(target, variant, on):
    """(None: no target, the reference Add / Mul; its generated call once passed a dense
    out_dims while the plan aliased the output as a channel slice: 910 of 1024 outputs wrong.)"""
    _check(target, variant, "host")


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("target, variant, on", TARGETS)
def test_elementwise_producers_write_their_slices_under_qemu(target, variant, on):
    _check(target, variant, on)
