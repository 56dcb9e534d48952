"""Layout-agnostic ops: which ops give the same result on permuted tensors, and how their
attributes change.

If every tensor input of such a node is replaced by ``input.transpose(S)`` (constants
re-laid out by :func:`~mcudeploy.passes.permutation.permute_constant`), then with the
attributes returned by :func:`relayout_attrs` each output becomes ``output.transpose(S)``.
An axis ``k`` of the old tensors is axis ``inverse(S)[k]`` of the new ones.

Ops register here by decorator; an op not in the table (Reshape, Flatten, MatMul, Gemm,
Transpose itself, the NCHW/NHWC ops) blocks transposes from moving through it.
"""
from __future__ import annotations

from typing import Any, Callable

from .permutation import Perm, inverse

AttrRemap = Callable[[dict[str, Any], Perm], dict[str, Any] | None]
_TABLE: dict[str, AttrRemap] = {}


def agnostic(*ops: str) -> Callable[[AttrRemap], AttrRemap]:
    def register(remap: AttrRemap) -> AttrRemap:
        for name in ops:
            _TABLE[name] = remap
        return remap
    return register


def is_agnostic(op: str) -> bool:
    return op in _TABLE


def relayout_attrs(op: str, attrs: dict[str, Any], perm: Perm) -> dict[str, Any] | None:
    """Attributes for ``op`` running on inputs transposed by ``perm``; ``None`` if the op
    cannot (not in the table, or this attribute combination does not allow it)."""
    remap = _TABLE.get(op)
    return None if remap is None else remap(dict(attrs), perm)


@agnostic("Relu", "Clip", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "LeakyRelu",
          "Identity", "Dropout", "QuantizeLinear", "DequantizeLinear",
          "Add", "Sub", "Mul", "Div", "PRelu")
def _elementwise(attrs: dict[str, Any], perm: Perm) -> dict[str, Any]:
    """Elementwise: attributes do not mention axes."""
    return attrs


@agnostic("Softmax", "Concat", "Split")
def _single_axis(attrs: dict[str, Any], perm: Perm) -> dict[str, Any]:
    attrs["axis"] = inverse(perm)[attrs["axis"] % len(perm)]
    return attrs


@agnostic("Slice")
def _slice(attrs: dict[str, Any], perm: Perm) -> dict[str, Any]:
    new_axis = inverse(perm)
    attrs["axes"] = tuple(new_axis[a % len(perm)] for a in attrs["axes"])
    return attrs


@agnostic("ReduceMean")
def _reduce(attrs: dict[str, Any], perm: Perm) -> dict[str, Any] | None:
    if not attrs["keepdims"]:  # the output rank changes: its order would need its own perm
        return None
    new_axis = inverse(perm)
    attrs["axes"] = tuple(sorted(new_axis[a % len(perm)] for a in attrs["axes"]))
    return attrs


@agnostic("Pad")
def _pad(attrs: dict[str, Any], perm: Perm) -> dict[str, Any]:
    rank, pads = len(perm), attrs["pads"]
    # new axis j is old axis perm[j]
    attrs["pads"] = tuple(pads[perm[j]] for j in range(rank)) + \
        tuple(pads[rank + perm[j]] for j in range(rank))
    return attrs


@agnostic("Resize")
def _resize(attrs: dict[str, Any], perm: Perm) -> dict[str, Any]:
    attrs["sizes"] = tuple(attrs["sizes"][axis] for axis in perm)
    return attrs
