"""Regenerate src/mcudeploy/codegen/abi_structs.py, the struct layouts of the C runtime's
public headers (runtime/include/mcu_runtime*.h), parsed with pycparser, and
src/mcudeploy/kernels/scratch_formulas.py, their scratch-size macros.

    python tools/make_abi_structs.py            (write the file)
    python tools/make_abi_structs.py --check    (exit 1 when the file is stale)

The header is the truth. Every ``typedef struct {...} name;`` (and every ``typedef other
name;`` alias of one) becomes one entry: its fields in declaration order, each with its C
type (``int32_t``, ``float``, ``const int32_t *``, another struct) and array length. The
code generator prints designated initialisers in that order and refuses a struct whose
fields do not match; the ctypes mirror of the bit-exact tests (runtime/tests/mcu_ctypes.py)
is built from the same entries. tests/test_abi_structs.py fails when the file is stale.

Preprocessing is done here, not by a C compiler: comments and preprocessor lines are
dropped, ``#ifdef __cplusplus`` blocks skipped, and the ``<stdint.h>`` names declared as
typedefs first (pycparser needs to know which identifiers are types).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from pycparser import c_ast, c_parser

REPO = Path(__file__).resolve().parents[1]
HEADERS = REPO / "runtime" / "include"
OUTPUT = REPO / "src" / "mcudeploy" / "codegen" / "abi_structs.py"
FORMULAS_OUTPUT = REPO / "src" / "mcudeploy" / "kernels" / "scratch_formulas.py"
PRELUDE = "".join(f"typedef int {name};\n" for name in (
    "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "size_t"))
COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(MCU_[A-Z0-9_]+)\(([^)]*)\)[ \t]*((?:[^\n]*\\\n)*[^\n]*)$",
                   re.MULTILINE)
CONSTANT = re.compile(r"^\s*#\s*define\s+(MCU_[A-Z0-9_]+)\s+(-?\d+)\s*$", re.MULTILINE)


def header_paths(folder: Path = HEADERS) -> list[Path]:
    """The public runtime headers: every ``mcu_runtime*.h`` (a new one is picked up)."""
    return sorted(folder.glob("mcu_runtime*.h"))


def preprocess(text: str) -> str:
    """``text`` without comments, preprocessor lines and ``#ifdef __cplusplus`` blocks."""
    lines: list[str] = []
    stack: list[bool] = []          # per open #if: does it skip (a __cplusplus block)?
    for line in COMMENTS.sub(" ", text).replace("\\\n", " ").splitlines():   # continued lines joined
        stripped = line.strip()
        directive = stripped[1:].split()[0] if stripped.startswith("#") and stripped[1:].split() else ""
        if directive.startswith("if"):
            stack.append("__cplusplus" in stripped)
        elif directive == "endif" and stack:
            stack.pop()
        lines.append("" if stripped.startswith("#") or any(stack) else line)
    return "\n".join(lines)


def _type_text(node: c_ast.Node) -> tuple[str, int]:
    """The C type text of a declaration's type and its array length (0: not an array)."""
    if isinstance(node, c_ast.ArrayDecl):
        inner, _ = _type_text(node.type)
        return inner, int(node.dim.value, 0)
    if isinstance(node, c_ast.PtrDecl):
        inner, _ = _type_text(node.type)
        return f"{inner} *", 0
    if isinstance(node, c_ast.TypeDecl):
        qualifiers = "const " if "const" in node.quals else ""
        return qualifiers + " ".join(node.type.names), 0
    raise ValueError(f"unsupported declaration {type(node).__name__}")


def parse(paths: list[Path]) -> tuple[dict[str, tuple[tuple[str, str, int], ...]], dict[str, str]]:
    """``(structs, aliases)``: struct typedef name -> ((field, C type, array length), ...)
    in declaration order; alias typedef name -> the struct it names."""
    text = PRELUDE + "\n".join(preprocess(path.read_text(encoding="utf-8")) for path in paths)
    unit = c_parser.CParser().parse(text)
    structs: dict[str, tuple[tuple[str, str, int], ...]] = {}
    aliases: dict[str, str] = {}
    for declaration in unit.ext:
        if not isinstance(declaration, c_ast.Typedef) or not isinstance(declaration.type, c_ast.TypeDecl):
            continue
        inner = declaration.type.type
        if isinstance(inner, c_ast.Struct) and inner.decls is not None:
            structs[declaration.name] = tuple((field.name, *_type_text(field.type)) for field in inner.decls)
        elif isinstance(inner, c_ast.IdentifierType) and inner.names[0] in structs:
            aliases[declaration.name] = inner.names[0]
    return structs, aliases


def constants(paths: list[Path]) -> dict[str, int]:
    """The integer ``#define MCU_*`` constants of the headers (pad modes, axis bits)."""
    found: dict[str, int] = {}
    for path in paths:
        text = COMMENTS.sub(" ", path.read_text(encoding="utf-8"))
        found.update((name, int(value)) for name, value in CONSTANT.findall(text))
    return found


def macros(paths: list[Path]) -> dict[str, tuple[tuple[str, ...], str]]:
    """The function-like ``#define MCU_*(...)`` macros: name -> (parameters, expression), the
    expression on one line, comments removed (the scratch-size formulas and their helpers)."""
    found: dict[str, tuple[tuple[str, ...], str]] = {}
    for path in paths:
        text = COMMENTS.sub(" ", path.read_text(encoding="utf-8"))
        for name, parameters, body in MACRO.findall(text):
            expression = " ".join(body.replace("\\\n", " ").split())
            found[name] = (tuple(p.strip() for p in parameters.split(",") if p.strip()), expression)
    return found


def render_formulas(formulas: dict[str, tuple[tuple[str, ...], str]]) -> str:
    """The text of kernels/scratch_formulas.py."""
    lines = ['"""The scratch-size formulas of runtime/include/mcu_runtime*.h (their function-like MCU_*',
             "macros): GENERATED by tools/make_abi_structs.py from the headers; do not edit, regenerate.",
             "Evaluated by :mod:`mcudeploy.kernels.scratch_formula`; the C _scratch_size functions",
             'return the same macros."""',
             "from __future__ import annotations", "",
             "FORMULAS: dict[str, tuple[tuple[str, ...], str]] = {"]
    for name, (parameters, expression) in formulas.items():
        quoted = ", ".join(f'"{p}"' for p in parameters) + ("," if len(parameters) == 1 else "")
        lines += [f'    "{name}": (', f"        ({quoted}),", f'        "{expression}",', "    ),"]
    lines += ["}", ""]
    return "\n".join(lines)


def outputs(folder: Path = HEADERS) -> dict[Path, str]:
    """Each generated file and its text."""
    paths = header_paths(folder)
    return {OUTPUT: render(*parse(paths), constants(paths)), FORMULAS_OUTPUT: render_formulas(macros(paths))}


def render(structs: dict, aliases: dict, defines: dict[str, int]) -> str:
    """The text of abi_structs.py."""
    lines = ['"""The struct layouts of runtime/include/mcu_runtime*.h: GENERATED by',
             "tools/make_abi_structs.py from the headers (the truth); do not edit, regenerate.",
             "",
             "STRUCTS: typedef name -> ((field, C type, array length or 0), ...) in declaration order.",
             "ALIASES: typedef name -> the struct typedef it names.",
             'CONSTANTS: the integer #define MCU_* values."""',
             "from __future__ import annotations", "",
             "STRUCTS: dict[str, tuple[tuple[str, str, int], ...]] = {"]
    for name, fields in structs.items():
        lines.append(f'    "{name}": (')
        lines += [f'        ("{field}", "{ctype}", {length}),' for field, ctype, length in fields]
        lines.append("    ),")
    lines += ["}", "", "ALIASES: dict[str, str] = {"]
    lines += [f'    "{name}": "{target}",' for name, target in aliases.items()]
    lines += ["}", "", "CONSTANTS: dict[str, int] = {"]
    lines += [f'    "{name}": {value},' for name, value in defines.items()]
    lines += ["}", ""]
    return "\n".join(lines)


def generate(folder: Path = HEADERS) -> str:
    return outputs(folder)[OUTPUT]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a checked-in file is stale")
    arguments = parser.parse_args()
    stale = 0
    for path, text in outputs().items():
        name = path.relative_to(REPO)
        if arguments.check:
            stale |= path.read_text(encoding="utf-8") != text
            print(f"{name} is {'STALE: run python tools/make_abi_structs.py' if stale else 'current'}")
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {name}")
    return int(stale)


if __name__ == "__main__":
    sys.exit(main())
