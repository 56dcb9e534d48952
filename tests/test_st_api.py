"""``generate --api st-ai|legacy``: ST's client APIs over mcudeploy's network.

The applications of ``examples/st_ai_app`` and ``examples/legacy_app`` (written the way ST's
documentation shows a client of each API) are built unchanged against the generated
folder with their own Makefile, run on the host (gcc) and under QEMU Cortex-M4
(``mps2-an386``) and Cortex-M55 (``mps3-an547``), and every output byte they print must
equal the integer reference executor's (``run_int``, itself bit-exact with TFLite Micro).
The descriptors (shapes, formats, scale, zero point, sizes) are checked against the graph,
misuse of each API against the status it must return, and bad options against one line.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_model
from mcudeploy import codegen
from mcudeploy.codegen import ProjectOptions, generate_files, write_project
from mcudeploy.codegen.client_api import _tensor
from mcudeploy.driver import deploy
from mcudeploy.errors import UnsupportedError, UsageError
from mcudeploy.importers import load_model
from mcudeploy.ir import DType, Graph, QuantParams
from mcudeploy.options import DeploymentOptions
from mcudeploy.reference.int_executor import run_int
from test_codegen_host import random_feeds

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = {"st-ai": REPO / "examples" / "st_ai_app", "legacy": REPO / "examples" / "legacy_app"}
SHARED_MODELS = ["mlperf_tiny/resnet8_int8.tflite", "mlperf_tiny/dscnn_kws_int8.tflite",
                 "mlperf_tiny/fc_autoencoder_int8.tflite"]
BOARDS = ("mps2-an386", "mps3-an547")
QEMU_TIMEOUT = 300
HAVE_GCC = shutil.which("gcc") is not None and shutil.which("make") is not None
HAVE_ARM = all(shutil.which(tool) for tool in ("arm-none-eabi-gcc", "qemu-system-arm", "make"))
OUTPUT_LINE = re.compile(r"^output (\d+) (\d+) ([0-9a-f]*)$", re.MULTILINE)


def generate(model: str, api: str, folder: Path, samples: int = 2, target: str | None = None, **options):
    """The project of ``model`` (on ``target``) with ``api`` and ``samples`` random test vectors
    in ``folder``; returns the deployment and the reference outputs (run_int) by output name."""
    deployment = deploy(load_model(shared_model(model)), DeploymentOptions(target=target))
    graph = deployment.graph
    feeds = random_feeds(graph, samples, seed=len(model))
    expected = run_int(graph, feeds, batch=True)
    vectors = codegen.TestVectors(feeds, expected, "random")
    write_project(generate_files(deployment, ProjectOptions(test_vectors=vectors, api=api, **options)), folder)
    return deployment, expected


def build(api: str, network: Path, board: str, build: Path) -> Path:
    subprocess.run(["make", "-s", "-C", str(EXAMPLES[api]), f"NETWORK_DIR={network}", f"BOARD={board}",
                    f"BUILD={build}"], check=True, capture_output=True, text=True, timeout=600)
    return build / ("app" if board == "host" else "app.elf")


def run(program: Path, board: str) -> str:
    command = ([str(program)] if board == "host" else
               ["qemu-system-arm", "-M", board, "-semihosting", "-nographic", "-icount", "shift=0",
                "-kernel", str(program)])
    result = subprocess.run(command, capture_output=True, text=True, timeout=QEMU_TIMEOUT)
    assert result.returncode == 0, f"{program} on {board}: exit {result.returncode}\n{result.stdout[-2000:]}"
    return result.stdout


def assert_bit_exact(stdout: str, deployment, expected: dict[str, np.ndarray]) -> None:
    outputs = deployment.graph.outputs
    printed = {(int(s), int(i)): bytes.fromhex(text) for s, i, text in OUTPUT_LINE.findall(stdout)}
    count = len(next(iter(expected.values())))
    assert sorted(printed) == [(s, i) for s in range(count) for i in range(len(outputs))]
    for (sample, index), data in printed.items():
        value = outputs[index]
        reference = np.ascontiguousarray(expected[value.name][sample], dtype=value.dtype.numpy).tobytes()
        assert data == reference, f"sample {sample} output {value.name!r} differs from run_int"
    assert f"{count} sample(s), 0 mismatch(es)" in stdout


# ---- host: build + run both example applications, bit-exact (fast) ----

@pytest.mark.skipif(not HAVE_GCC, reason="gcc / make missing")
@pytest.mark.parametrize("api", ["st-ai", "legacy"])
def test_example_application_on_host_is_bit_exact(api, tmp_path):
    deployment, expected = generate("mlperf_tiny/fc_autoencoder_int8.tflite", api, tmp_path / "network")
    stdout = run(build(api, tmp_path / "network", "host", tmp_path / "build"), "host")
    assert_bit_exact(stdout, deployment, expected)
    assert "264192 MACC" in stdout               # the report: MACC from the graph


# ---- QEMU M4 and M55: three shared models, both APIs (slow) ----

@pytest.mark.slow
@pytest.mark.skipif(not HAVE_ARM, reason="arm-none-eabi-gcc / qemu-system-arm missing: tools/install_toolchain.sh")
@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("api", ["st-ai", "legacy"])
@pytest.mark.parametrize("model", SHARED_MODELS)
def test_example_application_on_qemu_is_bit_exact(model, api, board, tmp_path):
    """Deployed for the board's own target, so that the kernels are its core's (DSP on the
    M4, MVE on the M55), as ``validate --on qemu-*`` builds them; one build per core."""
    deployment, expected = generate(model, api, tmp_path / "network", target=board)
    program = build(api, tmp_path / "network", board, tmp_path / "build")
    assert_bit_exact(run(program, board), deployment, expected)


# ---- every kernel family through the st-ai layer, any I/O count (host, ASan + UBSan) ----

ST_AI_GENERIC = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "network.h"
#include "mcudeploy/test_vectors.h"
STAI_NETWORK_CONTEXT_DECLARE(context, STAI_NETWORK_CONTEXT_SIZE)
STAI_ALIGNED(64) static uint8_t pool[1 << 20];
static size_t used;
static void *take(stai_size bytes) {   /* sizes from the descriptors, 64-byte aligned, from one pool */
    void *buffer = pool + used;
    used += (size_t)(bytes + 63) / 64 * 64;
    if (used > sizeof pool) exit(3);
    return buffer;
}
int main(void) {
    stai_network_info info;
    stai_ptr acts[STAI_NETWORK_ACTIVATIONS_NUM], ins[STAI_NETWORK_IN_NUM], outs[STAI_NETWORK_OUT_NUM];
    stai_size i;
    int sample, byte;
    if (stai_runtime_init() || stai_network_init(context) || stai_network_get_info(context, &info)) return 2;
    for (i = 0; i < info.n_activations; ++i) acts[i] = take(info.activations[i].size_bytes);
    for (i = 0; i < info.n_inputs; ++i) ins[i] = take(info.inputs[i].size_bytes);
    for (i = 0; i < info.n_outputs; ++i) outs[i] = take(info.outputs[i].size_bytes);
    if (stai_network_set_activations(context, acts, info.n_activations) ||
        stai_network_set_inputs(context, ins, info.n_inputs) ||
        stai_network_set_outputs(context, outs, info.n_outputs)) return 2;
    for (sample = 0; sample < TEST_VECTOR_COUNT; ++sample) {
        const uint8_t *next = test_vector_inputs[sample];
        for (i = 0; i < info.n_inputs; ++i) {
            memcpy(ins[i], next, (size_t)info.inputs[i].size_bytes);
            next += info.inputs[i].size_bytes;
        }
        if (stai_network_run(context, STAI_MODE_SYNC)) return 2;
        for (i = 0; i < info.n_outputs; ++i) {
            printf("output %d %d ", sample, (int)i);
            for (byte = 0; byte < info.outputs[i].size_bytes; ++byte) printf("%02x", ((uint8_t *)outs[i])[byte]);
            printf("\n");
        }
    }
    printf("%d sample(s), 0 mismatch(es)\n", TEST_VECTOR_COUNT);   /* the test compares every byte */
    return stai_network_deinit(context) || stai_runtime_deinit();
}
"""


LEGACY_GENERIC = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "network.h"
#include "network_data.h"
#include "mcudeploy/test_vectors.h"
AI_ALIGNED(64) static ai_u8 pool[1 << 20];
static size_t used;
static void *take(size_t bytes) {   /* 64-byte aligned, from one pool */
    void *buffer = pool + used;
    used += (bytes + 63) / 64 * 64;
    if (used > sizeof pool) exit(3);
    return buffer;
}
int main(void) {
    static const ai_size sizes[AI_NETWORK_DATA_ACTIVATIONS_COUNT] = AI_NETWORK_DATA_ACTIVATIONS_SIZES;
    ai_handle acts[AI_NETWORK_DATA_ACTIVATIONS_COUNT], network = AI_HANDLE_NULL;
    ai_buffer *in, *out;
    ai_u16 n_in, n_out, i;
    int sample, byte;
    for (i = 0; i < AI_NETWORK_DATA_ACTIVATIONS_COUNT; ++i) acts[i] = take(sizes[i]);
    if (ai_network_create_and_init(&network, acts, NULL).type != AI_ERROR_NONE) return 2;
    in = ai_network_inputs_get(network, &n_in);
    out = ai_network_outputs_get(network, &n_out);
    for (i = 0; i < n_in; ++i) in[i].data = take(AI_BUFFER_BYTE_SIZE(in[i].size, in[i].format));
    for (i = 0; i < n_out; ++i) out[i].data = take(AI_BUFFER_BYTE_SIZE(out[i].size, out[i].format));
    for (sample = 0; sample < TEST_VECTOR_COUNT; ++sample) {
        const uint8_t *next = test_vector_inputs[sample];
        for (i = 0; i < n_in; ++i) {
            memcpy(in[i].data, next, AI_BUFFER_BYTE_SIZE(in[i].size, in[i].format));
            next += AI_BUFFER_BYTE_SIZE(in[i].size, in[i].format);
        }
        if (ai_network_run(network, in, out) != 1) return 2;
        for (i = 0; i < n_out; ++i) {
            printf("output %d %d ", sample, (int)i);
            for (byte = 0; byte < (int)AI_BUFFER_BYTE_SIZE(out[i].size, out[i].format); ++byte)
                printf("%02x", ((ai_u8 *)out[i].data)[byte]);
            printf("\n");
        }
    }
    printf("%d sample(s), 0 mismatch(es)\n", TEST_VECTOR_COUNT);   /* the test compares every byte */
    return ai_network_destroy(network) != AI_HANDLE_NULL;
}
"""
GENERIC = {"st-ai": ST_AI_GENERIC, "legacy": LEGACY_GENERIC}


def build_host_program(source: str, folder: Path, network: str = "network") -> Path:
    """``source`` (main.c of an application) built against ``folder/network`` with ASan + UBSan."""
    (folder / "program.c").write_text(source)
    (folder / "Makefile").write_text(
        f"include {network}/mcudeploy.mk\nprogram: program.c $(MCUDEPLOY_SOURCES)\n"
        "\t$(CC) $(MCUDEPLOY_CFLAGS) -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all "
        "$(MCUDEPLOY_INCLUDES) program.c $(MCUDEPLOY_SOURCES) -o $@\n")
    subprocess.run(["make", "-s", "-C", str(folder), "program"], check=True, capture_output=True, timeout=300)
    return folder / "program"


def _zoo():
    from codegen_graphs import zoo_graph
    return deploy(zoo_graph())


def _split_arena():
    deployment = deploy(shared_model("mlperf_tiny/resnet8_int8.tflite"),
                        DeploymentOptions(target="stm32h743", split_arena=True, sram_limit=24000))
    assert len(deployment.plan.placement.arena_banks) >= 2    # several activation buffers
    return deployment


@pytest.mark.skipif(not HAVE_GCC, reason="gcc / make missing")
@pytest.mark.parametrize("api", ["st-ai", "legacy"])
@pytest.mark.parametrize("make", [pytest.param(_zoo, id="zoo"),
                                  pytest.param(_split_arena, id="split-arena", marks=pytest.mark.slow)])
def test_any_network_through_the_api_layer(make, api, tmp_path):
    """The op zoo (float and integer I/O, two outputs, scratch buffers, every kernel family)
    and resnet8 with its arena split over several banks (one activation buffer per bank),
    through a client that sizes every buffer from the API's own descriptors."""
    deployment = make()
    feeds = random_feeds(deployment.graph, 2)
    expected = run_int(deployment.graph, feeds, batch=True)
    files = generate_files(deployment, ProjectOptions(test_vectors=codegen.TestVectors(feeds, expected, "random"),
                                                      api=api))
    write_project(files, tmp_path / "network")
    declared = re.search(r"#define (?:STAI|AI)_NETWORK_(?:DATA_)?ACTIVATIONS_(?:NUM|COUNT) (\d+)",
                         files["network.h"] + files.get("network_data.h", ""))
    assert declared and int(declared.group(1)) == len({p.region for p in deployment.plan.tensors.values()})
    stdout = run(build_host_program(GENERIC[api], tmp_path), "host")
    assert_bit_exact(stdout, deployment, expected)


# ---- what the generated descriptors say ----

def _macros(text: str) -> dict[str, str]:
    return dict(re.findall(r"^#define (\w+) (.+?)(?:\s+/\*.*)?$", text, re.MULTILINE))


@pytest.mark.parametrize("api, prefix", [("st-ai", "STAI_KWS_"), ("legacy", "AI_KWS_")])
def test_size_and_shape_macros_are_the_graphs(api, prefix, tmp_path):
    deployment, _ = generate("mlperf_tiny/dscnn_kws_int8.tflite", api, tmp_path, samples=1, name="kws")
    macros = _macros((tmp_path / "kws.h").read_text())
    value = deployment.graph.inputs[0]
    assert macros[f"{prefix}IN_NUM"] == "1" and macros[f"{prefix}OUT_NUM"] == "1"
    assert macros[f"{prefix}IN_1_SHAPE"] == "{" + ", ".join(map(str, value.shape)) + "}"
    assert int(macros[f"{prefix}IN_1_SIZE"]) == int(np.prod(value.shape))
    assert int(macros[f"{prefix}IN_1_SIZE_BYTES"]) == value.nbytes
    assert int(macros[f"{prefix}OUT_1_SIZE_BYTES"]) == deployment.graph.outputs[0].nbytes
    arena = int(deployment.plan.arena_bytes)
    if api == "st-ai":
        scale = float.fromhex(macros["STAI_KWS_IN_1_SCALE"].rstrip("f"))
        assert np.float32(scale) == value.quant.scale[0]
        assert int(macros["STAI_KWS_IN_1_ZERO_POINT"]) == int(value.quant.zero_point[0])
        assert macros["STAI_KWS_IN_1_FORMAT"] == "STAI_FORMAT_S8"
        assert int(macros["STAI_KWS_ACTIVATION_1_SIZE_BYTES"]) >= arena
        assert "STAI_FLAG_HAS_QUANT_PARAMS | STAI_FLAG_PER_TENSOR | STAI_FLAG_CHANNEL_LAST" in (tmp_path / "kws.c").read_text()
    else:
        data = _macros((tmp_path / "kws_data.h").read_text())
        assert int(data["AI_KWS_DATA_ACTIVATIONS_SIZE"]) >= arena
        assert macros["AI_KWS_IN_1_FORMAT"] == "AI_BUFFER_FORMAT_S8"
        assert len(value.shape) == 4 and value.layout != "NCHW"       # NHWC: the image macros
        assert [int(macros[f"AI_KWS_IN_1_{key}"]) for key in ("HEIGHT", "WIDTH", "CHANNEL")] == list(value.shape[1:])
        c_file = (tmp_path / "kws.c").read_text()
        assert f"ai_kws_in_1_zeropoint[1] = {{{int(value.quant.zero_point[0])}}}" in c_file
    # mcudeploy's network moved aside, its arena the application's
    network_c = (tmp_path / "mcudeploy" / "network.c").read_text()
    assert "int32_t network_set_arena(int32_t index, void *buffer)" in network_c
    assert "static uint8_t *network_arena_" in network_c
    assert not (tmp_path / "main.c").exists() and not (tmp_path / "Makefile").exists()


def test_default_api_output_is_mcudeploys():
    deployment = deploy(load_model(shared_model("mlperf_tiny/fc_autoencoder_int8.tflite")))
    files = generate_files(deployment, ProjectOptions(api="mcudeploy"))
    assert files == generate_files(deployment)
    assert "network_set_arena" not in files["network.c"] and "stai.h" not in files


# ---- misuse of each API: the documented error statuses (host) ----

ST_AI_MISUSE = r"""
#include <stdio.h>
#include "network.h"
STAI_NETWORK_CONTEXT_DECLARE(context, STAI_NETWORK_CONTEXT_SIZE)
STAI_ALIGNED(32) static uint8_t acts[STAI_NETWORK_ACTIVATION_1_SIZE_BYTES + 1];
static uint8_t in[STAI_NETWORK_IN_1_SIZE_BYTES], out[STAI_NETWORK_OUT_1_SIZE_BYTES];
#define EXPECT(call, code) if ((call) != (code)) { printf("line %d\n", __LINE__); return 1; }
int main(void) {
    stai_ptr bad[1] = {acts + 1}, good[1] = {acts}, ins[1] = {in}, outs[1] = {out};
    EXPECT(stai_network_init(context), STAI_ERROR_NETWORK_INVALID_RUNTIME);
    EXPECT(stai_runtime_init(), STAI_SUCCESS);
    EXPECT(stai_network_run(context, STAI_MODE_SYNC), STAI_ERROR_NETWORK_INVALID_CONTEXT_HANDLE);
    EXPECT(stai_network_init(context), STAI_SUCCESS);
    EXPECT(stai_network_set_activations(context, bad, 1), STAI_ERROR_NETWORK_INVALID_ACTIVATIONS_PTR);
    EXPECT(stai_network_set_activations(context, good, 2), STAI_ERROR_NETWORK_INVALID_ACTIVATIONS_NUM);
    EXPECT(stai_network_set_inputs(context, ins, 1), STAI_SUCCESS);
    EXPECT(stai_network_set_outputs(context, outs, 1), STAI_SUCCESS);
    EXPECT(stai_network_run(context, STAI_MODE_SYNC), STAI_ERROR_NETWORK_INVALID_ACTIVATIONS_PTR);
    EXPECT(stai_network_get_error(context), STAI_ERROR_NETWORK_INVALID_ACTIVATIONS_PTR);
    EXPECT(stai_network_set_activations(context, good, 1), STAI_SUCCESS);
    EXPECT(stai_network_run(context, STAI_MODE_ASYNC), STAI_ERROR_NOT_IMPLEMENTED);
    EXPECT(stai_network_run(context, STAI_MODE_SYNC), STAI_SUCCESS);
    EXPECT(stai_network_deinit(context), STAI_SUCCESS);
    EXPECT(stai_network_run(context, STAI_MODE_SYNC), STAI_ERROR_NETWORK_INVALID_CONTEXT_HANDLE);
    printf("misuse ok\n");
    return 0;
}
"""

LEGACY_MISUSE = r"""
#include <stdio.h>
#include "network.h"
#include "network_data.h"
AI_ALIGNED(32) static ai_u8 acts[AI_NETWORK_DATA_ACTIVATIONS_SIZE];
static ai_u8 in[AI_NETWORK_IN_1_SIZE_BYTES], out[AI_NETWORK_OUT_1_SIZE_BYTES];
#define EXPECT(condition) if (!(condition)) { printf("line %d\n", __LINE__); return 1; }
int main(void) {
    ai_handle network = AI_HANDLE_NULL, second = AI_HANDLE_NULL;
    const ai_handle activations[] = {acts};
    ai_buffer *input, *output;
    EXPECT(ai_network_create_and_init(&network, activations, activations).code == AI_ERROR_CODE_NETWORK_WEIGHTS);
    EXPECT(ai_network_destroy(network) == AI_HANDLE_NULL);
    EXPECT(ai_network_create_and_init(&network, activations, NULL).type == AI_ERROR_NONE);
    EXPECT(ai_network_create_and_init(&second, activations, NULL).type == AI_ERROR_CREATE_FAILED);
    input = ai_network_inputs_get(network, NULL);
    output = ai_network_outputs_get(network, NULL);
    EXPECT(ai_network_run(network, input, output) == 0);   /* .data not set */
    EXPECT(ai_network_get_error(network).type == AI_ERROR_INVALID_INPUT);
    input[0].data = AI_HANDLE_PTR(in);
    output[0].data = AI_HANDLE_PTR(out);
    output[0].size += 1;
    EXPECT(ai_network_run(network, input, output) == 0);   /* not the network's output size */
    EXPECT(ai_network_get_error(network).type == AI_ERROR_INVALID_OUTPUT);
    output[0].size -= 1;
    EXPECT(ai_network_run(network, input, output) == 1);
    EXPECT(ai_network_destroy(network) == AI_HANDLE_NULL);
    EXPECT(ai_network_run(network, input, output) == 0);   /* destroyed */
    printf("misuse ok\n");
    return 0;
}
"""


@pytest.mark.skipif(not HAVE_GCC, reason="gcc / make missing")
@pytest.mark.parametrize("api, program", [("st-ai", ST_AI_MISUSE), ("legacy", LEGACY_MISUSE)],
                         ids=["st-ai", "legacy"])
def test_api_misuse_returns_the_documented_status(api, program, tmp_path):
    generate("mlperf_tiny/fc_autoencoder_int8.tflite", api, tmp_path / "network", samples=1)
    assert "misuse ok" in run(build_host_program(program, tmp_path), "host")


# ---- bad options and I/O the APIs cannot describe: one line each ----

@pytest.mark.parametrize("arguments, message", [
    (["--api", "tflm"], r"--api 'tflm': unknown API; choose one of mcudeploy, st-ai, legacy"),
    (["--api", "st-ai", "--trustzone"], r"--api st-ai --trustzone: the ST client APIs are not generated"),
    (["--api", "legacy", "--name", "My-Net"], r"--name 'My-Net': the network's C name must be"),
    (["--api", "st-ai", "--size-report"], r"--size-report --api st-ai: the size report builds"),
])
def test_bad_options_are_one_line(arguments, message, tmp_path, capsys):
    from mcudeploy.cli.main import main as cli_main
    model = shared_model("mlperf_tiny/fc_autoencoder_int8.tflite")
    assert cli_main(["generate", str(model), "-o", str(tmp_path / "out"), *arguments]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and re.search(message, error[0]), error
    assert not (tmp_path / "out").exists()


def test_cli_generate_with_a_client_api(tmp_path, capsys):
    from mcudeploy.cli.main import main as cli_main
    model = shared_model("mlperf_tiny/fc_autoencoder_int8.tflite")
    assert cli_main(["generate", str(model), "-o", str(tmp_path / "out"), "--api", "legacy", "--name", "kws"]) == 0
    assert "--api legacy: ai_platform.h, kws.h, kws_data.h over mcudeploy/network.c" in capsys.readouterr().out
    written = {str(path.relative_to(tmp_path / "out")) for path in (tmp_path / "out").rglob("*") if path.is_file()}
    assert {"ai_platform.h", "kws.h", "kws_data.h", "kws.c", "mcudeploy.mk", "mcudeploy/network.c"} <= written
    assert "ai_kws_create_and_init" in (tmp_path / "out" / "kws.h").read_text()


def _io_value(dtype: DType, shape=(1, 4), quant=None):
    return Graph().add_input("x", dtype, shape, quant=quant)


@pytest.mark.parametrize("value, message", [
    (_io_value(DType.BOOL), r"'x' is bool.*the ST client APIs describe"),
    (_io_value(DType.INT8, (1, 2, 1, 1, 1, 1, 2)), r"rank 7"),
    (_io_value(DType.INT8, (1, 2), QuantParams(np.array([0.5, 0.25], np.float32), np.array([0, 0]), axis=1)),
     r"quantized per channel"),
])
def test_io_the_apis_cannot_describe_is_refused(value, message):
    with pytest.raises(UnsupportedError, match=message):
        _tensor(value, 0)


def test_api_options_are_checked_by_generate_files_too():
    deployment = deploy(load_model(shared_model("mlperf_tiny/fc_autoencoder_int8.tflite")))
    with pytest.raises(UsageError, match="unknown API"):
        generate_files(deployment, ProjectOptions(api="cube"))
