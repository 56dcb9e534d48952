"""The whole generated project: network files, runtime sources, build files, example and
validation programs, board support, optional test vectors and TrustZone wrapper.

Input: the graph, its memory plan, the prepared parameters, the target and the options
(:class:`ProjectOptions`). Output: ``{relative path: text}`` for
:func:`~.output_dir.write_project`. Layout::

    network.h network.c network_data.h network_data.c network_sections.ld
    runtime/include/*.h runtime/src/<the kernels the network calls>.c
    main.c                 Cortex-M example: DWT timing (+ test-vector self-check)
    harness_main.c         reads samples from a file, writes outputs (validation)
    test_vectors.h/.c      with --test-vectors
    boards/                QEMU start-up code, linker scripts, CMake toolchain file
    Makefile CMakeLists.txt
    secure/network_secure.c network_ns.h     with --trustzone (and the TrustZone board files,
    boards/<board>-secure.ld -ns.ld startup_secure.c, nonsecure/harness_ns.c: see .trustzone)

With ``api`` ``st-ai`` or ``legacy`` the layout is :mod:`.client_api`'s: the API's files at the
top, mcudeploy's network under ``mcudeploy/`` with an application-owned arena, ``mcudeploy.mk``.
"""
from __future__ import annotations

import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..errors import UsageError
from ..ir import Graph, float_nodes
from .boards import BOARDS, CORE_FLAGS
from .c_literals import c_array_body
from .client_api import check_api_options, client_api_files
from .emit_data import constant_arrays, render_data
from .emit_network import render_network, variant_headers
from .identifiers import IdentifierTable, comment_text
from .templates import render
from .trustzone import AN547_LAYOUT, render_trustzone
from .variant_constants import variant_constants

if TYPE_CHECKING:
    from ..deployment import Deployment


def _runtime_folder() -> Path:
    """The C runtime's sources: ``runtime/`` of the source checkout, else the copy a wheel
    installs in ``<prefix>/share/mcudeploy/runtime`` (pyproject ``data-files``)."""
    checkout = Path(__file__).resolve().parents[3] / "runtime"
    installed = Path(sysconfig.get_path("data")) / "share" / "mcudeploy" / "runtime"
    return checkout if checkout.is_dir() or not installed.is_dir() else installed


RUNTIME = _runtime_folder()
RUNTIME_HEADERS = ("include/mcu_runtime.h", "include/mcu_fixed_point.h", "src/mcu_internal.h")
TEMPLATES = Path(__file__).resolve().parent / "templates"
EXAMPLE_RUNS = 10


@dataclass(frozen=True)
class TestVectors:
    """Samples and the reference outputs: every array ``(N, *declared shape)``, by value name."""
    inputs: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]
    source: str


@dataclass(frozen=True)
class ProjectOptions:
    """What the project contains beyond the network (the network is the deployment's)."""
    test_vectors: TestVectors | None = None
    trustzone: bool = False
    api: str = "mcudeploy"          # or an ST client API over the network (.client_api)
    name: str = "network"           # the C name of the network in that API


def runtime_files(sources: list[str], headers: Sequence[str] = ()) -> dict[str, str]:
    """The runtime headers (plus ``headers``, relative to ``runtime/``: the kernel variants')
    and the given ``src/*.c`` files, copied verbatim.

    The C runtime lives beside the package in the source tree (``runtime/`` builds on its
    own); a wheel carries a copy (see :func:`_runtime_folder`); a broken install is said plainly.
    """
    if not (RUNTIME / RUNTIME_HEADERS[0]).is_file():
        raise UsageError(f"the C runtime sources are not at {RUNTIME}: reinstall mcudeploy "
                         "(pip install -e . from its checkout, or its wheel, which carries them)")
    extra = [header for header in headers if header not in RUNTIME_HEADERS]
    names = list(RUNTIME_HEADERS) + extra + [f"src/{name}" for name in sources]
    return {f"runtime/{name}": (RUNTIME / name).read_text() for name in names}


def _sample_bytes(arrays: dict[str, np.ndarray], values, index: int) -> str:
    joined = b"".join(np.ascontiguousarray(arrays[v.name][index], dtype=v.dtype.numpy).astype(
        np.dtype(v.dtype.numpy).newbyteorder("<")).tobytes() for v in values)
    return c_array_body(np.frombuffer(joined, dtype=np.uint8))


def render_test_vectors(graph: Graph, vectors: TestVectors, model: str) -> dict[str, str]:
    count = next(iter(vectors.inputs.values())).shape[0]
    context = {"model": comment_text(model), "data": comment_text(vectors.source), "count": count,
               "inputs": [_sample_bytes(vectors.inputs, graph.inputs, i) for i in range(count)],
               "outputs": [_sample_bytes(vectors.outputs, graph.outputs, i) for i in range(count)],
               "input_types": comment_text(", ".join(v.type_str() for v in graph.inputs)),
               "output_types": comment_text(", ".join(v.type_str() for v in graph.outputs))}
    return {"test_vectors.h": render("test_vectors.h.j2", context),
            "test_vectors.c": render("test_vectors.c.j2", context)}


def _build_files(model: str, runtime_sources: list[str], test_vectors: bool,
                 trustzone: bool = False) -> dict[str, str]:
    boards = [{"name": b.name, "core": b.core, "flags": CORE_FLAGS[b.core], "uart_base": b.uart_base}
              for b in BOARDS.values()]
    context = {"model": comment_text(model), "runtime_sources": runtime_sources, "boards": boards,
               "cores": [{"name": name, "flags": flags} for name, flags in CORE_FLAGS.items()],
               "test_vectors": test_vectors,
               "network_sources": ["network.c", "network_data.c"] + (["test_vectors.c"] if test_vectors else []),
               "runs": EXAMPLE_RUNS, "trustzone": {"board": AN547_LAYOUT.board} if trustzone else None}
    files = {"Makefile": render("Makefile.j2", context), "CMakeLists.txt": render("CMakeLists.txt.j2", context),
             "main.c": render("main.c.j2", context),
             "harness_main.c": (TEMPLATES / "harness_main.c").read_text(),
             "harness_serial.c": (TEMPLATES / "harness_serial.c").read_text(),
             "networkConfig.cmake": (TEMPLATES / "networkConfig.cmake").read_text(),
             "boards/uart_cmsdk.c": (TEMPLATES / "boards" / "uart_cmsdk.c").read_text(),
             "boards/startup_cortex_m.c": (TEMPLATES / "boards" / "startup_cortex_m.c").read_text(),
             "boards/arm-none-eabi.cmake": render("boards/arm-none-eabi.cmake.j2", context)}
    for board in BOARDS.values():
        files[f"boards/{board.name}.ld"] = render("boards/board.ld.j2", {**board.__dict__, "board": board.name})
    return files


def _check_deployable(deployment: Deployment) -> None:
    if deployment.executor != "mcudeploy":
        raise UsageError(f"{deployment.name}: executor {deployment.executor}: the NPU nodes are the vendor's code, "
                         "not C that mcudeploy writes or runs; 'mcudeploy generate --executor vendor-npu' writes "
                         "the hand-off for it; build, run or validate mcudeploy's code with --executor mcudeploy")
    if deployment.precision != "integer":
        nodes = float_nodes(deployment.graph)
        named = (f": {len(nodes)} node(s) stay float ({', '.join(nodes[:6])}{', ...' if len(nodes) > 6 else ''})"
                 if nodes else "")
        raise UsageError(f"{deployment.name}: a {deployment.precision} model{named}; C code is generated "
                         "for full-integer models only: quantize it fully with mcudeploy quantize "
                         "(without --keep-float for those nodes)")
    deployment.require_fit("no C code generated")


def generate_files(deployment: Deployment, options: ProjectOptions = ProjectOptions()) -> dict[str, str]:
    """Every file of the project of ``deployment`` (see the module docstring), by relative path."""
    check_api_options(options.api, options.name, options.trustzone)
    _check_deployable(deployment)
    graph, plan, model = deployment.graph, deployment.plan, deployment.name
    client = options.api != "mcudeploy"
    alignment = deployment.options.alignment
    constants = IdentifierTable("weight_")
    prepared = variant_constants(deployment, constants)   # layouts the kernel variants read
    weight_arrays = prepared.apply(constant_arrays(graph, plan, constants), constants)
    network, requant_arrays, sources, arena_sections = render_network(deployment, constants, prepared.pointers,
                                                                      client_arenas=client)
    files = dict(network)
    files.update(render_data(weight_arrays + requant_arrays, deployment.target, model, alignment,
                             arena_sections))
    files.update(runtime_files(sources, variant_headers(deployment)))
    files.update(_build_files(model, sources, options.test_vectors is not None, options.trustzone))
    if options.test_vectors is not None:
        files.update(render_test_vectors(graph, options.test_vectors, model))
    if options.trustzone:
        files.update(render_trustzone(graph, model))
    return client_api_files(deployment, files, options.api, options.name, sources) if client else files
