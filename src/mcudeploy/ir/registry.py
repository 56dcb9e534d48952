"""The op registry: every op the IR can hold, with its attributes, shape inference,
MACC count and category.

Adding an op touches one place: an ``@op(...)`` registration in a module of
:mod:`mcudeploy.ir.opdefs`. Importers convert source-format ops *to* these ops, the
executors and the C code generator implement them; nothing else defines op semantics.

Input specs are names; a trailing ``?`` marks an optional input (may be ``None`` or
absent) and a trailing ``*`` a variadic tail (one or more). Attributes are declared with
:class:`Attr`; nodes get them normalised (defaults filled in, lists turned into tuples,
unknown or missing ones refused) when they are created.

The MACC convention (documented for users in ``docs/macc.md``) lives in each op's
``macc`` function: multiply-accumulates for conv / matmul, one per output element for
elementwise ops and activations, window size per output for pooling.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Sequence

from ..errors import GraphError, UnsupportedError
from .dtypes import DType

REQUIRED = object()


class TensorType(NamedTuple):
    """What shape inference returns for each output."""
    dtype: DType
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Attr:
    """An attribute declaration.

    ``kind``: ``int``, ``float``, ``str``, ``ints``, ``floats`` (tuples), ``float?``
    (a float or ``None``), ``bool``. ``choices`` restricts ``str`` / ``int`` values.
    """
    kind: str
    default: Any = REQUIRED
    choices: tuple = ()

    def normalize(self, value: Any) -> Any:
        if value is None and self.kind == "float?":
            return None
        converters: dict[str, Callable[[Any], Any]] = {
            "int": int, "float": float, "float?": float, "str": str, "bool": bool,
            "ints": lambda v: tuple(int(x) for x in v),
            "floats": lambda v: tuple(float(x) for x in v),
        }
        value = converters[self.kind](value)
        if self.choices and value not in self.choices:
            raise ValueError(f"must be one of {', '.join(map(str, self.choices))}, got {value!r}")
        return value


InferFn = Callable[[Sequence[Any], dict[str, Any]], list[TensorType]]
MaccFn = Callable[[Any], int]


def no_macc(node: Any) -> int:
    """Data movement (reshape, transpose, concat, ...) counts zero MACC."""
    return 0


@dataclass
class OpDef:
    """The contract of one IR op: category, inputs, attributes, shape inference, MACC count."""
    name: str
    category: str
    inputs: tuple[str, ...]
    attrs: dict[str, Attr]
    infer: InferFn
    macc: MaccFn = no_macc
    doc: str = ""
    outputs: int | None = 1  # None: variable (given by the node, e.g. Split)

    @property
    def min_inputs(self) -> int:
        return sum(1 for spec in self.inputs if not spec.endswith("?"))

    @property
    def max_inputs(self) -> int | None:
        return None if any(s.endswith("*") for s in self.inputs) else len(self.inputs)

    def normalize_attrs(self, attrs: dict[str, Any], node_name: str = "?") -> dict[str, Any]:
        unknown = sorted(set(attrs) - set(self.attrs))
        if unknown:
            raise GraphError(f"node {node_name!r} ({self.name}): unknown attribute(s) "
                             f"{', '.join(unknown)}; {self.name} takes "
                             f"{', '.join(sorted(self.attrs)) or 'none'}")
        result: dict[str, Any] = {}
        for key, spec in self.attrs.items():
            if key in attrs:
                try:
                    result[key] = spec.normalize(attrs[key])
                except (TypeError, ValueError) as err:
                    raise UnsupportedError(f"node {node_name!r} ({self.name}): attribute "
                                           f"{key}={attrs[key]!r} is not supported: {err}") from None
            elif spec.default is REQUIRED:
                raise GraphError(f"node {node_name!r} ({self.name}): missing attribute {key!r}")
            else:
                result[key] = spec.default
        return result


_REGISTRY: dict[str, OpDef] = {}


def op(name: str, category: str, *, inputs: Sequence[str], attrs: dict[str, Attr] | None = None,
       macc: MaccFn = no_macc, outputs: int | None = 1) -> Callable[[InferFn], InferFn]:
    """Register the decorated shape-inference function as op ``name``.

    The function's docstring is the op's semantic contract and is shown by ``ops --doc``.
    """
    def decorate(infer: InferFn) -> InferFn:
        if name in _REGISTRY:
            raise RuntimeError(f"op {name} registered twice")
        _REGISTRY[name] = OpDef(name, category, tuple(inputs), dict(attrs or {}), infer, macc,
                                (infer.__doc__ or "").strip(), outputs)
        return infer
    return decorate


def _load() -> None:
    from . import opdefs  # noqa: F401  (registers every op)


def get_op(name: str) -> OpDef:
    """The definition of op ``name``; raises ``UnsupportedError`` for an unknown op."""
    _load()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnsupportedError(f"op {name!r} is not an IR op; known ops: "
                               f"{', '.join(sorted(_REGISTRY))}") from None


def all_ops() -> dict[str, OpDef]:
    """Every registered op, by name."""
    _load()
    return dict(_REGISTRY)


def infer_types(op_name: str, inputs: Sequence[Any], attrs: dict[str, Any]) -> list[TensorType]:
    """Output types of op ``op_name`` applied to ``inputs`` (Values) with normalised ``attrs``."""
    return get_op(op_name).infer(inputs, attrs)


CATEGORIES = ("conv", "matmul", "elementwise", "activation", "pool", "reduce",
              "normalization", "shape", "resize", "quant")
"""Op categories used by reports and by NPU mapping."""
