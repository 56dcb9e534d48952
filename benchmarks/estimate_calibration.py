"""Section 2 of ``estimate_bench.py``: the shipped defaults against the public board measurements.

Every row of ``published_latency/mlperf_tiny_stm32.csv`` and ``tools/data/published_latency_extra.csv`` as :func:`mcudeploy.estimate.published.published_rows` reads it, measured with the Arm-derived
priors, then:

* **cross-validation**: leave-one-board-out and leave-one-model-out refits of the shipped model
  (:mod:`mcudeploy.estimate.cross_validation`), medians and worst cases over the rows whose library
  the training folds measured ("seen") and over every row; the same with the prior spreads halved
  and doubled (the medians must not hinge on one choice);
* **per-core CPI**: the prior (``data/cores.toml``) and the fitted figure of every core family;
* **per-label** scale and cross-validated errors (the band ``estimate`` prints);
* **stm32h743 at 280 MHz** with no other option (runtime ``mcudeploy``, the shipped defaults)
  against every published Cortex-M7 figure of the same model, scaled to 280 MHz by cycles.
"""
from __future__ import annotations

import statistics
from contextlib import contextmanager

from mcudeploy.driver import deploy
from mcudeploy.estimate import estimate, latency_fit
from mcudeploy.estimate.calibrate import measure_rows
from mcudeploy.estimate.cross_validation import cross_validate, label_errors, summary
from mcudeploy.estimate.latency_fit import FittedModel, fit
from mcudeploy.estimate.profiles import core_models
from mcudeploy.estimate.published import published_rows
from mcudeploy.options import DeploymentOptions
from paths import REPO, SHARED, SHARED_MODELS, git_commit

CSVS = [SHARED / "data" / "published_latency" / "mlperf_tiny_stm32.csv",
        REPO / "tools" / "data" / "published_latency_extra.csv"]
H743_CLOCK = 280e6


def rows_measured(deployment_of):
    rows = [row for path in CSVS if path.is_file() for row in published_rows(path, SHARED_MODELS)]
    measure_rows(rows, deployment_of)
    return rows


@contextmanager
def spreads(factor: float):
    saved = dict(latency_fit.PRIOR_SPREAD)
    latency_fit.PRIOR_SPREAD.update({key: value * factor for key, value in saved.items() if key in ("class", "core")})
    try:
        yield
    finally:
        latency_fit.PRIOR_SPREAD.update(saved)


def _prediction_rows(predictions) -> list[dict]:
    return [{"line": p.row.line, "left_out": p.group, "board": p.row.board, "label": p.row.label,
             "model": p.row.model.stem, "clock_mhz": p.row.clock_hz / 1e6, "measured_ms": p.row.measured_ms,
             "predicted_ms": round(p.predicted_ms, 3), "error": p.error, "seen": p.seen} for p in predictions]


def run_calibration(deployment_of) -> dict:
    rows = rows_measured(deployment_of)
    model = fit(rows)
    uncalibrated = FittedModel({}, {}, {}, 0.0)
    folds = {grouping: cross_validate(rows, grouping) for grouping in ("board", "model")}
    sensitivity = {}
    for factor in (0.5, 2.0):
        with spreads(factor):
            sensitivity[f"class and core prior spreads x{factor:g}"] = {
                grouping: summary(cross_validate(rows, grouping))["seen"]["median_abs_error"] for grouping in folds}
    cores = {}
    for family, factor in sorted(model.cores.items()):
        prior = core_models()[family]
        cores[family] = {"prior_dsp": prior.cpi["dsp"], "prior_scalar": prior.cpi["scalar"],
                         "dsp": prior.cpi["dsp"] * factor, "scalar": prior.cpi["scalar"] * factor, "factor": factor,
                         "rows": sum(1 for r in rows if r.family == family),
                         "boards": sorted({r.board for r in rows if r.family == family}),
                         "sources": list(prior.sources)}
    per_label = {grouping: label_errors(predictions) for grouping, predictions in folds.items()}
    return {"run": run_facts(), "rows": len(rows), "boards": sorted({r.board for r in rows}), "models": sorted({r.model.stem for r in rows}),
            "summary": {grouping: summary(predictions) for grouping, predictions in folds.items()},
            "anonymous": {grouping: summary(cross_validate(rows, grouping, anonymous=True))["all"] for grouping in folds},
            "uncalibrated_median_abs_error": statistics.median(abs(uncalibrated.predict(r) / r.measured_ms - 1)
                                                               for r in rows),
            "fit_median_abs_error": statistics.median(abs(model.predict(r) / r.measured_ms - 1) for r in rows),
            "sensitivity": sensitivity, "cores": cores, "flash_cycles_per_byte": model.flash_cycles_per_byte,
            "labels": {label: {"scale": scale, "rows": sum(1 for r in rows if r.label == label),
                               "board": per_label["board"].get(label), "model": per_label["model"].get(label)}
                       for label, scale in sorted(model.labels.items())},
            "predictions": {grouping: _prediction_rows(predictions) for grouping, predictions in folds.items()},
            "h743": run_h743(rows)}


def run_facts() -> dict:
    """Command, versions, commit and machine load of this run (the results file records them)."""
    import os
    import platform
    import sys

    import numpy
    commit = git_commit()
    return {"command": " ".join(["python benchmarks/estimate_bench.py", *sys.argv[1:]]).strip(),
            "python": platform.python_version(), "numpy": numpy.__version__, "git_commit": commit,
            "load_average_1min": os.getloadavg()[0], "cpus": os.cpu_count()}


def run_h743(rows) -> list[dict]:
    """`estimate MODEL --target stm32h743 --core-clock 280e6` against the published M7 rows."""
    results = []
    for model in sorted({r.model for r in rows if r.family == "cortex-m7"}):
        deployment = deploy(model, DeploymentOptions(target="stm32h743"))
        result = estimate(deployment, core_clock_hz=H743_CLOCK)
        library = estimate(deployment, runtime="cmsis-nn", core_clock_hz=H743_CLOCK)   # the libraries' model
        published = [r for r in rows if r.family == "cortex-m7" and r.model == model]
        scaled = [r.measured_ms * r.clock_hz / H743_CLOCK for r in published]
        results.append({"model": model.stem, "estimated_ms": result.latency_ms, "runtime": result.runtime,
                        "expected_error": result.expected_error, "band": result.expected_error_band,
                        "instruction_ratio": result.cpu_instructions / library.cpu_instructions,
                        "library_ms": library.latency_ms,
                        "published": [{"label": r.label, "board": r.board, "ms": r.measured_ms,
                                       "ms_at_280": s, "error": result.latency_ms / s - 1}
                                      for r, s in zip(published, scaled)],
                        "error_vs_median": result.latency_ms / statistics.median(scaled) - 1})
    return results


def _pct(value) -> str:
    return "-" if value is None else f"{value:+.1%}"


def _abs(value) -> str:
    return "-" if value is None else f"{value:.1%}"


def calibration_markdown(result: dict) -> list[str]:
    return (summary_markdown(result) + cores_markdown(result) + labels_markdown(result)
            + h743_markdown(result["h743"]) + h7a3_markdown(result["predictions"]["board"])
            + rows_markdown(result["predictions"]))


def summary_markdown(result: dict) -> list[str]:
    lines = ["## 2. Shipped defaults vs the published board latencies (cross-validated)", "",
             f"{result['rows']} public measurements ({len(result['boards'])} boards: {', '.join(result['boards'])}; "
             f"models {', '.join(result['models'])}), every one in the fit "
             "(`tools/fit_latency_defaults.py` -> `src/mcudeploy/estimate/data/calibration.toml`; model: "
             "`src/mcudeploy/estimate/latency_fit.py`). Cross-validation refits that model with the rows of one "
             "board (or one model) left out and predicts them; the test `tests/test_estimate_defaults.py` "
             "recomputes it from the data and fails above 15 %.", "",
             "Run: `{command}` (git {git_commit}, Python {python}, numpy {numpy}; load average {load_average_1min:.1f} "
             "on {cpus} CPUs: the figures are model outputs, not timings).".format(**result["run"]), "",
             "| | rows | median abs error | worst | worst row |", "|---|---|---|---|---|"]
    for name, grouping in (("leave-one-board-out", "board"), ("leave-one-model-out", "model")):
        for which, text in (("seen", "library measured by the training folds"), ("all", "every row")):
            entry = result["summary"][grouping][which]
            lines.append(f"| **{name}**, {text} | {entry['rows']} | **{_abs(entry['median_abs_error'])}** | "
                         f"{_pct(entry['worst_error'])} | {entry['worst']} |")
        entry = result["anonymous"][grouping]
        lines.append(f"| {name}, every row as an unnamed library (`--runtime cmsis-nn`) | {entry['rows']} | "
                     f"{_abs(entry['median_abs_error'])} | {_pct(entry['worst_error'])} | {entry['worst']} |")
    return lines + [
        "", f"For scale: the same rows with the Arm-derived priors and no calibration (the CMSIS-NN-class "
        f"instruction model x `data/cores.toml`): median {result['uncalibrated_median_abs_error']:.1%}; the "
        f"fit on all rows, in-sample: median {result['fit_median_abs_error']:.1%}. Sensitivity (seen rows): "
        + "; ".join(f"{name}: board-out {v['board']:.1%}, model-out {v['model']:.1%}"
                    for name, v in result["sensitivity"].items()) + ".", "",
        "What the data cannot support: four models, so a library's speed on a layer type the other three "
        "models lack is a guess (MobileNet-VWW's early 8- and 16-channel layers are where the newer "
        "X-CUBE-AI and Plumerai releases gained most: the worst leave-one-model-out rows); a library "
        "measured on one board only (microTVM, ONNC, X-CUBE-AI 8.0, the HALE max-performance build) has no "
        "leave-one-board-out estimate of its own (the 'every row' line: those rows are predicted with the "
        "framework's mean or the bare profile). The three STM32U3C5 rows are not in the fit: ResNet-8 at "
        "2.6 MACs per cycle is above a Cortex-M33's peak, they run on the U3C5's HSP accelerator."]


def cores_markdown(result: dict) -> list[str]:
    lines = ["", "### Per-core CPI (cycles per instruction of the measured instruction stream, zero wait states)", "",
             "| core | prior dsp | prior scalar | fitted dsp | fitted scalar | factor | rows | boards | prior source |",
             "|---|---|---|---|---|---|---|---|---|"]
    cores = result["cores"]
    for family, c in cores.items():
        lines.append(f"| {family} | {c['prior_dsp']:.3f} | {c['prior_scalar']:.3f} | **{c['dsp']:.3f}** | "
                     f"{c['scalar']:.3f} | x{c['factor']:.3f} | {c['rows']} | {', '.join(c['boards'])} | "
                     f"{'; '.join(c['sources'])} |")
    if "cortex-m7" in cores and "cortex-m4" in cores:
        lines += ["", f"Cortex-M7 : Cortex-M4 fitted dsp CPI ratio {cores['cortex-m7']['dsp'] / cores['cortex-m4']['dsp']:.2f} "
                  "(the issue measured 0.48-0.63 on the same libraries; CoreMark's ratio is 0.68). Only library "
                  "(dsp-class) code was measured on boards: the scalar CPI moves with the same factor, the Cortex-M55 "
                  "(no CPU rows) keeps its prior. The split between a core's CPI and a library's speed is partly "
                  "set by the priors: with the former CoreMark-scaled Cortex-M7 prior (dsp 0.81) the same fit gave "
                  "a fitted M7 dsp CPI of 0.64 and board-out / model-out medians of 8.9 % / 14.4 % (this revision's "
                  "dual-issue prior is physically argued, not chosen by these figures)."]
    return lines + ["", f"Flash: {result['flash_cycles_per_byte']:.3f} cycles per weight byte in flash (at the target's "
                    "clock) that the memory model's prefetch does not hide."]


def labels_markdown(result: dict) -> list[str]:
    lines = ["", "### Runtime labels (library versions): scale and cross-validated error", "",
             "| label | rows | scale | board-out median | board-out worst | model-out median | model-out worst |",
             "|---|---|---|---|---|---|---|"]
    for label, entry in result["labels"].items():
        b, m = entry["board"] or {}, entry["model"] or {}
        lines.append(f"| {label} | {entry['rows']} | x{entry['scale']:.3f} | {_abs(b.get('median'))} | "
                     f"{_abs(b.get('worst'))} | {_abs(m.get('median'))} | {_abs(m.get('worst'))} |")
    return lines


def rows_markdown(predictions: dict) -> list[str]:
    lines = []
    for grouping in ("board", "model"):
        lines += ["", f"### Every row, leave-one-{grouping}-out", "",
                  "CSV line: of `published_latency/mlperf_tiny_stm32.csv`; the x-cube-ai 7.1 rows: of "
                  "`tools/data/published_latency_extra.csv`.", "",
                  "| CSV line | left out | board | label | model | MHz | measured ms | predicted ms | error | label seen |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {r['line']} | {r['left_out']} | {r['board']} | {r['label']} | {r['model']} | "
                  f"{r['clock_mhz']:g} | {r['measured_ms']:g} | {r['predicted_ms']:g} | {_pct(r['error'])} | "
                  f"{'yes' if r['seen'] else 'no'} |" for r in predictions[grouping]]
    return lines


def h743_markdown(rows: list[dict]) -> list[str]:
    lines = ["", "### `mcudeploy estimate MODEL --target stm32h743 --core-clock 280e6` (no other option)", "",
             "The default runtime is `mcudeploy` (our own kernels: their instructions are QEMU-exact, their CPI "
             "the fitted Cortex-M7 figure); no board measured our code, so the band printed is the cross-validated "
             "error of predicting a library the fit never saw (every row predicted with no library label). Published Cortex-M7 figures (STM32F746 at 216 MHz, STM32H7A3 at 280 MHz) scaled "
             "to 280 MHz by cycles.", "",
             "| model | estimated ms | published ms at 280 MHz (label) | error vs each | error vs their median | "
             "instructions mcudeploy / CMSIS-NN model | `--runtime cmsis-nn` ms |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        published = ", ".join(f"{p['ms_at_280']:.2f} ({p['label']})" for p in r["published"])
        errors = ", ".join(_pct(p["error"]) for p in r["published"])
        lines.append(f"| {r['model']} | {r['estimated_ms']:.3f} | {published} | {errors} | **{_pct(r['error_vs_median'])}** | "
                     f"{r.get('instruction_ratio', 0):.2f} | {r.get('library_ms', 0):.3f} |")
    if rows:
        band = rows[0].get("band")
        inside = sum(abs(r["error_vs_median"]) <= band for r in rows) if band else 0
        lines += ["", f"Band printed by `estimate` beside the figure: **+-{band:.1%}** ({rows[0]['expected_error']}): "
                      "the larger of the two medians of predicting an unlabelled library, because mcudeploy's kernels "
                      "are a library no board measured and they run fewer instructions than the libraries the rows "
                      "measured (the instruction ratio column), so their distance from the published median is "
                      "expected, not only error. "
                      f"{inside} of {len(rows)} models within it (the test "
                      "`tests/test_estimate_defaults.py::test_h743_default_estimate_is_within_its_printed_band`). "
                      "The comparison is with the median of the libraries published on that core, not one library: "
                      "the default runtime is mcudeploy's own kernels, which none of them is (notes/DECISIONS.md, "
                      "2026-12-02)."]
        leanest = min(rows, key=lambda r: r.get("instruction_ratio", 1.0))
        if leanest is min(rows, key=lambda r: r["error_vs_median"]):
            lines += ["", f"The model with the lowest instruction ratio ({leanest['model']}, "
                          f"{leanest['instruction_ratio']:.2f}: mcudeploy's kernels against the CMSIS-NN-class "
                          "instruction model the libraries are fitted with, both QEMU-measured) has the most negative "
                          f"error ({_pct(leanest['error_vs_median'])}): the distance from the libraries' median follows "
                          "the code that runs, which is what the default estimates; no board measured mcudeploy's "
                          "code, so nothing in the public data can tell a cost-model error apart from it."]
    return lines


def h7a3_markdown(predictions: list[dict]) -> list[str]:
    """The board the stm32h743 at 280 MHz case is: its rows predicted with the board left out."""
    rows = [p for p in predictions if p["board"].startswith("NUCLEO-H7A3")]
    if not rows:
        return []
    lines = ["", "The same core at the same clock with the library that ran there: the NUCLEO-H7A3ZI-Q rows "
             "(X-CUBE-AI 7.1, 280 MHz, estimated on stm32h743's memories) predicted by the fit on every "
             "other board (`--runtime \"x-cube-ai 7.1\"`):", "",
             "| model | measured ms | predicted ms (board left out) | error |", "|---|---|---|---|"]
    lines += [f"| {p['model']} | {p['measured_ms']:g} | {p['predicted_ms']:g} | {_pct(p['error'])} |" for p in rows]
    return lines
