"""Run a deployment's generated C code on the host or an emulated Cortex-M board, and check
it bit for bit against the integer reference: what ``validate --on`` and ``run --engine
c-host|qemu-m4|qemu-m55`` do.

Input: a :class:`~mcudeploy.deployment.Deployment`, batched feeds and where to run
(:data:`TARGETS`). Output: :class:`~.c_runner.CRunResult` (outputs, instructions per
inference, per layer with ``profile``) or a :class:`~.c_runner.GeneratedCodeCheck`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import UsageError
from ..options import DeploymentOptions
from ..reference.float_kernels.quant import quantize
from .c_runner import CRunResult, GeneratedCodeCheck, compare_with_reference, run_host
from .data import check_arrays
from .qemu import ENGINE_BOARDS, run_qemu
from .serial_run import is_serial, run_serial

if TYPE_CHECKING:
    from ..deployment import Deployment

TARGETS = ("host", *ENGINE_BOARDS, "serial:PORT")


def code_target(text: str) -> str:
    """The ``--on`` value checked: one of :data:`TARGETS`, ``serial:`` followed by a port."""
    if text in TARGETS[:-1] or (is_serial(text) and len(text) > len("serial:")):
        return text
    raise UsageError(f"--on {text!r}: choose one of {', '.join(TARGETS)} (e.g. serial:/dev/ttyACM0, "
                     "serial:socket://127.0.0.1:5555)")


def options_for_run(options: DeploymentOptions, on: str | None) -> tuple[DeploymentOptions, bool]:
    """The options a generated-code run on ``on`` builds with, and whether the target was
    defaulted. Without ``--target`` a QEMU run builds for the emulated board's own built-in
    target (``mps2-an386``: Cortex-M4 with DSP; ``mps3-an547``: Cortex-M55 with Helium), so the
    code under test has the kernels of that core, as the firmware of a board with the same core
    has, not the portable reference kernels (6-9x more instructions). A host run without a
    target keeps the portable kernels: the host compiler builds no Arm kernels."""
    if options.target is None and on in ENGINE_BOARDS:
        return options.with_values(target=ENGINE_BOARDS[on]), True
    return options, False


def build_summary(deployment: Deployment, on: str, defaulted: bool) -> str:
    """One line: where the code ran, the target and core it was built for, its kernel variants."""
    counts = deployment.kernels.counts()
    kernels = ", ".join(f"{count} {name}" for name, count in sorted(counts.items()))
    target = deployment.target
    built = (f"target {target.name} ({target.core.name})" if target is not None
             else "no target (portable reference kernels)")
    note = ("; no --target given: built for the QEMU board's own target, give --target for your "
            "board's deployment" if defaulted else "")
    return f"generated code on {on}: {built}, kernels {kernels}{note}"


def run_generated(deployment: Deployment, feeds: dict[str, np.ndarray], on: str, *, sanitize: bool = False,
                  profile: bool = False) -> CRunResult:
    """The generated code of ``deployment`` run on ``on`` (``host``, ``qemu-m4``, ``qemu-m55``,
    ``serial:PORT``: a board running the serial firmware, :mod:`.serial_run`)."""
    if is_serial(on):
        return run_serial(deployment, feeds, on, profile=profile)
    if on == "host":
        if profile:
            raise UsageError("instructions per layer are counted under QEMU only (--on qemu-m4 / qemu-m55)")
        return run_host(deployment, feeds, sanitize=sanitize)
    if on not in ENGINE_BOARDS:
        raise UsageError(f"cannot run generated code on {on!r}; choose one of {', '.join(TARGETS)}")
    return run_qemu(deployment, feeds, on, profile=profile)


def check_generated_code(deployment: Deployment, feeds: dict[str, np.ndarray], on: str, *, sanitize: bool = False,
                         profile: bool = False) -> GeneratedCodeCheck:
    """Run on ``on`` and compare every output byte with the integer reference."""
    return compare_with_reference(deployment, feeds, on,
                                  run_generated(deployment, feeds, on, sanitize=sanitize, profile=profile))


def integer_samples(graph, arrays: dict[str, np.ndarray], origin: str):
    """``arrays`` as checked samples for ``graph``: float data for an integer input is
    quantized with the input's scale and zero point,
    ``q = clamp(round_half_even(x / scale) + zero_point)``; integer data must have the input's
    dtype. A leading sample axis is allowed (see :mod:`.data`)."""
    converted = dict(arrays)
    for value in graph.inputs:
        array = np.asarray(converted.get(value.name)) if value.name in converted else None
        if array is not None and array.dtype.kind == "f" and value.dtype.is_integer and value.quant is not None:
            converted[value.name] = quantize(array.astype(np.float32), value.quant, value.dtype.numpy)
    return check_arrays(graph, converted, origin)


def random_integer_feeds(graph, count: int, seed: int) -> dict[str, np.ndarray]:
    """``count`` uniform random samples per input over its dtype's whole range (float inputs:
    uniform in [-1, 1])."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in graph.inputs:
        shape = (count, *value.shape)
        if value.dtype.is_integer:
            info = np.iinfo(value.dtype.numpy)
            feeds[value.name] = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(value.dtype.numpy)
        else:
            feeds[value.name] = rng.uniform(-1, 1, size=shape).astype(value.dtype.numpy)
    return feeds
