"""Fit the estimator's shipped defaults to every public board measurement (generated data).

    python tools/fit_latency_defaults.py [--csv FILE ...] [--check]

Reads the published latencies (default: ``../shared/data/published_latency/mlperf_tiny_stm32.csv``
and ``tools/data/published_latency_extra.csv``, the public rows added here, each citing its source
URL; ``--csv`` replaces the list), estimates every row
with the Arm-derived priors (:func:`mcudeploy.estimate.calibrate.measure_rows`), fits the
regularised board-latency model on all of them (:mod:`mcudeploy.estimate.latency_fit`),
cross-validates it leave-one-board-out and leave-one-model-out
(:mod:`mcudeploy.estimate.cross_validation`) and writes
``src/mcudeploy/estimate/data/calibration.toml``: the fitted CPI of every measured core family,
one scale per runtime label (library version), the class factors per framework, the flash
cost, and each label's cross-validated median and worst error (``[errors]``, the band
``estimate`` prints; ``"cmsis-nn"``: every row predicted as an unnamed library of the class;
``"*"``: the labelled rows', printed for mcudeploy's own code, which no board measured). The
header stamps the date, the command, the git commit and the rows. Nobody edits that file by
hand: re-run this script. ``--check`` writes nothing and exits 1 when the file differs from a
fresh fit (other than its date line).
"""
from __future__ import annotations

import argparse
import logging
import subprocess
import sys
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
DEFAULT_CSVS = [SHARED / "data" / "published_latency" / "mlperf_tiny_stm32.csv",
                REPO / "tools" / "data" / "published_latency_extra.csv"]
OUTPUT = REPO / "src" / "mcudeploy" / "estimate" / "data" / "calibration.toml"

log = logging.getLogger("fit_latency_defaults")


@lru_cache(maxsize=None)
def deployment_of(model: Path, target: str):
    from mcudeploy.driver import deploy
    from mcudeploy.options import DeploymentOptions
    return deploy(model, DeploymentOptions(target=target))


def public_rows(csvs: list[Path]):
    """Every usable row of the CSVs, measured with the priors."""
    from mcudeploy.estimate.calibrate import measure_rows
    from mcudeploy.estimate.published import published_rows
    rows = []
    for path in csvs:
        if path.is_file():
            rows += published_rows(path, SHARED / "models")
    measure_rows(rows, deployment_of)
    return rows


def fitted_overlay(rows, source: str):
    """The overlay of the fit on every row, with each label's cross-validated errors."""
    from mcudeploy.estimate.calibrate import fitted_lines, overlay_of
    from mcudeploy.estimate.cross_validation import cross_validate, label_errors, summary
    from mcudeploy.estimate.latency_fit import fit
    model = fit(rows)
    overlay = overlay_of(model, rows, source)
    folds = {grouping: cross_validate(rows, grouping) for grouping in ("board", "model")}
    per_label = {grouping: label_errors(predictions) for grouping, predictions in folds.items()}
    for label in sorted(set(per_label["board"]) | set(per_label["model"])):
        entry = {}
        for grouping, key in (("board", "leave_one_board_out"), ("model", "leave_one_model_out")):
            if label in per_label[grouping]:       # a library measured on one board has no board-out error
                entry[key] = per_label[grouping][label]["median"]
                entry[key + "_worst"] = per_label[grouping][label]["worst"]
        overlay.errors[label] = entry
    anonymous = {grouping: summary(cross_validate(rows, grouping, anonymous=True))["all"] for grouping in folds}
    overlay.errors["cmsis-nn"] = {"leave_one_board_out": anonymous["board"]["median_abs_error"],
                                  "leave_one_board_out_worst": abs(anonymous["board"]["worst_error"]),
                                  "leave_one_model_out": anonymous["model"]["median_abs_error"],
                                  "leave_one_model_out_worst": abs(anonymous["model"]["worst_error"])}
    totals = {grouping: summary(predictions)["seen"] for grouping, predictions in folds.items()}
    overlay.errors["*"] = {"leave_one_board_out": totals["board"]["median_abs_error"],
                           "leave_one_board_out_worst": abs(totals["board"]["worst_error"]),
                           "leave_one_model_out": totals["model"]["median_abs_error"],
                           "leave_one_model_out_worst": abs(totals["model"]["worst_error"])}
    return overlay, model, totals, fitted_lines(model, rows)


def _git_commit() -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "src"], cwd=REPO, capture_output=True,
                               text=True, check=True).stdout.strip()
        return commit + (" (working tree modified)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def render(rows, overlay, totals, lines, csvs: list[Path]) -> str:
    from mcudeploy.estimate.overlay import overlay_toml
    sources = ", ".join(str(p.relative_to(REPO) if p.is_relative_to(REPO) else p.relative_to(REPO.parent))
                        for p in csvs if p.is_file())
    overlay.header = "\n".join([
        "Shipped defaults of the latency estimator: GENERATED by python tools/fit_latency_defaults.py; do not edit.",
        f"date {datetime.now(timezone.utc).strftime('%Y-%m-%d')}, git {_git_commit()}",
        f"{len(rows)} public measurements ({sources}), {len({r.board for r in rows})} boards, "
        f"{len({r.model for r in rows})} models, {len({r.label for r in rows})} runtime labels",
        f"cross-validated (rows whose library the training folds measured): leave-one-board-out median "
        f"{totals['board']['median_abs_error']:.1%} (worst {totals['board']['worst_error']:+.0%}: "
        f"{totals['board']['worst']}), leave-one-model-out median {totals['model']['median_abs_error']:.1%} "
        f"(worst {totals['model']['worst_error']:+.0%}: {totals['model']['worst']})",
        "method: src/mcudeploy/estimate/latency_fit.py; fitted:", *lines])
    return overlay_toml(overlay)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, action="append", help="published-latency CSV (repeatable)")
    parser.add_argument("--check", action="store_true", help="compare with the shipped file, write nothing")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("mcudeploy").setLevel(logging.ERROR)      # the models' dynamic-batch notes
    csvs = args.csv or DEFAULT_CSVS
    rows = public_rows(csvs)
    overlay, _, totals, lines = fitted_overlay(rows, "shipped defaults")
    text = render(rows, overlay, totals, lines, csvs)
    if args.check:
        def body(content: str) -> list[str]:
            return [line for line in content.splitlines() if not line.startswith("# date ")]
        same = OUTPUT.is_file() and body(OUTPUT.read_text()) == body(text)
        print("calibration.toml is " + ("up to date" if same else "STALE: re-run tools/fit_latency_defaults.py"))
        return 0 if same else 1
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT.relative_to(REPO)}: {len(rows)} rows")
    print("\n".join(line.removeprefix("# ") for line in text.splitlines() if line.startswith("# ")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
