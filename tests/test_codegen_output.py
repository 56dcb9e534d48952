"""Code generator output rules: safe C identifiers, deterministic files, the output folder's
--force rules and manifest, C literals that read back exactly (no compiler needed)."""
from __future__ import annotations

import re
import struct

import numpy as np
import pytest

from codegen_graphs import NASTY_NAMES, nasty_graph, zoo_graph
from mcudeploy.codegen import MANIFEST, ProjectOptions, generate_files, write_project
from mcudeploy.codegen.c_literals import c_float, c_int
from mcudeploy.codegen.identifiers import C_KEYWORDS, IdentifierTable, comment_text, string_literal
from mcudeploy.driver import deploy
from mcudeploy.errors import UnsupportedError, UsageError

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def project(graph, **options):
    return generate_files(deploy(graph), ProjectOptions(**options))


def test_identifiers_are_valid_unique_and_stable():
    names = NASTY_NAMES + ["", "***", "9", "while", "a b", "a_b", "a-b"]
    table = IdentifierTable("node_")
    identifiers = [table[name] for name in names]
    assert all(IDENTIFIER.fullmatch(i) and i not in C_KEYWORDS and "__" not in i for i in identifiers)
    assert len(set(identifiers)) == len(names)                    # clashes ("a b", "a_b") resolved
    assert [table[name] for name in names] == identifiers          # the same name -> the same id
    assert identifiers[names.index("a b")] == "node_a_b" and identifiers[names.index("a_b")] == "node_a_b_2"
    assert max(map(len, identifiers)) <= 60


def test_comment_and_string_text_cannot_escape():
    assert "*/" not in comment_text("x */ int y; /* z\nw") and "\n" not in comment_text("a\nb")
    literal = string_literal('say "hi" \\ ??= é')
    assert literal.startswith('"') and literal.endswith('"')
    assert '\\"' in literal and "\\\\" in literal and "??=" not in literal and "\\303\\251" in literal


def test_c_literals_read_back_exactly():
    assert c_int(-2 ** 31) == "(-2147483647 - 1)" and c_int(5) == "5"
    assert c_int(-2 ** 63, 64) == "(INT64_C(-9223372036854775807) - 1)"
    with pytest.raises(ValueError):
        c_int(2 ** 31)
    for value in (0.1, 1 / 3, 3.0e-12, -7.25, 2.0 ** -140):
        text = c_float(value)
        assert float.fromhex(text[:-1]) == float(np.float32(value)), text
    assert struct.pack("<f", float.fromhex(c_float(0.1)[:-1])) == struct.pack("<f", np.float32(0.1))


def test_hostile_names_only_appear_escaped():
    files = project(nasty_graph())
    network = files["network.c"] + files["network.h"] + files["network_data.c"]
    code = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', network)          # string literals out
    comments = re.findall(r"/\*.*?\*/", code, re.S)
    assert all(comment.count("/*") == 1 for comment in comments)   # no name closes a comment early
    assert "*/" not in re.sub(r"/\*.*?\*/", "", code, flags=re.S)
    assert "??=" not in network                       # no trigraph reaches the compiler
    assert 'in \\"put\\"' in files["network.c"]        # the input's name, escaped in its info


def test_generation_is_deterministic(tmp_path):
    first, second = project(zoo_graph()), project(zoo_graph())
    assert first == second
    write_project(first, tmp_path / "a")
    write_project(second, tmp_path / "b")
    for path in sorted((tmp_path / "a").rglob("*")):
        if path.is_file():
            assert path.read_bytes() == (tmp_path / "b" / path.relative_to(tmp_path / "a")).read_bytes()
    assert "time" not in first["network.c"].lower().replace("runtime", "")


def test_force_rules_and_user_files_kept(tmp_path):
    files = project(nasty_graph())
    without_main = {k: v for k, v in files.items() if k != "main.c"}
    folder = tmp_path / "out"
    write_project(without_main, folder)
    write_project(without_main, folder)                # our own files: regenerating is fine
    (folder / "notes.txt").write_text("mine")
    (folder / "main.c").write_text("user main")        # a user file where we will write
    with pytest.raises(UsageError, match="main.c, notes.txt.*--force"):
        write_project(files, folder)
    (folder / "build").mkdir()
    (folder / "build" / "a.o").write_text("object")    # build output of the generated Makefile
    write_project(files | {"extra.c": "/* ours */\n"}, folder, force=True)
    assert (folder / "notes.txt").read_text() == "mine"
    assert (folder / "main.c.user").read_text() == "user main"
    assert (folder / "main.c").read_text() == files["main.c"]
    write_project(without_main, folder, force=True)    # extra.c and main.c were ours now: removed
    assert not (folder / "extra.c").exists() and not (folder / "main.c").exists()
    assert (folder / "notes.txt").exists() and (folder / "main.c.user").exists()
    assert (folder / "build" / "a.o").exists() and (folder / MANIFEST).exists()


def test_refuses_a_file_as_output_folder(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(UsageError, match="not a folder"):
        write_project({"a.c": ""}, target)


def test_unsupported_op_is_named():
    graph = nasty_graph()
    node = graph.nodes[0]
    node.op = "NotAnOp"
    with pytest.raises(UnsupportedError, match="NotAnOp"):
        from mcudeploy.codegen.kernel_calls import CallContext, emit_call
        emit_call(CallContext(node, None, "node_x", lambda value: "p", "FLASH"))


def test_layout_of_the_project():
    files = project(zoo_graph(), trustzone=True)
    assert {"network.h", "network.c", "network_data.h", "network_data.c", "network_sections.ld", "Makefile",
            "CMakeLists.txt", "main.c", "harness_main.c", "boards/mps2-an386.ld", "boards/mps3-an547.ld",
            "secure/network_secure.c", "network_ns.h", "runtime/include/mcu_runtime.h"} <= set(files)
    assert "runtime/src/transpose_conv.c" in files and "runtime/src/mean.c" in files
    data = files["network_data.c"]
    assert data.count('NETWORK_PLACE(".') == data.count("\nconst ") > 5 and "aligned(16)" in data
    assert "cmse_check_address_range" in files["secure/network_secure.c"]
    assert "DWT_CYCCNT" in files["main.c"] and "EXAMPLE_RUNS 10" in files["main.c"]
