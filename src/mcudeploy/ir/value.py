"""A tensor in the IR: a typed, statically shaped edge between nodes.

Ownership and links (the invariants the verifier checks):

* A value is produced by at most one node (``producer``); graph inputs and constants
  have ``producer is None``.
* ``uses`` lists every ``(node, input_index)`` that reads the value, kept up to date by
  :class:`~mcudeploy.ir.node.Node` and :class:`~mcudeploy.ir.graph.Graph` methods; passes never
  edit ``uses`` by hand.
* A constant holds its data in ``const`` (a numpy array whose dtype and shape match the
  value's); its bytes are the weights as stored (int8 weights stay int8).
* Shapes are static: a tuple of positive ints (``()`` for a scalar).
* ``layout`` is ``"NCHW"``, ``"NHWC"`` or ``None`` (unknown / not an image tensor); it is
  a description used by passes and reports, the op's own ``layout`` attribute is what
  decides how the op reads the tensor.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .dtypes import DType
from .quant import QuantParams

if TYPE_CHECKING:
    from .node import Node


class Value:
    __slots__ = ("name", "dtype", "shape", "const", "quant", "layout", "producer", "uses", "origin")

    def __init__(self, name: str, dtype: DType, shape: tuple[int, ...], *,
                 const: np.ndarray | None = None, quant: QuantParams | None = None,
                 layout: str | None = None, origin: str | None = None) -> None:
        self.name = name
        # The model's tensor this value stands for, when a pass made it from one (a
        # transposed or re-laid-out copy "x_t_t" of the model's "x"): user messages say
        # :attr:`display_name`, the model's own name, not the internal one.
        self.origin = origin
        self.dtype = DType(dtype)
        self.shape = tuple(int(d) for d in shape)
        self.const = const
        self.quant = quant
        self.layout = layout
        self.producer: Node | None = None
        self.uses: list[tuple[Node, int]] = []

    @classmethod
    def constant(cls, name: str, array: np.ndarray, *, quant: QuantParams | None = None) -> "Value":
        """A constant value holding ``array`` (its dtype must be one of :class:`DType`)."""
        array = np.asarray(array)
        return cls(name, DType.from_numpy(array.dtype), array.shape, const=array, quant=quant)

    @property
    def display_name(self) -> str:
        """The name to show a user: the model's tensor name (see ``origin``)."""
        return self.origin or self.name

    @property
    def is_constant(self) -> bool:
        return self.const is not None

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the tensor as stored (elements x dtype size)."""
        return self.size * self.dtype.itemsize

    @property
    def users(self) -> list["Node"]:
        """Distinct nodes reading this value, in first-use order."""
        seen: dict[int, Node] = {}
        for node, _ in self.uses:
            seen.setdefault(id(node), node)
        return list(seen.values())

    def type_str(self) -> str:
        """``int8[1,32,32,3]`` style text."""
        return f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"

    def __repr__(self) -> str:
        kind = "const " if self.is_constant else ""
        return f"<Value {kind}{self.name!r} {self.type_str()}>"
