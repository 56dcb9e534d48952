"""Builds of the generated project beyond the harness: the TrustZone secure entry with
-mcmse for Cortex-M33 / M55, the CMake project on the host, `mcudeploy generate` with test
vectors self-checked by main.c under QEMU, and the size goals of every shared int8 model
on Cortex-M4 -Os (runtime code <= 16 KB of flash, RAM beyond the arena <= 1 KB)."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from codegen_graphs import zoo_graph
from conftest import shared_model
from mcudeploy.cli.main import main as cli_main
from mcudeploy.codegen import ProjectOptions, generate_files, write_project
from mcudeploy.codegen.boards import CORE_FLAGS
from mcudeploy.driver import deploy
from mcudeploy.importers import load_model
from mcudeploy.validate.size_report import size_report
from test_codegen_qemu import INT8_MODELS, needs_toolchain

WARNINGS = ["-std=c99", "-Wall", "-Wextra", "-Werror"]


def write(graph, folder, **options):
    write_project(generate_files(deploy(graph), ProjectOptions(**options)), folder)
    return folder


@needs_toolchain
@pytest.mark.parametrize("core", ["cortex-m33", "cortex-m55"])
def test_trustzone_secure_entry_builds_with_cmse(tmp_path, core):
    folder = write(zoo_graph(), tmp_path / "tz", trustzone=True)
    obj = tmp_path / "secure.o"
    subprocess.run(["arm-none-eabi-gcc", *WARNINGS, *CORE_FLAGS[core].split(), "-mcmse", "-Os", f"-I{folder}",
                    f"-I{folder}/runtime/include", "-c", str(folder / "secure/network_secure.c"), "-o", str(obj)],
                   check=True, capture_output=True, text=True)
    symbols = subprocess.run(["arm-none-eabi-nm", str(obj)], capture_output=True, text=True, check=True).stdout
    assert "__acle_se_network_secure_run" in symbols      # a real non-secure-callable entry
    without_cmse = subprocess.run(["arm-none-eabi-gcc", *WARNINGS, *CORE_FLAGS[core].split(), f"-I{folder}",
                                   f"-I{folder}/runtime/include", "-c", str(folder / "secure/network_secure.c"),
                                   "-o", str(obj)], capture_output=True, text=True)
    assert without_cmse.returncode != 0                   # refuses to build without -mcmse


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_cmake_host_build(tmp_path):
    folder = write(load_model(shared_model("tflite_micro/hello_world_int8.tflite")), tmp_path / "project")
    subprocess.run(["cmake", "-S", str(folder), "-B", str(tmp_path / "build")], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(tmp_path / "build")], check=True, capture_output=True)
    assert (tmp_path / "build" / "network_harness").exists()


@pytest.mark.slow
@needs_toolchain
def test_generate_cli_test_vectors_self_check_under_qemu(tmp_path, capsys):
    model = shared_model("mlperf_tiny/dscnn_kws_int8.tflite")
    data = tmp_path / "samples.npz"
    np.savez(data, input_1=np.random.default_rng(3).uniform(-40, 60, (3, 49, 10, 1)).astype(np.float32))
    out = tmp_path / "kws"
    assert cli_main(["generate", str(model), "--target", "stm32f407", "-o", str(out), "--test-vectors", str(data),
                     "--size-report"]) == 0
    printed = capsys.readouterr().out
    assert "3 test vector(s)" in printed and "runtime code" in printed
    assert "SRAM1" in (out / "network_sections.ld").read_text()
    subprocess.run(["make", "-s", "BOARD=mps2-an386"], cwd=out, check=True, capture_output=True)
    run = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-semihosting", "-nographic", "-icount", "shift=0",
                          "-kernel", str(out / "build/mps2-an386/example.elf")], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0 and "test vectors: 3 of 3 match" in run.stdout, run.stdout
    # A wrong expectation must fail the self-check.
    vectors = (out / "test_vectors.c").read_text()
    marker = "const uint8_t test_vector_outputs"
    head, tail = vectors.split(marker)
    first_value = tail.split("/* sample 0 */\n")[1].split(",")[0].strip()
    broken = tail.replace(f"/* sample 0 */\n    {first_value},", f"/* sample 0 */\n    {(int(first_value[:-1]) + 1) % 256}u,", 1)
    (out / "test_vectors.c").write_text(head + marker + broken)
    subprocess.run(["make", "-s", "BOARD=mps2-an386"], cwd=out, check=True, capture_output=True)
    run = subprocess.run(["qemu-system-arm", "-M", "mps2-an386", "-semihosting", "-nographic", "-icount", "shift=0",
                          "-kernel", str(out / "build/mps2-an386/example.elf")], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 1 and "2 of 3 match" in run.stdout


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("model", INT8_MODELS)
def test_size_goals_cortex_m4(tmp_path, model):
    graph = load_model(shared_model(model))
    report = size_report(write(graph, tmp_path / "project"), "cortex-m4")
    assert report.runtime_code_bytes <= 16 * 1024, report
    assert report.ram_beyond_arena <= 1024, report
    assert report.arena_bytes >= max(v.nbytes for v in graph.inputs)
    assert report.total("flash") - report.runtime_code_bytes >= sum(
        v.nbytes for v in graph.constants() if v.users)                 # every weight is in flash
