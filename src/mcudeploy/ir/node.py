"""An operation in the IR: op type, attributes, ordered inputs and outputs.

* ``op`` names an entry of the op registry (:mod:`mcudeploy.ir.registry`); its attributes
  are normalised against that entry when the node is created (defaults filled in,
  unknown names refused).
* ``inputs`` may contain ``None`` for an omitted optional input (e.g. a Conv without bias).
* A node owns its outputs: each output's ``producer`` is this node.
* ``name`` is unique within a graph; importers keep the source model's node name when it
  has one, so that messages can point back at the user's model.
"""
from __future__ import annotations

from typing import Any, cast

from .registry import get_op
from .value import Value


class Node:
    __slots__ = ("op", "name", "attrs", "_inputs", "_outputs")

    def __init__(self, op: str, name: str, inputs: list[Value | None], outputs: list[Value],
                 attrs: dict[str, Any] | None = None) -> None:
        self.op = op
        self.name = name
        self.attrs = get_op(op).normalize_attrs(attrs or {}, node_name=name)
        self._inputs: list[Value | None] = []
        self._outputs: list[Value] = []
        for value in inputs:
            self._append_input(value)
        for value in outputs:
            if value.producer is not None:
                raise ValueError(f"value {value.name!r} already produced by "
                                 f"{value.producer.name!r}; cannot also be produced by {name!r}")
            value.producer = self
            self._outputs.append(value)

    # -- inputs -----------------------------------------------------------------------
    @property
    def inputs(self) -> tuple[Value, ...]:
        """The inputs in order. An omitted *optional* input is ``None`` here; the type says
        ``Value`` because an op's required inputs are always present (the verifier checks
        it) and code indexes them by position. Read an optional input with :meth:`input`,
        typed ``Value | None``, so the type checker makes the caller handle its absence."""
        return cast("tuple[Value, ...]", tuple(self._inputs))  # None only at optional positions

    @property
    def outputs(self) -> tuple[Value, ...]:
        return tuple(self._outputs)

    def input(self, index: int) -> Value | None:
        """Input ``index``, or ``None`` when it is omitted or beyond the list."""
        return self._inputs[index] if index < len(self._inputs) else None

    def _append_input(self, value: Value | None) -> None:
        if value is not None:
            value.uses.append((self, len(self._inputs)))
        self._inputs.append(value)

    def set_input(self, index: int, value: Value | None) -> None:
        """Replace input ``index`` (extending with ``None`` if needed), keeping use lists right."""
        while len(self._inputs) <= index:
            self._inputs.append(None)
        old = self._inputs[index]
        if old is not None:
            old.uses.remove((self, index))
        if value is not None:
            value.uses.append((self, index))
        self._inputs[index] = value

    def detach(self) -> None:
        """Drop this node's uses of its inputs and release its outputs (used when removing it)."""
        for index, value in enumerate(self._inputs):
            if value is not None:
                value.uses.remove((self, index))
        self._inputs = []
        for value in self._outputs:
            value.producer = None
        self._outputs = []

    def replace_output(self, index: int, value: Value) -> None:
        """Make this node produce ``value`` as output ``index`` instead of the old value."""
        old = self._outputs[index]
        old.producer = None
        if value.producer is not None and value.producer is not self:
            raise ValueError(f"value {value.name!r} is already produced by {value.producer.name!r}")
        value.producer = self
        self._outputs[index] = value

    def __repr__(self) -> str:
        return f"<Node {self.op} {self.name!r}>"
