"""The generated folder as a CMake package of a user's application: add_subdirectory() and
find_package(network CONFIG) both give mcudeploy::network (library only, with preprocess.c when
[preprocess] generated it); the application built on the host runs the network and the
preprocessing and matches the integer reference and the Python preprocessing."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from conftest import shared_model
from mcudeploy.codegen import ProjectOptions, generate_files, write_project
from mcudeploy.driver import deploy
from mcudeploy.ir import DType
from mcudeploy.options import DeploymentOptions
from mcudeploy.preprocess import parse_preprocess, preprocess_frame
from mcudeploy.preprocess.emit import add_preprocess_files
from mcudeploy.reference.int_executor import run_int

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("cc") is None,
                                reason="cmake / cc missing")

APPLICATION = r"""
#include <stdio.h>
#include "network.h"
#include "preprocess.h"
static uint8_t frame[PREPROCESS_FRAME_BYTES];
static int8_t input[NETWORK_INPUTS_BYTES];
static int8_t output[NETWORK_OUTPUTS_BYTES];
int main(void) {
    const void *inputs[1] = {input};
    void *outputs[1] = {output};
    FILE *file = fopen("frame.bin", "rb");
    if (file == NULL || fread(frame, 1, sizeof frame, file) != sizeof frame) return 2;
    fclose(file);
    preprocess_frame(frame, input);
    if (network_init() != NETWORK_OK || network_run(inputs, outputs) != NETWORK_OK) return 3;
    file = fopen("out.bin", "wb");
    fwrite(input, 1, sizeof input, file);
    fwrite(output, 1, sizeof output, file);
    fclose(file);
    return 0;
}
"""
HOOKS = {"add_subdirectory": "add_subdirectory(${CMAKE_SOURCE_DIR}/../generated mcudeploy_network)",
         "find_package": "set(network_DIR ${CMAKE_SOURCE_DIR}/../generated)\nfind_package(network CONFIG REQUIRED)"}


@pytest.mark.slow
@pytest.mark.parametrize("hook", list(HOOKS))
def test_application_links_the_generated_package(tmp_path, hook):
    deployment = deploy(shared_model("mlperf_tiny/resnet8_int8.tflite"), DeploymentOptions())
    graph = deployment.graph
    value = graph.inputs[0]
    assert value.dtype == DType.INT8 and len(graph.inputs) == 1 and len(graph.outputs) == 1
    height, width = value.shape[1:3]
    spec = parse_preprocess({"format": "rgb888", "width": 2 * width, "height": 2 * height, "resize": "bilinear"})
    files = add_preprocess_files(generate_files(deployment, ProjectOptions()), spec, graph)
    write_project(files, tmp_path / "generated")
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.c").write_text(APPLICATION)
    (app / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.13)\nproject(app C)\n"
                                        f"{HOOKS[hook]}\nadd_executable(app main.c)\n"
                                        "target_link_libraries(app PRIVATE mcudeploy::network)\n")
    for command in (["cmake", "-S", str(app), "-B", str(app / "build")], ["cmake", "--build", str(app / "build")]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    built = sorted(p.name for p in (app / "build").rglob("*") if p.is_file() and p.suffix in ("", ".elf")
                   and p.stat().st_mode & 0o111)
    assert "app" in built and "network_harness" not in built    # the package builds the library only
    frame = np.random.default_rng(3).integers(0, 256, spec.frame_bytes, dtype=np.uint8).tobytes()
    (app / "frame.bin").write_bytes(frame)
    assert subprocess.run([str(app / "build" / "app")], cwd=app, timeout=60).returncode == 0
    result = (app / "out.bin").read_bytes()
    expected_input = preprocess_frame(frame, spec, value)
    assert result[:value.nbytes] == expected_input.tobytes()
    reference = run_int(graph, {value.name: expected_input})
    assert result[value.nbytes:] == np.asarray(reference[graph.outputs[0].name]).tobytes()
