"""The hand-off to the vendor's NPU compiler (``--executor vendor-npu``) on an ST Neural-ART
target (STM32N6): the files that make ST Edge AI realise the deployment's mapping and
placement, instead of C kernels for the NPU nodes.

Input: a ``vendor-npu`` :class:`~mcudeploy.deployment.Deployment` and the generated C project
of each of its CPU partitions (``mcudeploy generate`` deploys them with
:func:`mcudeploy.driver.partition_deployment`). Output: ``{relative path: text or bytes}`` for
:func:`~.output_dir.write_project`::

    partition_<i>_npu.tflite   each NPU partition (consecutive NPU nodes, plan order) as a
                               full-integer TFLite model (its entering / leaving tensors are the
                               model's inputs / outputs, names, types and quantization kept)
    cpu_partition_<i>/         each CPU partition as mcudeploy's C project
    <model>.mpool              ST memory-pool file: every region of the target, those the plan
                               does not give the NPU switched off (size 0, ST's convention)
    neural_art.json            the compiler profile "mcudeploy": the pool file and the options
    stedgeai.sh                one ``stedgeai generate`` per NPU partition
    handoff.json               the partitions in order, their tensors and files, the placement

The formats follow ST's public documentation (ST Edge AI Core: command-line interface, "ST
Neural-ART compiler primer", the getting-started projects' ``.mpool`` files): a ``.mpool`` is
``{"memory": {"memFilePrefix", "mempools": [{"fname", "name", "fformat", "prop": {"rights",
"throughput", "latency", "byteWidth", "freqRatio", "cacheable", "constantsPreferred", ...},
"offset": {"value", "magnitude"}, "size": {"value", "magnitude"}, "mode"}]}}``; a profile file
is ``{"Profiles": {NAME: {"memory_pool": PATH, "options": TEXT}}}``, named on the command line
as ``--st-neural-art NAME@FILE``.

How the plan's placement is said: the arena's region(s) (and a graph split's external arena)
keep their size (the plan's capacity: ``sram_limit`` applies), so the NPU compiler places the
activations there; the regions holding weights get ``constantsPreferred`` (octoFlash by
default: ST's own placement; the on-chip region too when weights were copied, ``weights =
ram``); every other region is size 0. ``--enable-epoch-controller`` when the target's NPU runs
its epochs from the epoch controller, ``--no-inputs-allocation --no-outputs-allocation`` when
the inputs / outputs are the application's buffers (``io_in_arena = false``).

Decides nothing: the partitions, regions and options come from the deployment.
"""
from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING

from ..errors import UnsupportedError
from ..exporters.tflite_writer import to_tflite
from ..ir import Value
from ..mapping import NPU, partition_graph

if TYPE_CHECKING:
    from ..deployment import Deployment
    from ..targets import MemoryRegion

PROFILE, PROFILE_FILE, SCRIPT, MANIFEST_FILE = "mcudeploy", "neural_art.json", "stedgeai.sh", "handoff.json"
# ST's documented optimisation options for the STM32N6 (the "O3" profiles of ST Edge AI's
# neural_art.json), without --enable-virtual-mem-pools: the pools are the plan's, as given.
ST_OPTIONS = ("--native-float", "--mvei", "--cache-maintenance", "--Ocache-opt", "--Os", "--optimization", "3")
ST_TARGET = "stm32n6"
KILO = 1024


def check_vendor_target(deployment: Deployment) -> None:
    """One line unless the deployment's NPU is one ST Edge AI compiles for."""
    target = deployment.target
    if target is None or target.npu is None or "neural-art" not in target.npu.name.lower():
        npu = target.npu.name if target is not None and target.npu is not None else "none"
        raise UnsupportedError(f"generate --executor vendor-npu: the hand-off is written for ST Neural-ART NPUs "
                               f"(target stm32n6); target {target.name if target else '-'}'s NPU is {npu}; "
                               "estimate and plan work with it, generate needs --executor mcudeploy")


def handoff_files(deployment: Deployment, cpu_projects: dict[int, dict[str, str]]) -> dict[str, str | bytes]:
    """Every hand-off file (module docstring), by relative path."""
    check_vendor_target(deployment)
    stem = deployment.source.stem
    pool_file = f"{stem}.mpool"
    files: dict[str, str | bytes] = {
        pool_file: json.dumps(memory_pool_document(deployment), indent=1) + "\n",
        PROFILE_FILE: json.dumps({"Profiles": {PROFILE: {"memory_pool": f"./{pool_file}",
                                                         "options": " ".join(compiler_options(deployment))}}},
                                 indent=1) + "\n"}
    entries, commands = [], []
    for partition in deployment.partitions():
        graph = partition_graph(deployment.graph, partition)
        entry = {**partition.to_json(),
                 "input_tensors": [_tensor(v) for v in graph.inputs],
                 "output_tensors": [_tensor(v) for v in graph.outputs]}
        if partition.device == NPU:
            model = f"partition_{partition.index}_npu.tflite"
            files[model] = to_tflite(graph)
            command = stedgeai_command(model, partition.index) + _io_options(deployment)
            entry.update(file=model, command=" ".join(shlex.quote(word) for word in command))
            commands.append(command)
        else:
            folder = f"cpu_partition_{partition.index}"
            files.update({f"{folder}/{name}": text for name, text in cpu_projects[partition.index].items()})
            entry.update(file=f"{folder}/", runs="mcudeploy's C code: network_run() of this folder")
        entries.append(entry)
    files[SCRIPT] = _script(commands)
    files[MANIFEST_FILE] = json.dumps(_manifest(deployment, pool_file, entries), indent=1) + "\n"
    return files


def compiler_options(deployment: Deployment) -> list[str]:
    """The Neural-ART compiler options of the profile (module docstring)."""
    options = list(ST_OPTIONS)
    npu = deployment.require_target("the vendor NPU hand-off").npu
    if npu is not None and npu.epoch_controller:
        options.append("--enable-epoch-controller")
    return options


def stedgeai_command(model: str, index: int) -> list[str]:
    """``stedgeai generate`` of one NPU partition, run from the hand-off folder."""
    return ["stedgeai", "generate", "--model", model, "--target", ST_TARGET,
            "--st-neural-art", f"{PROFILE}@{PROFILE_FILE}", "--name", f"partition_{index}",
            "--output", f"st_ai_output/partition_{index}"]


def _io_options(deployment: Deployment) -> list[str]:
    return [] if deployment.options.io_in_arena else ["--no-inputs-allocation", "--no-outputs-allocation"]


def _script(commands: list[list[str]]) -> str:
    lines = ["#!/bin/sh", "# ST Edge AI Core: compile the NPU partitions mcudeploy handed off (handoff.json)",
             "set -e", 'cd "$(dirname "$0")"']
    return "\n".join(lines + [" ".join(shlex.quote(word) for word in command) for command in commands]) + "\n"


def memory_pool_document(deployment: Deployment) -> dict:
    """The ``.mpool`` of the deployment's placement (module docstring)."""
    placement, target = deployment.plan.placement, deployment.require_target("the vendor NPU hand-off")
    arena = {placement.arena_region, *placement.arena_banks}
    if placement.external_region is not None:
        arena.add(placement.external_region)
    weights = set(placement.weights.values())
    pools = [_pool(region, region.name in arena, region.name in weights, placement.capacity.get(region.name))
             for region in target.regions]
    return {"memory": {"memFilePrefix": "atonbuf", "mempools": pools}}


def _pool(region: MemoryRegion, activations: bool, constants: bool, capacity: int | None) -> dict:
    size = (capacity if capacity is not None else region.size) if activations or constants else 0
    prop: dict[str, object] = {"rights": "ACC_WRITE" if region.writable else "ACC_READ",
                               "throughput": _class(region.speed, (1e9, 3e8), ("HIGH", "MID", "LOW")),
                               "latency": _class(-region.latency_cycles, (-1, -10), ("LOW", "MID", "HIGH")),
                               "pipelined": "PIPELINED_ON",
                               "cacheable": "CACHEABLE_OFF" if region.on_chip else "CACHEABLE_ON",
                               "constantsPreferred": constants}
    if region.byte_width > 0 and region.freq_ratio > 0:
        prop.update(byteWidth=region.byte_width, freqRatio=region.freq_ratio)
    return {"fname": region.name, "name": region.name, "fformat": "FORMAT_RAW", "prop": prop,
            "offset": _quantity(region.base), "size": _quantity(size), "mode": "USEMODE_ABSOLUTE"}


def _class(value: float, limits: tuple[float, float], names: tuple[str, str, str]) -> str:
    return names[0] if value >= limits[0] else names[1] if value >= limits[1] else names[2]


def _quantity(count: int) -> dict[str, str]:
    """``{"value": "855360", "magnitude": "KBYTES"}`` (bytes when not a whole KiB)."""
    if count and count % KILO == 0:
        return {"value": str(count // KILO), "magnitude": "KBYTES"}
    return {"value": str(count), "magnitude": "BYTES"}


def _tensor(value: Value) -> dict:
    quant = value.quant
    return {"name": value.name, "dtype": value.dtype.value, "shape": list(value.shape),
            "scale": [float(s) for s in quant.scale] if quant is not None else None,
            "zero_point": [int(z) for z in quant.zero_point] if quant is not None else None}


def _manifest(deployment: Deployment, pool_file: str, entries: list[dict]) -> dict:
    placement = deployment.plan.placement
    weights: dict[str, int] = {}
    for value in deployment.graph.constants():
        region = placement.weights.get(value.name)
        if region is not None:
            weights[region] = weights.get(region, 0) + value.nbytes
    return {"executor": "vendor-npu", "compiler": "ST Edge AI Core (stedgeai)", "model": str(deployment.source),
            "target": deployment.require_target("the vendor NPU hand-off").name, "memory_pool": pool_file, "profile": f"{PROFILE}@{PROFILE_FILE}",
            "compiler_options": compiler_options(deployment), "script": SCRIPT,
            "placement": {"activations": placement.arena_region, "arena_bytes": deployment.plan.arena_bytes,
                          "weights": weights},
            "partitions": entries}
