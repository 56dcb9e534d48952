"""``--trustzone``: the secure-side entry ``secure/network_secure.c`` and the non-secure
header ``network_ns.h`` (Armv8-M TrustZone, built with ``-mcmse``).

Input: the graph (input / output names and byte sizes). Output: text. The entry checks
both non-secure buffers with ``cmse_check_address_range`` (read for the input, read-write
for the output), copies the input into a secure buffer, runs ``network_run`` and copies
the outputs back; the weights and the arena are linked into the secure image only.
"""
from __future__ import annotations

from ..ir import Graph
from .identifiers import comment_text
from .templates import render


def render_trustzone(graph: Graph, model: str) -> dict[str, str]:
    context = {"model": comment_text(model),
               "inputs_bytes": sum(v.nbytes for v in graph.inputs),
               "outputs_bytes": sum(v.nbytes for v in graph.outputs),
               "inputs": comment_text(", ".join(f"{v.name} {v.type_str()}" for v in graph.inputs)),
               "outputs": comment_text(", ".join(f"{v.name} {v.type_str()}" for v in graph.outputs))}
    return {"secure/network_secure.c": render("network_secure.c.j2", context),
            "network_ns.h": render("network_ns.h.j2", context)}
