"""Why a trial failed: one named reason per broken constraint, with its numbers.

Input: a :class:`~mcudeploy.deployment.Deployment`, its latency estimate (or None) and the
search's :class:`Constraints`. Output: a list of :class:`Reason` (empty: the trial passes).

    RAM_NOFIT       a RAM region over capacity: region, bytes needed, bytes available, the
                    arena's peak step and the tensors alive there (the ledger's figures)
    FLASH_NOFIT     a flash region over capacity, or the weights the image stores (copies
                    to RAM included) over ``flash_limit``
    ALIGNMENT       with ``strict_alignment`` (or a target whose NPU refuses unaligned
                    channels): an NPU layer reading channels that are not a multiple of the
                    NPU's ``channel_alignment`` (node, channels % N); the model's input data
                    is exempt (its channels are the data's, 1 grey or 3 RGB)
    NPU_CONSTRAINT  a layer the NPU cannot run: with ``npu_only``, every node with MACC that
                    the mapping left on the CPU (the mapping predicate's code and message);
                    always, an NPU layer the estimator predicts to fail (its buffers)
    UNSUPPORTED     the pipeline refused the configuration or the model (the error's text)

Each reason's ``message`` is one line of the trial log; ``data`` holds the same numbers for
the JSON log.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..mapping.predicates import CHANNEL_OPS, channel_count

if TYPE_CHECKING:
    from ..deployment import Deployment

RAM_NOFIT, FLASH_NOFIT, ALIGNMENT = "RAM_NOFIT", "FLASH_NOFIT", "ALIGNMENT"
NPU_CONSTRAINT, UNSUPPORTED = "NPU_CONSTRAINT", "UNSUPPORTED"
CODES = (RAM_NOFIT, FLASH_NOFIT, ALIGNMENT, NPU_CONSTRAINT, UNSUPPORTED)
BOUNDARY_OPS = ("QuantizeLinear", "DequantizeLinear")


@dataclass(frozen=True)
class Constraints:
    """Limits the search must respect beyond the deployment options."""
    flash_limit: int | None = None        # bytes of weights in flash
    npu_only: bool = False                # every node with MACC on the NPU
    strict_alignment: bool = False        # NPU layers need aligned channels

    def to_dict(self) -> dict:
        return {"flash_limit": self.flash_limit, "npu_only": self.npu_only,
                "strict_alignment": self.strict_alignment}


@dataclass(frozen=True)
class Reason:
    code: str
    message: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"code": self.code, "message": self.message, **self.data}


def kib(count: float) -> str:
    """``412KB`` style, as compiler logs print it (KiB / MiB, 1024-based)."""
    if abs(count) >= 10 * 1024 * 1024:
        return f"{count / 1048576:.1f}MB"
    return f"{count / 1024:.0f}KB" if abs(count) >= 10240 else f"{count:.0f}B"


def exact(count: int | None) -> str:
    """Bytes exactly, with the rounded size: ``33312 B (33KB)`` (a critical limit is a byte count)."""
    if count is None:
        return "unlimited"
    return f"{count} B" if abs(count) < 10240 else f"{count} B ({kib(count)})"


def short_name(name: str, width: int = 40) -> str:
    """A tensor name as the log shows it: TFLite's first ``;``-part, at most ``width`` characters."""
    name = name.split(";")[0]
    return name if len(name) <= width else name[: width - 3] + "..."


def stored_weight_bytes(deployment: Deployment) -> int:
    """Bytes of weights the firmware image stores in flash (those copied to RAM at start-up too)."""
    return sum(value.nbytes for value in deployment.graph.constants())


def memory_reasons(deployment: Deployment, constraints: Constraints) -> list[Reason]:
    """RAM_NOFIT / FLASH_NOFIT from the ledger (module docstring)."""
    ledger = deployment.ledger
    alive: list[dict[str, Any]] = [{"tensor": name, "bytes": size} for name, size in ledger.peak_tensors[:6]]
    shown = ", ".join(f"{short_name(item['tensor'])} {kib(item['bytes'])}" for item in alive[:4])
    reasons = []
    for region in ledger.regions:
        if not region.overflow:
            continue
        if region.kind == "flash":
            reasons.append(Reason(FLASH_NOFIT, f"flash overflow in {region.region}: needed {exact(region.used)}, "
                                  f"available {exact(region.capacity)}",
                                  {"region": region.region, "needed": region.used, "available": region.capacity}))
            continue
        reasons.append(Reason(
            RAM_NOFIT, f"{'SRAM' if region.kind == 'sram' else region.kind.upper()} overflow in {region.region}: "
                       f"estimated {exact(region.used)}, available {exact(region.capacity)}; peak at step "
                       f"{ledger.peak_step} ({short_name(ledger.peak_node)}): {shown}",
            {"region": region.region, "kind": region.kind, "needed": region.used, "available": region.capacity,
             "step": ledger.peak_step, "node": ledger.peak_node, "alive": alive}))
    if not reasons and ledger.notes:     # e.g. a weight that fits no region
        reasons.append(Reason(RAM_NOFIT, "; ".join(ledger.notes), {"notes": list(ledger.notes)}))
    flash = stored_weight_bytes(deployment)
    if constraints.flash_limit is not None and flash > constraints.flash_limit:
        reasons.append(Reason(FLASH_NOFIT, f"flash limit: weights need {exact(flash)}, limit "
                                           f"{exact(constraints.flash_limit)}",
                              {"needed": flash, "available": constraints.flash_limit}))
    return reasons


LAYOUT_OPS = ("Reshape", "Transpose", "QuantizeLinear", "DequantizeLinear", "Identity", "Slice", "Pad", "Split")


def model_input_data(value) -> bool:
    """Whether ``value`` is the model's input data (through layout, view, quantize ops and tile slices):
    its channels are the data's (1 grey, 3 RGB), not a width the model's author chose."""
    node = value.producer
    while node is not None and node.op in LAYOUT_OPS:
        value = node.inputs[0]
        node = value.producer
    return node is None and not value.is_constant


def alignment_reasons(deployment: Deployment, constraints: Constraints) -> list[Reason]:
    """ALIGNMENT: NPU convolutions reading channels that are not a multiple of the NPU's
    alignment (the model's input data excepted: its channels are the data's)."""
    npu = deployment.target.npu if deployment.target is not None else None
    if npu is None or npu.channel_alignment <= 1 or deployment.mapping is None:
        return []
    if not (constraints.strict_alignment or npu.strict_channel_alignment):
        return []
    devices = {p.node: p for p in deployment.mapping.placements}
    reasons, seen = [], set()
    for node in deployment.graph.nodes:
        placement = devices.get(node.name)
        refused = placement is not None and any(r.code == "channels-unaligned" for r in placement.reasons)
        if node.op not in CHANNEL_OPS or not (refused or (placement is not None and placement.device == "npu")):
            continue
        source = next((v for v in node.inputs if v is not None and not v.is_constant), None)
        channels = channel_count(source, node.attrs.get("layout", "NHWC")) if source is not None else None
        if channels is None or channels % npu.channel_alignment == 0 or model_input_data(source):
            continue
        layer = node.name.split("@")[0]        # the tiles of a tiled layer are one layer
        if layer in seen:
            continue
        seen.add(layer)
        padded = -(-channels // npu.channel_alignment) * npu.channel_alignment
        reasons.append(Reason(ALIGNMENT, f"data alignment: {layer} input channels {channels} % "
                                         f"{npu.channel_alignment} = {channels % npu.channel_alignment} != 0 "
                                         f"(pad to {padded})",
                              {"node": layer, "channels": channels, "alignment": npu.channel_alignment,
                               "padded": padded}))
    return reasons


def npu_reasons(deployment: Deployment, estimate, constraints: Constraints) -> list[Reason]:
    """NPU_CONSTRAINT: refused layers (``npu_only``) and layers predicted to fail."""
    reasons = []
    mapping = deployment.mapping
    if constraints.npu_only and mapping is not None and deployment.target is not None \
            and deployment.target.npu is not None:
        for placement in mapping.placements:
            if placement.device != "cpu" or placement.macc == 0 or placement.op in BOUNDARY_OPS:
                continue
            for reason in placement.reasons:
                if reason.code == "channels-unaligned":
                    continue            # ALIGNMENT says it with the numbers
                reasons.append(Reason(NPU_CONSTRAINT, f"{placement.node}: {reason.code}: {reason.message}",
                                      {"node": placement.node, "predicate": reason.code}))
    if estimate is not None:
        for layer in estimate.layers:
            if layer.failure:
                reasons.append(Reason(NPU_CONSTRAINT, f"{layer.node}: {layer.failure}",
                                      {"node": layer.node, "predicate": "estimated-failure"}))
    return reasons


def unsupported(error: Exception) -> Reason:
    return Reason(UNSUPPORTED, str(error).splitlines()[0] if str(error) else type(error).__name__,
                  {"error": type(error).__name__})


def trial_reasons(deployment: Deployment, estimate, constraints: Constraints) -> list[Reason]:
    """Every reason ``deployment`` fails (module docstring), memory first."""
    return (memory_reasons(deployment, constraints) + alignment_reasons(deployment, constraints)
            + npu_reasons(deployment, estimate, constraints))
