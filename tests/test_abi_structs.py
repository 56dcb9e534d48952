"""The C ABI has one source, the runtime header: src/mcudeploy/codegen/abi_structs.py is its
parsed form (tools/make_abi_structs.py), the generated C and the ctypes mirror are derived
from it. Checked here:

* the checked-in description (structs, scratch formulas) is the header's (stale -> fail);
* the ctypes mirror has the size and every field offset host gcc computes from the header
  (offsetof), for every struct, so the description cannot drift from what C compiles;
* mutation: for every struct, a copy of the header with two fields swapped gives a
  description whose ctypes layout no longer matches the compiled header, and, for every
  struct the zoo's generated C uses, generated C that differs from the golden files;
* the kernel table's structs name exactly the header's fields (a missing or unknown one
  is refused).
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from ctypes import sizeof
from pathlib import Path

import pytest

from conftest import REPO
from mcudeploy.codegen import abi, abi_structs

sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "runtime" / "tests"))
from mcu_ctypes import derive  # noqa: E402

import make_abi_structs  # noqa: E402

HEADERS = REPO / "runtime" / "include"
GOLDEN = REPO / "tests" / "golden" / "zoo_c"
SWAPPABLE = sorted(name for name, fields in abi_structs.STRUCTS.items() if len(fields) >= 2)


@pytest.mark.parametrize("path", list(make_abi_structs.outputs()), ids=lambda path: path.name)
def test_checked_in_description_is_the_headers(path):
    assert make_abi_structs.outputs()[path] == path.read_text(encoding="utf-8"), (
        f"{path.relative_to(REPO)} is stale: run python tools/make_abi_structs.py and commit it")


def test_every_header_struct_is_described():
    text = "\n".join(make_abi_structs.COMMENTS.sub(" ", path.read_text(encoding="utf-8"))
                     for path in make_abi_structs.header_paths())
    declared = set(re.findall(r"typedef struct\s*\{[^{}]*\}\s*(mcu_\w+)\s*;", text))
    assert declared and declared == set(abi_structs.STRUCTS)


# -- the layout host gcc computes from the header ----------------------------------------------
def _layout_program(structs: dict) -> str:
    includes = "".join(f'#include "{path.name}"\n' for path in make_abi_structs.header_paths())
    lines = [f'    printf("{name} %zu\\n", sizeof({name}));' for name in structs]
    lines += [f'    printf("{name}.{field} %zu\\n", offsetof({name}, {field}));'
              for name, fields in structs.items() for field, _, _ in fields]
    return f"#include <stddef.h>\n#include <stdio.h>\n{includes}int main(void) {{\n" + "\n".join(lines) + \
        "\n    return 0;\n}\n"


@pytest.fixture(scope="module")
def c_layout(tmp_path_factory) -> dict[str, int]:
    """``{"struct": sizeof, "struct.field": offsetof}`` as host gcc compiles the real header."""
    if shutil.which("gcc") is None:
        pytest.skip("host gcc not found")
    folder = tmp_path_factory.mktemp("layout")
    (folder / "layout.c").write_text(_layout_program(abi_structs.STRUCTS), encoding="utf-8")
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Werror", f"-I{HEADERS}", str(folder / "layout.c"), "-o",
                    str(folder / "layout")], check=True, capture_output=True, text=True)
    output = subprocess.run([str(folder / "layout")], check=True, capture_output=True, text=True).stdout
    return {key: int(value) for key, value in (line.split() for line in output.splitlines())}


def ctypes_layout(structs: dict, aliases: dict) -> dict[str, int]:
    """The same keys from the ctypes mirror derived from a description."""
    types = derive(structs, aliases)
    layout = {name: sizeof(types[name]) for name in structs}
    for name, fields in structs.items():
        layout.update({f"{name}.{field}": getattr(types[name], field).offset for field, _, _ in fields})
    return layout


def mismatches(structs: dict, c_layout: dict[str, int]) -> set[str]:
    """The structs whose ctypes layout (from ``structs``) differs from the compiled header."""
    derived = ctypes_layout(structs, abi_structs.ALIASES)
    return {key.split(".")[0] for key in c_layout if derived.get(key) != c_layout[key]}


def test_ctypes_mirror_has_the_compiled_layout(c_layout):
    assert len(c_layout) == len(abi_structs.STRUCTS) + sum(map(len, abi_structs.STRUCTS.values()))
    assert mismatches(abi_structs.STRUCTS, c_layout) == set()


# -- mutation: two fields swapped in a copy of the header ---------------------------------------
def _declaration(field: str, ctype: str, length: int) -> str:
    star = ctype.endswith("*")
    base = ctype.rstrip(" *")
    return f"    {base} {'*' if star else ''}{field}{f'[{length}]' if length else ''};"


def swapped_header_copy(folder: Path, name: str, first: int = 0, second: int = 1) -> Path:
    """A copy of the headers in which struct ``name`` declares fields ``first`` and ``second``
    in swapped order (one declaration per line); returns the copy's folder."""
    fields = list(abi_structs.STRUCTS[name])
    fields[first], fields[second] = fields[second], fields[first]
    body = "\n".join(_declaration(*field) for field in fields)
    pattern = re.compile(r"typedef struct\s*\{[^{}]*\}\s*" + name + r"\s*;")
    for path in make_abi_structs.header_paths():
        text = path.read_text(encoding="utf-8")
        text, count = pattern.subn(f"typedef struct {{\n{body}\n}} {name};", text)
        (folder / path.name).write_text(text, encoding="utf-8")
    return folder


def parsed(folder: Path) -> dict:
    return make_abi_structs.parse(make_abi_structs.header_paths(folder))[0]


@pytest.fixture(scope="module")
def mutated(tmp_path_factory):
    """struct name -> the description parsed from a header copy with its first two fields
    swapped (each parsed once, for both mutation tests)."""
    cache: dict[str, dict] = {}

    def description(name: str) -> dict:
        if name not in cache:
            cache[name] = parsed(swapped_header_copy(tmp_path_factory.mktemp(name), name))
        return cache[name]
    return description


def test_swap_tool_changes_exactly_one_struct(tmp_path):
    structs = parsed(swapped_header_copy(tmp_path, "mcu_conv_params", 2, 3))
    changed = {name for name in structs if structs[name] != abi_structs.STRUCTS[name]}
    assert changed == {"mcu_conv_params"}
    assert [f for f, _, _ in structs["mcu_conv_params"]][2:4] == ["pad_left", "pad_top"]


@pytest.mark.slow
@pytest.mark.parametrize("name", SWAPPABLE)
def test_swapped_fields_break_the_ctypes_layout(mutated, c_layout, name):
    assert name in mismatches(mutated(name), c_layout)


@pytest.fixture(scope="module")
def zoo_deployment():
    sys.path.insert(0, str(REPO / "tests"))
    from codegen_graphs import zoo_graph
    from mcudeploy.driver import deploy
    return deploy(zoo_graph())


def _zoo_network_c(deployment) -> str:
    from mcudeploy.codegen import ProjectOptions, generate_files
    return generate_files(deployment, ProjectOptions())["network.c"]


def golden_structs() -> list[str]:
    """The structs the golden network.c declares, and the structs nested in them."""
    text = (GOLDEN / "network.c").read_text(encoding="utf-8")
    used = {name for name in abi_structs.STRUCTS if re.search(rf"\b{name}\b", text)}
    used |= {ctype for name in used for _, ctype, _ in abi_structs.STRUCTS[name] if ctype in abi_structs.STRUCTS}
    return sorted(used & set(SWAPPABLE))


def test_golden_code_covers_the_main_structs():
    assert {"mcu_conv_params", "mcu_depthwise_params", "mcu_pool_params", "mcu_activation", "mcu_dims",
            "mcu_channel_quant", "mcu_add_quant", "mcu_concat_quant"} <= set(golden_structs())


@pytest.mark.slow
@pytest.mark.parametrize("name", golden_structs())
def test_swapped_fields_change_the_golden_code(mutated, monkeypatch, zoo_deployment, name):
    golden = (GOLDEN / "network.c").read_text(encoding="utf-8")
    assert _zoo_network_c(zoo_deployment) == golden
    monkeypatch.setattr(abi, "STRUCTS", mutated(name))
    assert _zoo_network_c(zoo_deployment) != golden


# -- the kernel table names exactly the header's fields ----------------------------------------
def test_a_missing_or_unknown_field_is_refused():
    activation = abi.struct("mcu_activation", min=-128, max=127)
    assert abi.c_initializer(activation) == "{.min = -128, .max = 127}"
    with pytest.raises(abi.AbiMismatch, match="missing"):
        abi.c_initializer(abi.struct("mcu_activation", min=-128))
    with pytest.raises(abi.AbiMismatch, match="unknown"):
        abi.c_initializer(abi.struct("mcu_activation", min=-128, max=127, maximum=3))
    with pytest.raises(abi.AbiMismatch, match="not declared"):
        abi.c_initializer(abi.struct("mcu_no_such_params", axis=1))
