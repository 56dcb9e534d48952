"""ST's embedded inference client APIs over mcudeploy's generated network (``generate --api``).

Input: the deployment, mcudeploy's own project files (:func:`.emit_project.generate_files`
with the application-owned arena, ``network_set_arena``), the API (``st-ai`` or ``legacy``)
and the network's C name. Output: the project files of that API, written from ST's public
documentation of the ST Edge AI client API (``stai.h``, ``<name>.h``, ``<name>.c``,
``stai_runtime.c``) and of the X-CUBE-AI "legacy" API (``ai_platform.h``, ``<name>.h``,
``<name>_data.h``, ``<name>.c``), each a thin layer over mcudeploy's ``network_run``: no
ST code, no decision (every size, shape, format, scale and zero point comes from the
deployment record's graph and memory plan). Layout::

    <the API's files>            what the application includes and calls
    mcudeploy/network.[ch] ...   mcudeploy's network, data, runtime, test vectors (moved, so
                                 that an API's <name>.h may be network.h)
    mcudeploy.mk                 make fragment: sources, include paths, flags, QEMU boards
    boards/                      QEMU start-up code and linker scripts

The application owns the activation buffers (as in ST's documented applications); each
arena region of the plan is one activation buffer, in the plan's region order. mcudeploy's
``main.c`` / ``harness_main.c`` / ``Makefile`` / ``CMakeLists.txt`` are not written: they
assume mcudeploy's static arena.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from ..errors import UnsupportedError, UsageError
from ..ir import Value, get_op
from .boards import BOARDS, CORE_FLAGS
from .c_literals import c_float
from .emit_network import Arena
from .identifiers import C_KEYWORDS, comment_text, string_literal
from .templates import render

if TYPE_CHECKING:
    from ..deployment import Deployment

APIS = ("mcudeploy", "st-ai", "legacy")
CLIENT_APIS = APIS[1:]
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,31}")
MAX_RANK = 6
# dtype -> (ST Edge AI format, legacy format, C type, bits, signed)
FORMATS = {"int8": ("STAI_FORMAT_S8", "AI_BUFFER_FORMAT_S8", "int8_t"),
           "uint8": ("STAI_FORMAT_U8", "AI_BUFFER_FORMAT_U8", "uint8_t"),
           "int16": ("STAI_FORMAT_S16", "AI_BUFFER_FORMAT_S16", "int16_t"),
           "int32": ("STAI_FORMAT_S32", "AI_BUFFER_FORMAT_S32", "int32_t"),
           "float32": ("STAI_FORMAT_FLOAT32", "AI_BUFFER_FORMAT_FLOAT", "float")}
MOVED_OUT = ("Makefile", "CMakeLists.txt", "main.c", "harness_main.c")


def check_api_options(api: str, name: str, trustzone: bool) -> None:
    """One :class:`UsageError` line for an unknown ``--api``, a ``--name`` that is not a C
    name, or ``--trustzone`` with a client API."""
    if api not in APIS:
        raise UsageError(f"--api {api!r}: unknown API; choose one of {', '.join(APIS)}")
    if not NAME_PATTERN.fullmatch(name) or name in C_KEYWORDS or "__" in name:
        raise UsageError(f"--name {name!r}: the network's C name must be lower case letters, digits "
                         "and '_' (a letter first, at most 32 characters, no '__'), e.g. network")
    if trustzone and api != "mcudeploy":
        raise UsageError(f"--api {api} --trustzone: the ST client APIs are not generated for the "
                         "TrustZone secure entry; use --api mcudeploy with --trustzone (network_ns.h)")


def _tensor(value: Value, index: int) -> dict:
    """Everything an API's descriptor and macros say about graph input / output ``value``."""
    dtype = str(value.dtype)
    if dtype not in FORMATS:
        raise UnsupportedError(f"graph input / output {value.name!r} is {value.type_str()}; the ST "
                               f"client APIs describe {', '.join(FORMATS)} tensors here")
    if len(value.shape) > MAX_RANK:
        raise UnsupportedError(f"graph input / output {value.name!r} has rank {len(value.shape)}; "
                               f"the ST client API descriptors hold up to {MAX_RANK} dimensions")
    quant = value.quant if value.dtype.is_integer else None
    if quant is not None and quant.per_channel:
        raise UnsupportedError(f"graph input / output {value.name!r} is quantized per channel; the "
                               "generated API describes one scale and zero point per input / output")
    stai_format, legacy_format, ctype = FORMATS[dtype]
    return {"index": index + 1, "name": string_literal(value.name), "comment": comment_text(value.name),
            "shape": list(value.shape), "rank": len(value.shape), "size": int(np.prod(value.shape)),
            "bytes": value.nbytes, "stai_format": stai_format, "legacy_format": legacy_format,
            "ctype": ctype, "quantized": quant is not None,
            "scale": c_float(quant.scale.reshape(-1)[0]) if quant is not None else "0.0f",
            "zero_point": int(quant.zero_point.reshape(-1)[0]) if quant is not None else 0,
            "hwc": _height_width_channels(value), "channel_last": _height_width_channels(value) is not None}


def _height_width_channels(value: Value) -> list[int] | None:
    """Height, width, channels of a rank-4 image tensor in its declared layout (NHWC unless
    the value says NCHW); None for another rank, or NCHW (not channel-last: no legacy
    HEIGHT / WIDTH / CHANNEL macros, no STAI_FLAG_CHANNEL_LAST)."""
    if len(value.shape) != 4 or value.layout == "NCHW":
        return None
    return [int(size) for size in value.shape[1:]]


def _context(deployment: Deployment, name: str, sources: list[str], test_vectors: bool) -> dict:
    graph, plan = deployment.graph, deployment.plan
    arena = Arena(plan, deployment.options.alignment)
    return {"name": name, "upper": name.upper(), "model": comment_text(deployment.name),
            "model_literal": string_literal(deployment.name.rsplit("/", 1)[-1]),
            "macc": sum(int(get_op(node.op).macc(node)) for node in graph.nodes),
            "nodes": len(plan.order), "alignment": deployment.options.alignment,
            "inputs": [_tensor(v, i) for i, v in enumerate(graph.inputs)],
            "outputs": [_tensor(v, i) for i, v in enumerate(graph.outputs)],
            "activations": [{"index": i + 1, "bytes": size, "region": comment_text(region)}
                            for i, (region, size) in enumerate(arena.sizes.items())],
            "runtime_sources": sources, "test_vectors": test_vectors,
            "boards": [{"name": b.name, "core": b.core, "flags": CORE_FLAGS[b.core]} for b in BOARDS.values()]}


def api_entry_files(api: str, name: str) -> list[str]:
    """The headers an application of ``api`` includes."""
    return ["stai.h", f"{name}.h"] if api == "st-ai" else ["ai_platform.h", f"{name}.h", f"{name}_data.h"]


def _api_files(api: str, name: str, context: dict) -> dict[str, str]:
    if api == "st-ai":
        return {"stai.h": render("client/stai.h.j2", context),
                "stai_runtime.c": render("client/stai_runtime.c.j2", context),
                f"{name}.h": render("client/stai_network.h.j2", context),
                f"{name}.c": render("client/stai_network.c.j2", context)}
    return {"ai_platform.h": render("client/ai_platform.h.j2", context),
            f"{name}.h": render("client/ai_network.h.j2", context),
            f"{name}_data.h": render("client/ai_network_data.h.j2", context),
            f"{name}.c": render("client/ai_network.c.j2", context)}


def client_api_files(deployment: Deployment, files: dict[str, str], api: str, name: str,
                     runtime_sources: list[str]) -> dict[str, str]:
    """The project of ``api`` (module docstring) from mcudeploy's ``files``."""
    moved = {(path if path.startswith("boards/") else f"mcudeploy/{path}"): text
             for path, text in files.items() if path not in MOVED_OUT}
    context = _context(deployment, name, runtime_sources, "mcudeploy/test_vectors.c" in moved)
    context["api_sources"] = [f"{name}.c"] + (["stai_runtime.c"] if api == "st-ai" else [])
    api_files = _api_files(api, name, context)
    clash = sorted(set(api_files) & set(moved))
    if clash:   # cannot happen with NAME_PATTERN (no '/'), kept as a guard of the layout
        raise AssertionError(f"client API files {clash} would overwrite mcudeploy's")
    return {**moved, **api_files, "mcudeploy.mk": render("client/mcudeploy.mk.j2", context)}
