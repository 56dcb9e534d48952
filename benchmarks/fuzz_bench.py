"""The long fuzz campaign: thousands of seeded bad inputs against the command line.

    python benchmarks/fuzz_bench.py [--seed 1] [--count 3060] [--workers 2] [--timeout 30]

Runs ``tests/fuzz_cases.py`` (every family: model bytes, ONNX / TFLite structure, data
files, options, targets, hostile names, output paths, degenerate graphs, and the second
campaign's project files, deploy state, run stores, sweep files, search logs, doctor logs,
special files and long names of ``tests/fuzz_surfaces.py``) through
``tests/fuzz_harness.py`` (each case in a worker process, judged on exit code, tracebacks,
signals, hangs, files altered that the command was not told to write, escapes printed or
written) and writes the counts per family, the exit codes seen and every failing case to
``benchmarks/results/fuzz.md`` and ``fuzz.json``. The short version of the same campaign is
``tests/test_fuzz.py``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import Counter, defaultdict

from paths import REPO, RESULTS

sys.path.insert(0, str(REPO / "tests"))
import fuzz_harness  # noqa: E402

COLUMNS = ["cases", "passed", "tracebacks", "signals", "hangs", "altered files", "unsafe output",
           "bad message", "exit 0"]


def _versions() -> str:
    import numpy
    import onnx

    import mcudeploy

    return (f"mcudeploy {mcudeploy.__version__}, Python {platform.python_version()}, numpy {numpy.__version__}, "
            f"onnx {onnx.__version__}")


def _markdown(args, results, counts, codes, seconds: float, machine: dict) -> str:
    lines = ["# Fuzz campaign", "",
             f"`python benchmarks/fuzz_bench.py --seed {args.seed} --count {args.count} "
             f"--workers {args.workers} --timeout {args.timeout:g}`: {len(results)} cases in "
             f"{seconds:.0f} s on {args.workers} worker(s); {machine['versions']}; {machine['cores']} cores, "
             f"load average {machine['load_before']} before, {machine['load_after']} after "
             "(the machine is shared).", "",
             "A case passes when the exit code is 0 or an error class (1-9) with one "
             "`mcudeploy: error:` line, nothing escaped `main`, no signal, no hang, no file "
             "changed that the command was not told to write (every case folder also holds files "
             "nothing may touch), nothing written outside the case folder (beside it, or in `/dev`), "
             "and no terminal escape or bidi control printed or written into generated sources (see "
             "tests/fuzz_harness.py). Families: tests/fuzz_cases.py (first campaign) and "
             "tests/fuzz_surfaces.py (issue 26: project files, deploy state, run stores, sweep files, "
             "search logs, doctor logs, special files, long names); cases run in-process in two worker "
             "processes, those that start a Dask cluster or a full deploy as `python -m mcudeploy`.", "",
             "| family | " + " | ".join(COLUMNS) + " | exit codes |",
             "|---|" + "---|" * (len(COLUMNS) + 1)]
    for family, row in counts.items():
        seen = ", ".join(f"{code}: {n}" for code, n in sorted(codes[family].items(), key=str))
        lines.append(f"| {family} | " + " | ".join(str(row.get(c, 0)) for c in COLUMNS) + f" | {seen} |")
    spent = Counter()
    for result in results:
        spent[result.family] += result.seconds
    totals = Counter()
    for row in counts.values():
        totals.update(row)
    lines.append("| **all** | " + " | ".join(f"**{totals.get(c, 0)}**" for c in COLUMNS) + " | |")
    lines += ["", "Seconds per family (sum over cases): " + ", ".join(
        f"{family} {spent[family]:.0f}" for family in counts) + ".", ""]
    failures = [r for r in results if not r.passed]
    lines += ["", f"## Failing cases ({len(failures)})", ""]
    lines += [f"- {r.index} {r.family}/{r.name}: {'; '.join(r.problems())}" for r in failures] or ["none"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=3060)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args()
    machine = {"versions": _versions(), "cores": os.cpu_count(),
               "load_before": " / ".join(f"{load:.1f}" for load in os.getloadavg())}
    started = time.perf_counter()
    results = fuzz_harness.run_campaign(args.seed, args.count, workers=args.workers, timeout=args.timeout)
    seconds = time.perf_counter() - started
    machine["load_after"] = " / ".join(f"{load:.1f}" for load in os.getloadavg())
    counts = fuzz_harness.summary(results)
    codes: dict[str, Counter] = defaultdict(Counter)
    for result in results:
        codes[result.family][result.code if result.code is not None else "none"] += 1
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "fuzz.md").write_text(_markdown(args, results, counts, codes, seconds, machine))
    (RESULTS / "fuzz.json").write_text(json.dumps({
        "seed": args.seed, "count": args.count, "workers": args.workers, "seconds": round(seconds, 1),
        "timeout": args.timeout, "machine": machine,
        "families": counts, "exit_codes": {f: {str(k): v for k, v in c.items()} for f, c in codes.items()},
        "failures": [{"index": r.index, "family": r.family, "name": r.name, "problems": r.problems()}
                     for r in results if not r.passed]}, indent=1) + "\n")
    print((RESULTS / "fuzz.md").read_text())


if __name__ == "__main__":
    main()
