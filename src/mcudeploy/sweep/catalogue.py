"""The stages a sweep cell can run, as plain data: names, order, what each needs, the metrics it gives.

The implementations are in :mod:`.stages` (imported only by the cell process, which runs
them); the spec parser and the client read this table only, so they stay light.

Built-in stages, in the order a cell runs them (a stage pulls in what it needs)::

    analyze    the model as imported: MACC, parameters, weight bytes, peak live bytes
    quantize   post-training quantization (the cell's ``quantization``); a model that is
               quantized already is deployed as it is
    validate   float vs quantized on the data (needs quantize): cosine, SNR, top-1, accuracy
    plan       the deployment (``driver.deploy``): arena, on-chip / external RAM, flash, fit
    estimate   the latency of that deployment (``mcudeploy.estimate``; needs plan): ``latency_ms``
               only when every layer has figures; ``latency_known_ms`` the sum over the layers
               that have them (a lower bound) and ``unknown_layers`` how many do not
    search     the compile-option search with the cell's objective: the best configuration's
               latency and RAM
    generate   the C project of the deployment (needs plan): file count and bytes
    qemu       the generated code built and run under QEMU on the target's core class, bit
               for bit against the integer reference (needs plan): instructions per inference

A plugin stage is ``"file.py:function"`` (the file in the sweep file's folder:
:mod:`.callables`): ``function(context) -> {metric: number}``, run after the built-in stages; its metrics
are whatever it returns (:class:`~.stages.CellContext` is what it receives).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StageInfo:
    name: str
    needs: tuple[str, ...]
    metrics: tuple[str, ...]
    help: str


CATALOGUE: dict[str, StageInfo] = {info.name: info for info in (
    StageInfo("analyze", (), ("macc", "params", "weights_bytes", "peak_live_bytes", "nodes"),
              "the model as imported"),
    StageInfo("quantize", (), ("output_cosine", "output_sqnr_db", "int16_nodes", "float_nodes", "quantized"),
              "post-training quantization"),
    StageInfo("validate", ("quantize",), ("cosine", "snr_db", "top1", "accuracy", "passed"),
              "float vs quantized on the data"),
    StageInfo("plan", (), ("arena_bytes", "on_chip_bytes", "external_bytes", "flash_bytes", "fits",
                           "overflow_bytes"), "the deployment and its memory ledger"),
    StageInfo("estimate", ("plan",), ("latency_ms", "latency_complete", "latency_known_ms", "unknown_layers",
                                      "energy_uj", "npu_share"),
              "the latency estimate"),
    StageInfo("search", (), ("search_trials", "search_found", "search_latency_ms", "search_on_chip_bytes",
                             "search_flash_bytes"), "the compile-option search"),
    StageInfo("generate", ("plan",), ("files", "source_bytes"), "the C project"),
    StageInfo("qemu", ("plan",), ("bit_exact", "instructions"), "the generated code under QEMU"),
)}
STAGE_ORDER = tuple(CATALOGUE)


def is_plugin(name: str) -> bool:
    """A plugin stage names a callable (``file.py:function``)."""
    return ":" in name


def expand_stages(requested: tuple[str, ...]) -> tuple[str, ...]:
    """The stages a cell runs: the requested built-in ones and what they need, in
    :data:`STAGE_ORDER`, then the plugin stages in the order given. Names must be known."""
    wanted: set[str] = set()
    pending = [name for name in requested if not is_plugin(name)]
    while pending:
        name = pending.pop()
        if name not in wanted:
            wanted.add(name)
            pending.extend(CATALOGUE[name].needs)
    plugins = tuple(dict.fromkeys(name for name in requested if is_plugin(name)))
    return tuple(name for name in STAGE_ORDER if name in wanted) + plugins


def stage_metrics(stages: tuple[str, ...]) -> tuple[str, ...]:
    """Every metric the built-in ``stages`` give, in stage order."""
    return tuple(metric for name in stages if not is_plugin(name) for metric in CATALOGUE[name].metrics)
