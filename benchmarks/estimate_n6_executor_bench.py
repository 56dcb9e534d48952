"""STM32N6, one executor per deployment (issue 22): what ``generate``, ``estimate`` and ``search``
say runs each node, and the default estimate's instruction count against QEMU M55, measured
afresh in this run (no cache).

    python benchmarks/estimate_n6_executor_bench.py [--models resnet8_int8 ...]

Per model on ``--target stm32n6``:

* **default** (``executor = "mcudeploy"``, no option): devices of the deployment's mapping, of
  the estimate's layers, of the generated code (its layer table) and of a short latency search's
  best configuration (budget 3); the estimate's CPU instructions against the generated code's
  count on mps3-an547 (Cortex-M55, ``-icount shift=0``), and the estimate's latency.
* **vendor-npu**: the same devices (the generated code there is the hand-off's CPU partitions
  and the NPU partitions ST Edge AI compiles) and the NPU estimate, weights where the vendor
  keeps them.

Results: ``benchmarks/results/estimate_n6_executor.md`` (versions, command, machine load).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import re
import subprocess
import sys
import time
from collections import Counter

from mcudeploy.codegen import generate_files
from mcudeploy.driver import deploy
from mcudeploy.estimate import estimate
from mcudeploy.options import DeploymentOptions
from mcudeploy.search import SearchRequest, run_search
from mcudeploy.validate.generated_code import random_integer_feeds, run_generated
from paths import RESULTS, SHARED_MODELS, git_commit

log = logging.getLogger("estimate_n6_executor_bench")
OUT = RESULTS / "estimate_n6_executor.md"


def generated_nodes(deployment) -> list[str]:
    """Node names of the generated network's layer table (network_layer_names)."""
    text = generate_files(deployment)["network.c"]
    table = text.split("network_layer_names[NETWORK_LAYER_COUNT] = {")[1].split("};")[0]
    return [json.loads(literal) for literal in re.findall(r'"(?:[^"\\]|\\.)*"', table)]


def devices(mapping_of: dict[str, str]) -> str:
    return ", ".join(f"{count} {device}" for device, count in sorted(Counter(mapping_of.values()).items()))


def searched_devices(path, executor: str) -> dict[str, str]:
    options = DeploymentOptions(target="stm32n6", executor=executor)
    result = run_search(path, SearchRequest(target="stm32n6", options=options, objective="latency", budget=3,
                                            critical_limit=False, fixes=False))
    best = deploy(path, result.best_options())
    return {layer.node: layer.device for layer in estimate(best).layers}


def run_model(model: str) -> dict:
    path = SHARED_MODELS / "mlperf_tiny" / f"{model}.tflite"
    row: dict = {"model": model}
    for executor in ("mcudeploy", "vendor-npu"):
        deployment = deploy(path, DeploymentOptions(target="stm32n6", executor=executor))
        result = estimate(deployment)
        mapping = {p.node: p.device for p in deployment.mapping.placements}
        estimated = {layer.node: layer.device for layer in result.layers}
        entry = {"mapping": devices(mapping), "estimate_agrees": all(mapping[n] == d for n, d in estimated.items()),
                 "search_agrees": searched_devices(path, executor) == estimated,
                 "latency_ms": result.latency_ms, "executor": result.executor,
                 "weights_regions": sorted(set(deployment.plan.weights.values()))}
        if executor == "mcudeploy":
            entry["generate_agrees"] = sorted(generated_nodes(deployment)) == sorted(
                node for node, device in mapping.items() if device == "cpu")
            start = time.perf_counter()
            measured = run_generated(deployment, random_integer_feeds(deployment.graph, 1, seed=5), "qemu-m55",
                                     profile=True)
            entry.update(qemu_seconds=time.perf_counter() - start, measured=measured.instructions[0],
                         estimated=result.cpu_instructions,
                         error=result.cpu_instructions / measured.instructions[0] - 1)
        row[executor] = entry
        log.info("%s %s done", model, executor)
    return row


def facts() -> dict:
    import numpy
    commit = git_commit()
    qemu = subprocess.run(["qemu-system-arm", "--version"], capture_output=True, text=True).stdout.splitlines()
    return {"command": " ".join(["python benchmarks/estimate_n6_executor_bench.py", *sys.argv[1:]]),
            "git": commit, "python": platform.python_version(), "numpy": numpy.__version__,
            "qemu": qemu[0] if qemu else "?", "load_average_1min": os.getloadavg()[0], "cpus": os.cpu_count()}


def markdown(rows: list[dict], run: dict) -> list[str]:
    lines = ["# STM32N6: one executor per deployment, and the default estimate against QEMU M55", "",
             f"Run: `{run['command']}` (git {run['git']}, Python {run['python']}, numpy {run['numpy']}, {run['qemu']}; "
             f"load average {run['load_average_1min']:.1f} on {run['cpus']} CPUs: instruction counts do not depend on "
             "it). Method: the script's docstring. QEMU measured in this run, no cache.", "",
             "| model | executor | devices (mapping) | estimate agrees | search's best agrees | generate agrees | "
             "weights in | estimated ms | QEMU M55 instructions | estimated | error |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    yes = lambda flag: "-" if flag is None else ("yes" if flag else "**no**")   # noqa: E731
    for row in rows:
        for executor in ("mcudeploy", "vendor-npu"):
            e = row[executor]
            counts = (f"{e['measured']} | {e['estimated']:.0f} | **{e['error']:+.2%}**" if "measured" in e
                      else "- | - | -")
            lines.append(f"| {row['model']} | {executor} | {e['mapping']} | {yes(e['estimate_agrees'])} | "
                         f"{yes(e['search_agrees'])} | {yes(e.get('generate_agrees'))} | "
                         f"{', '.join(e['weights_regions'])} | {e['latency_ms']:.3f} | {counts} |")
    lines += ["", "Under `vendor-npu` the generated code is the hand-off (`codegen/vendor_npu`: NPU partitions as "
                  "model files for ST Edge AI, CPU partitions as mcudeploy code); `tests/test_executor.py` checks its "
                  "devices against the mapping, `tests/test_estimate_executor.py` the search's."]
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["resnet8_int8", "dscnn_kws_int8", "mobilenetv1_vww_int8",
                                                        "fc_autoencoder_int8"])
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("mcudeploy").setLevel(logging.ERROR)
    rows = [run_model(model) for model in args.models]
    run = facts()
    OUT.with_suffix(".json").write_text(json.dumps({"run": run, "rows": rows}, indent=1) + "\n")
    OUT.write_text("\n".join(markdown(rows, run)) + "\n")
    log.info("wrote %s", OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
