"""Arm's Vela compiler as the search's second back end (Ethos-U55 / U65 / U85 targets). This is
the only module that runs Vela.

    vela_setup(model, target, options, request) -> VelaSetup
    evaluate_vela(setup, config, constraints) -> Trial

Vela (``ethos-u-vela``) runs as a subprocess with a timeout, in a fresh folder per trial, with
the knobs of the configuration (:data:`VELA_KNOBS`)::

    vela MODEL.tflite --output-dir DIR --accelerator-config ACC --config vela.ini
         --system-config SYS --memory-mode MODE --optimise Performance|Size
         [--arena-cache-size BYTES] --tensor-allocator HillClimb|Greedy|LinearAlloc

``vela.ini`` is generated from the target (:func:`vela_ini`): the NPU clock, the AXI ports
(SRAM on AXI0; flash, or PSRAM as ``Dram``, on AXI1) and each memory's clock scale,

    clock_scale = bandwidth / (NPU clock x 8 bytes)      (the 64-bit AXI ports; at most 1)

and the three memory modes of Arm's documentation (``Sram_Only``, ``Shared_Sram``,
``Dedicated_Sram``). The accelerator configuration comes from the target's NPU name
(``Arm Ethos-U55-128`` -> ``ethos-u55-128``).

Vela's summary CSV gives the figures (``sram_memory_used`` / ``off_chip_flash_memory_used`` /
``dram_memory_used`` in KiB, ``cycles_total``, ``inference_time``); its text output the
operators that fall back to the CPU and why. In ``Sram_Only`` mode the weights' area is the
SRAM port (Vela's summary calls it on-chip flash): they count as SRAM, on top of the arena. The trial's reasons are the same as the
pipeline's: ``RAM_NOFIT`` when Vela's SRAM exceeds the target's NPU SRAM (capped at
``sram_limit``, less ``reserve``), ``FLASH_NOFIT`` likewise for flash, ``NPU_CONSTRAINT``
for CPU operators with ``npu_only``. A crash, an error or a timeout of Vela is a FAIL
``UNSUPPORTED`` with Vela's own last message, never an exception of ours.
"""
from __future__ import annotations

import csv
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import McuDeployError, UsageError
from .reasons import FLASH_NOFIT, NPU_CONSTRAINT, RAM_NOFIT, UNSUPPORTED, Constraints, Reason, exact
from .space import Space, SpaceContext
from .trial import FAIL, PASS, Metrics, Trial

if TYPE_CHECKING:
    from ..targets import MemoryRegion, Target

logger = logging.getLogger(__name__)
VELA_VARIABLE = "MCUDEPLOY_VELA"          # the Vela executable (default: ``vela`` on PATH)
TIMEOUT = 300.0
AXI_BYTES = 8
ACCELERATOR = re.compile(r"ethos-u(55|65|85)-(\d+)")
OPTIMISE = ("Performance", "Size")
MEMORY_MODES = ("Shared_Sram", "Sram_Only", "Dedicated_Sram")
ALLOCATORS = ("HillClimb", "Greedy", "LinearAlloc")
MODE_AREAS = {"Sram_Only": ("Axi0", "Axi0", "Axi0"), "Shared_Sram": ("Axi1", "Axi0", "Axi0"),
              "Dedicated_Sram": ("Axi1", "Axi1", "Axi0")}     # const, arena, cache memory areas
VELA_KNOBS = ("optimise", "memory_mode", "arena_cache_size", "tensor_allocator", "accelerator_config",
              "system_config")


@dataclass
class VelaSetup:
    model: Path
    target_name: str
    accelerator: str
    ini: Path
    system_config: str
    sram_region: str
    sram_bytes: int                     # what Vela's SRAM may take (capacity, sram_limit, reserve)
    flash_region: str
    flash_bytes: int
    executable: list[str]
    timeout: float = TIMEOUT
    ini_text: str = ""                  # kept when the search ends and its folder is removed


def vela_command() -> list[str]:
    """How to run Vela: ``$MCUDEPLOY_VELA``, else ``vela`` on PATH; a UsageError when missing."""
    given = os.environ.get(VELA_VARIABLE)
    found = shutil.which(given or "vela")
    if found is None:
        raise UsageError(f"--backend vela: the Vela compiler {'(' + given + ') ' if given else ''}was not found; "
                         "install it (pip install ethos-u-vela) or set MCUDEPLOY_VELA to its executable")
    return [found]


def accelerator_of(target: Target) -> str:
    """Vela's ``--accelerator-config`` from the target's NPU name (module docstring)."""
    match = ACCELERATOR.search((target.npu.name if target.npu else "").lower().replace(" ", "-"))
    if match is None:
        raise UsageError(f"--backend vela needs an Arm Ethos-U target; target {target.name!r} has "
                         f"{'NPU ' + repr(target.npu.name) if target.npu else 'no NPU'} (built-in Ethos-U targets: "
                         "alif-e7-he, alif-e7-hp)")
    return f"ethos-u{match.group(1)}-{match.group(2)}"


def _scale(region: MemoryRegion, clock_hz: float) -> float:
    return round(min(1.0, region.speed / (clock_hz * AXI_BYTES)), 6)


def vela_ini(target: Target, name: str) -> str:
    """The vela.ini text for ``target`` (module docstring)."""
    if target.npu is None:   # accelerator_of refused it first
        raise UsageError(f"--backend vela needs an Arm Ethos-U target; target {target.name!r} has no NPU")
    clock = target.npu.clock_hz
    sram = _npu_sram(target)
    flash = _flash(target)
    psram = next((r for r in target.regions if r.kind == "psram" and r.writable), None)
    second = psram or flash
    port = "Dram" if psram is not None else ("OffChipFlash" if flash is not None else "OnChipFlash")
    lines = [f"; generated by mcudeploy from target {target.name} ({target.source})",
             f"[System_Config.{name}]", f"core_clock={clock:.6g}", "axi0_port=Sram", f"axi1_port={port}",
             f"Sram_clock_scale={_scale(sram, clock)}", "Sram_burst_length=32",
             f"Sram_read_latency={max(1, sram.latency_cycles)}", f"Sram_write_latency={max(1, sram.latency_cycles)}"]
    if second is not None:
        latency = max(1, second.latency_cycles)
        lines += [f"{port}_clock_scale={_scale(second, clock)}", f"{port}_burst_length=128",
                  f"{port}_read_latency={latency}", f"{port}_write_latency={latency if psram else 0}"]
    for mode, (const, arena, cache) in MODE_AREAS.items():
        lines += ["", f"[Memory_Mode.{mode}]", f"const_mem_area={const}", f"arena_mem_area={arena}",
                  f"cache_mem_area={cache}"]
    return "\n".join(lines) + "\n"


def _npu_sram(target: Target):
    regions = [r for r in target.regions if r.on_chip and r.writable and r.holds_data and r.npu_access]
    if not regions:
        raise UsageError(f"target {target.name!r} has no on-chip RAM the NPU reaches: Vela needs one for its arena")
    return max(regions, key=lambda r: r.size)


def _flash(target: Target):
    return max((r for r in target.regions if r.kind == "flash"), key=lambda r: r.size, default=None)


def vela_setup(model: Path | None, target: Target, options, request) -> VelaSetup:
    """Check the model and the target for Vela and write the vela.ini (module docstring)."""
    if model is None or Path(model).suffix.lower() != ".tflite":
        raise UsageError(f"--backend vela compiles TFLite models; {model or 'an in-memory graph'} is not a .tflite file")
    accelerator, executable = accelerator_of(target), vela_command()
    sram, flash = _npu_sram(target), _flash(target)
    limit = sram.size if options.sram_limit is None else min(sram.size, options.sram_limit)
    folder = Path(tempfile.mkdtemp(prefix="mcudeploy-vela-"))
    name = re.sub(r"\W", "_", target.name)
    ini = folder / "vela.ini"
    ini.write_text(vela_ini(target, name), encoding="utf-8")
    return VelaSetup(Path(model), target.name, accelerator, ini, name, sram.name, max(0, limit - options.reserve),
                     flash.name if flash else "", flash.size if flash else 0, executable)


def vela_space(context: SpaceContext, locked: frozenset[str], overrides: dict[str, list]) -> Space:
    """Vela's knobs as a :class:`~.space.Space` (the first value of each is Vela's default)."""
    for name in overrides:
        if name not in VELA_KNOBS:
            raise UsageError(f"--space: unknown Vela knob {name!r}; the Vela knobs are {', '.join(VELA_KNOBS)}")
    accelerator = accelerator_of(context.target)
    sram = _npu_sram(context.target).size
    modes = MEMORY_MODES if accelerator.startswith(("ethos-u65", "ethos-u85")) else MEMORY_MODES[:2]
    values = {"optimise": OPTIMISE, "memory_mode": modes, "tensor_allocator": ALLOCATORS,
              "arena_cache_size": (None, sram // 2, sram // 8, sram // 32),
              "accelerator_config": (accelerator,), "system_config": ("target",)}
    values.update({name: tuple(v) for name, v in overrides.items()})
    return Space(values, frozenset(locked), context.base)


def command_line(setup: VelaSetup, config: dict[str, Any], ini: str = "vela.ini", folder: str = "OUT") -> str:
    """The Vela command of ``config`` as a user would type it (``ini``: where the generated
    vela.ini is written)."""
    arguments = _arguments(setup, config, Path(folder))[len(setup.executable):]
    arguments[arguments.index("--config") + 1] = ini
    return " ".join(["vela", *arguments])


def _arguments(setup: VelaSetup, config: dict[str, Any], folder: Path) -> list[str]:
    system = setup.system_config if config.get("system_config", "target") == "target" else config["system_config"]
    arguments = [*setup.executable, str(setup.model), "--output-dir", str(folder),
                 "--accelerator-config", config.get("accelerator_config") or setup.accelerator,
                 "--config", str(setup.ini), "--system-config", system,
                 "--memory-mode", config.get("memory_mode") or "Shared_Sram",
                 "--optimise", config.get("optimise") or "Performance",
                 "--tensor-allocator", config.get("tensor_allocator") or "HillClimb"]
    if config.get("arena_cache_size"):
        arguments += ["--arena-cache-size", str(int(config["arena_cache_size"]))]
    return arguments


def _failure(config, message: str, started: float) -> Trial:
    return Trial(dict(config), FAIL, [Reason(UNSUPPORTED, f"Vela: {message}", {"backend": "vela"})],
                 seconds=time.perf_counter() - started)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def run_vela(setup: VelaSetup, config: dict[str, Any]) -> tuple[dict[str, str] | None, str, str]:
    """(summary CSV row or None, stdout, the failure message or "")."""
    with tempfile.TemporaryDirectory(prefix="vela-trial-") as folder:
        try:
            done = subprocess.run(_arguments(setup, config, Path(folder)), capture_output=True, text=True,
                                  timeout=setup.timeout, cwd=folder)
        except subprocess.TimeoutExpired:
            return None, "", f"timed out after {setup.timeout:g} s"
        except OSError as err:
            return None, "", f"could not start ({err})"
        summaries = sorted(Path(folder).glob("*_summary_*.csv"))
        if done.returncode != 0 or not summaries or "Traceback" in done.stderr:
            return None, done.stdout, f"failed (exit {done.returncode}): {_last_line(done.stderr or done.stdout)}"
        with summaries[0].open(newline="", encoding="utf-8") as stream:
            rows = list(csv.DictReader(stream))
        return (rows[0] if rows else None), done.stdout, "" if rows else "wrote an empty summary"


def _operators(stdout: str) -> tuple[int, int, list[str]]:
    cpu = re.search(r"CPU operators\s*=\s*(\d+)", stdout)
    npu = re.search(r"NPU operators\s*=\s*(\d+)", stdout)
    reasons = sorted({line.strip() for line in stdout.splitlines() if line.strip().startswith("Reason:")})
    return (int(cpu.group(1)) if cpu else 0), (int(npu.group(1)) if npu else 0), reasons


def evaluate_vela(setup: VelaSetup, config: dict[str, Any], constraints: Constraints) -> Trial:
    """One trial through Vela (module docstring)."""
    started = time.perf_counter()
    try:
        row, stdout, failure = run_vela(setup, config)
    except McuDeployError as err:
        return _failure(config, str(err), started)
    if row is None:
        return _failure(config, failure, started)
    kib = lambda key: int(round(float(row.get(key) or 0) * 1024))     # noqa: E731 - Vela reports KiB
    weights = kib("off_chip_flash_memory_used") + kib("on_chip_flash_memory_used")
    sram, flash, dram = kib("sram_memory_used"), weights, kib("dram_memory_used")
    if MODE_AREAS.get(config.get("memory_mode") or "Shared_Sram", ("",))[0] == "Axi0":
        sram += kib("on_chip_flash_memory_used")       # Sram_Only: the weights live in the SRAM too
    cpu, npu, cpu_reasons = _operators(stdout)
    metrics = Metrics(latency_us=float(row.get("inference_time") or 0) * 1e6, latency_complete=True,
                      on_chip_bytes=sram, external_bytes=dram, flash_bytes=flash, arena_bytes=sram,
                      arena_region=setup.sram_region,
                      extra={"vela_cycles": int(float(row.get("cycles_total") or 0)), "vela_sram_bytes": sram,
                             "cpu_operators": cpu, "npu_operators": npu,
                             "vela_npu_cycles": int(float(row.get("cycles_npu") or 0))})
    reasons = []
    if sram > setup.sram_bytes:
        reasons.append(Reason(RAM_NOFIT, f"SRAM overflow in {setup.sram_region}: Vela uses {exact(sram)}, available "
                                         f"{exact(setup.sram_bytes)}",
                              {"region": setup.sram_region, "needed": sram, "available": setup.sram_bytes}))
    flash_limit = min(x for x in (setup.flash_bytes or None, constraints.flash_limit) if x is not None) \
        if (setup.flash_bytes or constraints.flash_limit) else None
    if flash_limit is not None and flash > flash_limit:
        reasons.append(Reason(FLASH_NOFIT, f"flash: Vela's weights and command stream need {exact(flash)}, "
                                           f"available {exact(flash_limit)}", {"needed": flash, "available": flash_limit}))
    if constraints.npu_only and cpu:
        reasons.append(Reason(NPU_CONSTRAINT, f"{cpu} operator(s) on the CPU: " + ("; ".join(cpu_reasons[:3]) or
                                                                                 "see vela --show-cpu-operations"),
                              {"cpu_operators": cpu}))
    return Trial(dict(config), FAIL if reasons else PASS, reasons, metrics, seconds=time.perf_counter() - started)


def our_estimate(model: Path | None, target: Target, options) -> dict[str, Any]:
    """mcudeploy's own deployment and latency estimate of the model on the target, to report
    beside Vela's (the same model, our planner and cost model)."""
    from ..driver import deploy
    from ..estimate import estimate
    assert model is not None  # the Vela back end has a model file (vela_setup checks)
    try:
        deployment = deploy(model, options, target=target)
        latency = estimate(deployment)
    except McuDeployError as err:
        return {"mcudeploy_error": str(err)}
    return {"mcudeploy_latency_ms": round(latency.latency_ms, 4), "mcudeploy_complete": latency.complete,
            "mcudeploy_arena_bytes": deployment.plan.arena_bytes, "mcudeploy_fits": deployment.fits,
            "mcudeploy_npu_offload_macc": round(deployment.mapping.macc_rate, 4) if deployment.mapping else None}

