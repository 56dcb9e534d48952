"""TrustZone end to end: ``generate --trustzone`` writes a secure image (network, weights, arena,
the entry that checks every pointer with ``cmse_check_address_range``, start-up code that sets
the SAU and starts the non-secure world) and a non-secure harness linked with the secure
gateway veneers; both run under QEMU ``mps3-an547``. The non-secure call must give the integer
reference's outputs byte for byte (``run_int``), and calls with pointers into secure memory
must be refused with the entry's error code."""
from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from codegen_graphs import zoo_graph
from conftest import shared_model
from mcudeploy.codegen import ProjectOptions, generate_files, write_project
from mcudeploy.codegen.trustzone import AN547_LAYOUT, SECURE_ALIAS_OFFSET
from mcudeploy.driver import deploy
from mcudeploy.errors import UsageError
from mcudeploy.importers import load_model
from mcudeploy.reference.int_executor import run_int
from mcudeploy.validate.c_runner import CodegenRunError, read_outputs
from mcudeploy.validate.trustzone import EXPECTED_CHECKS, _parse, build_trustzone, check_trustzone, run_images
from test_codegen_host import random_feeds
from test_codegen_qemu import needs_toolchain

BOARD = AN547_LAYOUT.board


def tz_files(graph):
    return generate_files(deploy(graph), ProjectOptions(trustzone=True))


def test_trustzone_project_layout_and_memory_map():
    files = tz_files(zoo_graph())
    for name in ("secure/network_secure.c", "network_ns.h", f"boards/{BOARD}-secure.ld", f"boards/{BOARD}-ns.ld",
                 "boards/startup_secure.c", "nonsecure/harness_ns.c"):
        assert name in files
    secure_ld, ns_ld, startup = files[f"boards/{BOARD}-secure.ld"], files[f"boards/{BOARD}-ns.ld"], \
        files["boards/startup_secure.c"]
    # the secure image at secure aliases (bit 28 set), the non-secure one below them
    for window in (AN547_LAYOUT.secure_vectors, AN547_LAYOUT.secure_code, AN547_LAYOUT.veneers,
                   AN547_LAYOUT.secure_ram):
        assert window.base & SECURE_ALIAS_OFFSET and f"ORIGIN = 0x{window.base:08X}" in secure_ld
    for window in (AN547_LAYOUT.nonsecure_code, AN547_LAYOUT.nonsecure_ram):
        assert not window.base & SECURE_ALIAS_OFFSET and f"ORIGIN = 0x{window.base:08X}" in ns_ld
    assert ".gnu.sgstubs" in secure_ld and f"mcu_ns_vectors = 0x{AN547_LAYOUT.nonsecure_code.base:08X};" in secure_ld
    # three SAU regions, the veneers' non-secure callable; NSCCFG.CODENSC set
    regions = re.findall(r"mcu_sau_region\((\d)u, (0x[0-9A-F]+)u, (0x[0-9A-F]+)u, (\d)u\)", startup)
    assert [(int(n), int(b, 16), int(lim, 16), int(c)) for n, b, lim, c in regions] == [
        (0, 0x0004_0000, 0x0007_FFFF, 0), (1, 0x111F_F000, 0x111F_FFFF, 1), (2, 0x2000_0000, 0x2007_FFFF, 0)]
    assert "SECURITY_NSCCFG |= 1u" in startup and "cmse_nonsecure_call" in startup
    # the windows do not overlap in physical memory (aliases folded)
    physical = sorted((w.base & ~SECURE_ALIAS_OFFSET, w.limit & ~SECURE_ALIAS_OFFSET) for w in (
        AN547_LAYOUT.secure_vectors, AN547_LAYOUT.secure_code, AN547_LAYOUT.veneers, AN547_LAYOUT.secure_ram,
        AN547_LAYOUT.nonsecure_code, AN547_LAYOUT.nonsecure_ram))
    assert all(first[1] < second[0] for first, second in zip(physical, physical[1:]))
    # the harness's probes are the ones the runner expects
    assert set(re.findall(r'harness_check\("(\w+)"', files["nonsecure/harness_ns.c"])) == set(EXPECTED_CHECKS)
    assert "TRUSTZONE=1" in files["Makefile"] and "--out-implib=$(BUILD)/veneers.o" in files["Makefile"]


def test_no_trustzone_files_without_the_option():
    files = generate_files(deploy(zoo_graph()), ProjectOptions())
    assert not any(name.startswith(("secure/", "nonsecure/")) or "secure" in name for name in files)
    assert "TRUSTZONE" not in files["Makefile"]


def test_io_too_large_for_the_nonsecure_window_is_refused():
    from mcudeploy.codegen.trustzone import render_trustzone
    graph = zoo_graph()
    small = AN547_LAYOUT.__class__(**{**AN547_LAYOUT.__dict__, "nonsecure_ram": AN547_LAYOUT.nonsecure_ram.__class__(
        "NS_RAM", 0x2000_0000, 0x8000 + 16 * 1024 + 8, "DTCM")})
    with pytest.raises(UsageError, match="non-secure RAM window"):
        render_trustzone(graph, "zoo", small)


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("model", ["zoo", "mlperf_tiny/resnet8_int8.tflite"])
def test_nonsecure_call_is_bit_exact_and_secure_pointers_are_refused(model, tmp_path):
    graph = zoo_graph() if model == "zoo" else load_model(shared_model(model))
    deployment = deploy(graph)
    feeds = random_feeds(deployment.graph, 2, seed=7)
    check = check_trustzone(deployment, feeds, keep=tmp_path)
    assert check.passed, check.describe()
    assert check.code.bit_exact and check.code.samples == 2
    assert check.checks == EXPECTED_CHECKS              # every bad pointer refused with -2, size -3, valid 0
    assert check.sau_ctrl_seen == 0                     # the harness ran non-secure
    assert len(check.code.instructions) == 2 and min(check.code.instructions) > 1000
    # independent of the runner's comparison: the bytes the harness wrote against run_int
    written = read_outputs(deployment.graph, tmp_path / "outputs.bin", 2)
    reference = run_int(deployment.graph, feeds, batch=True)
    for value in deployment.graph.outputs:
        np.testing.assert_array_equal(written[value.name], np.asarray(reference[value.name]))


@needs_toolchain
def test_secure_image_alone_says_no_nonsecure_image(tmp_path):
    project = tmp_path / "project"
    write_project(tz_files(zoo_graph()), project)
    build = build_trustzone(project)
    symbols = subprocess.run(["arm-none-eabi-nm", str(build / "veneers.o")], capture_output=True, text=True,
                             check=True).stdout
    assert re.search(r"^111ff000 A network_secure_run$", symbols, re.M)   # the veneer, in the NSC window
    console = run_images(build, tmp_path, 1, nonsecure=False)
    assert "mcu_secure_error no non-secure image at 0x00040000" in console
    with pytest.raises(CodegenRunError, match="stopped: mcu_secure_error no non-secure image"):
        _parse(console, 1)


@needs_toolchain
def test_a_veneer_outside_the_nsc_region_faults(tmp_path):
    """Negative control: without NSCCFG.CODENSC the SAU's NSC region is not NSC (the IDAU wins),
    so the non-secure call faults; the runner reports the secure fault handler's line."""
    project = tmp_path / "project"
    files = tz_files(zoo_graph())
    files["boards/startup_secure.c"] = files["boards/startup_secure.c"].replace("SECURITY_NSCCFG |= 1u;", "")
    write_project(files, project)
    build = build_trustzone(project)
    console = run_images(build, tmp_path, 1)
    assert re.search(r"^mcu_fault exception 0x00000007 sfsr 0x00000001", console, re.M)   # SecureFault, INVEP
