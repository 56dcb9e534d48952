"""A stable, readable text dump of a graph (for humans, golden tests and diffs).

Format, one item per line, in graph order::

    graph <name>
      input  <name>: <dtype>[<shape>] <layout> <quant>
      const  <name>: <dtype>[<shape>] <quant>
      <outputs> = <Op> "<node name>"(<inputs>) {attr=value, ...}
      output <name>: <dtype>[<shape>]

Attributes are printed sorted by name, with defaults omitted, so that adding an attribute
with a default does not change existing dumps. Floats print with ``repr``-round-trip
precision. Constants are listed in first-use order.
"""
from __future__ import annotations

from typing import Any

from .graph import Graph
from .registry import REQUIRED, get_op
from .value import Value


def _fmt(value: Any) -> str:
    if isinstance(value, tuple):
        return "[" + ",".join(_fmt(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return value
    return str(value)


def _value_text(value: Value) -> str:
    text = f"{value.name}: {value.type_str()}"
    if value.layout:
        text += f" {value.layout}"
    if value.quant is not None:
        text += f" {{{value.quant.describe()}}}"
    return text


def dump(graph: Graph) -> str:
    """The graph as text (see module docstring)."""
    lines = [f"graph {graph.name}"]
    lines += [f"  input  {_value_text(v)}" for v in graph.inputs]
    lines += [f"  const  {_value_text(v)}" for v in graph.values() if v.is_constant]
    for node in graph.nodes:
        opdef = get_op(node.op)
        shown = {k: v for k, v in sorted(node.attrs.items())
                 if opdef.attrs[k].default is REQUIRED or v != opdef.attrs[k].default}
        attrs = " {" + ", ".join(f"{k}={_fmt(v)}" for k, v in shown.items()) + "}" if shown else ""
        ins = ", ".join("_" if v is None else v.name for v in node.inputs)
        outs = ", ".join(_value_text(v) for v in node.outputs)
        lines.append(f"  {outs} = {node.op} \"{node.name}\"({ins}){attrs}")
    lines += [f"  output {_value_text(v)}" for v in graph.outputs]
    return "\n".join(lines) + "\n"
