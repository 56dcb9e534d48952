"""Write src/mcudeploy/importers/tflite/schema_tables.py from the installed ``tflite``
schema package.

    python tools/make_tflite_schema_tables.py [--check]

The importer reads TFLite flatbuffers through these tables instead of the ``tflite`` package,
whose ``__init__`` imports its ~200 generated modules (tens of milliseconds of every
``mcudeploy plan``). For every table the reader touches, and every builtin options table, a
field is ``(snake_name, vtable_offset, kind, struct_format, default)``, read from the
generated accessor's source (``self._tab.Offset(N)``, ``number_types.XFlags``, its ``return``
default). ``kind``: ``scalar`` / ``bool`` / ``vector`` (a numeric vector, ``XAsNumpy``) /
``string`` / ``table`` / ``tables`` (vector of tables) / ``union``. The enums the importer
names (TensorType, Padding, ActivationFunctionType, MirrorPadMode), the builtin operator
names and the BuiltinOptions union codes come along. ``--check`` exits 1 when the file
differs from what the installed package gives (tests/test_tflite_schema_tables.py runs it).
"""
from __future__ import annotations

import argparse
import ast
import inspect
import re
import sys
from pathlib import Path

import tflite
from tflite.utils import BUILTIN_OPCODE2NAME

OUTPUT = Path(__file__).resolve().parents[1] / "src/mcudeploy/importers/tflite/schema_tables.py"
TABLES = ["Model", "OperatorCode", "SubGraph", "Tensor", "QuantizationParameters", "Operator", "Buffer"]
ENUMS = ["TensorType", "Padding", "ActivationFunctionType", "MirrorPadMode"]
FORMATS = {"Bool": "?", "Int8": "b", "Uint8": "B", "Int16": "h", "Uint16": "H", "Int32": "i",
           "Uint32": "I", "Int64": "q", "Uint64": "Q", "Float32": "f", "Float64": "d"}
SKIPPED = ("Init", "GetRootAs")


def snake(name: str) -> str:
    """``DilationHFactor`` -> ``dilation_h_factor`` (the schema's field name)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _calls(function: ast.FunctionDef) -> dict[str, list[ast.Call]]:
    """``self._tab.X(...)`` calls of an accessor, by X."""
    found: dict[str, list[ast.Call]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value
            if isinstance(target, ast.Attribute) and target.attr == "_tab":
                found.setdefault(node.func.attr, []).append(node)
    return found


def _format(call: ast.Call) -> str:
    flags = call.args[0]
    assert isinstance(flags, ast.Attribute) and flags.attr.endswith("Flags"), ast.dump(call)
    return FORMATS[flags.attr[:-len("Flags")]]


def _default(function: ast.FunctionDef):
    last = function.body[-1]
    if isinstance(last, ast.Return) and last.value is not None:
        try:
            return ast.literal_eval(last.value)
        except ValueError:   # OperatorCode.BuiltinCode: computed (see the reader)
            return None
    return None


def _field(function: ast.FunctionDef, method_names: set[str]) -> tuple | None:
    """The field an accessor reads, or None for a helper (Length, IsNone, AsNumpy, ...)."""
    name = function.name
    parameters = [a.arg for a in function.args.args]
    calls = _calls(function)
    if "Offset" not in calls or name.endswith(("Length", "IsNone", "AsNumpy")):
        return None
    offset = calls["Offset"][0].args[0]
    assert isinstance(offset, ast.Constant), ast.dump(offset)
    slot = offset.value
    if parameters == ["self", "j"]:
        if name + "AsNumpy" in method_names:
            numpy_call = calls.get("GetVectorAsNumpy")
            element = calls["Get"][0] if "Get" in calls else None
            return (snake(name), slot, "vector", _format(element if element is not None else numpy_call[0]), None)
        return (snake(name), slot, "tables", "", None) if "Indirect" in calls else None
    if parameters == ["self", "table"] or "Union" in calls:
        return (snake(name), slot, "union", "", None)
    if parameters != ["self"]:
        return None
    if "String" in calls:
        return (snake(name), slot, "string", "", None)
    if "Indirect" in calls:
        return (snake(name), slot, "table", "", None)
    if "Get" in calls:
        source = ast.unparse(function)
        kind = "bool" if "return bool(" in source else "scalar"
        return (snake(name), slot, kind, _format(calls["Get"][0]), _default(function))
    return None


def table_fields(class_name: str) -> tuple[tuple, ...]:
    """Every field of generated table ``class_name``, in the generated class's order."""
    module = __import__(f"tflite.{class_name}", fromlist=[class_name])
    tree = ast.parse(inspect.getsource(module))
    class_node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    methods = [n for n in class_node.body if isinstance(n, ast.FunctionDef) and not n.name.startswith(SKIPPED)
               and not n.name.endswith("BufferHasIdentifier")]
    names = {m.name for m in methods}
    return tuple(field for m in methods if (field := _field(m, names)) is not None)


def enum_members(name: str) -> dict[str, int]:
    enum = getattr(__import__(f"tflite.{name}", fromlist=[name]), name)
    return {key: value for key, value in vars(enum).items() if not key.startswith("_")}


def render() -> str:
    options = {code: name for name, code in vars(tflite.BuiltinOptions).items()
               if not name.startswith("_") and isinstance(getattr(tflite, name, None), type)}
    lines = ['"""TFLite schema tables for the flatbuffer reader (:mod:`.reader`), generated from the',
             f"``tflite`` {getattr(tflite, '__version__', '')} schema package by tools/make_tflite_schema_tables.py:",
             "do not edit. A field is ``(snake_name, vtable_offset, kind, struct_format, default)``.",
             '"""', "# ruff: noqa: E501", "from __future__ import annotations"]
    for name in ENUMS:
        lines.append(f"\n\nclass {name}:")
        lines.extend(f"    {key} = {value}" for key, value in enum_members(name).items())
    lines.append("\n\nBUILTIN_OPERATORS: dict[int, str] = {")
    lines.extend(f"    {code}: {name!r}," for code, name in sorted(BUILTIN_OPCODE2NAME.items()))
    lines.append("}\n\nTABLES: dict[str, tuple[tuple, ...]] = {")
    for name in TABLES:
        lines.append(f"    {name!r}: {table_fields(name)!r},")
    lines.append("}\n\n# BuiltinOptions union code -> (options table name, its fields)")
    lines.append("OPTIONS: dict[int, tuple[str, tuple[tuple, ...]]] = {")
    for code, name in sorted(options.items()):
        lines.append(f"    {code}: ({name!r}, {table_fields(name)!r}),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare with the file")
    args = parser.parse_args()
    text = render()
    if args.check:
        same = OUTPUT.exists() and OUTPUT.read_text() == text
        print(f"{OUTPUT}: {'up to date' if same else 'differs from the installed tflite package'}")
        return 0 if same else 1
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
