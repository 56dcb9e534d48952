"""Snapshot the plan JSON and the generated C of the shared models, to show a refactoring
changed no behaviour.

    python tools/plan_snapshot.py write DIR     # before the change
    python tools/plan_snapshot.py compare DIR   # after: exit 1 and name every difference

Every shared model (../shared/models, or $MCUDEPLOY_SHARED/models) is deployed in a few configurations (no target; a
target with several RAM regions, one arena or split over its banks; a graph split to
external RAM down to a 16 KiB on-chip arena) and
``Deployment.to_json()`` plus the text of every generated network file is written to
``DIR/<model>.<config>.json``. ``compare`` recomputes them and compares them exactly.
"""
from __future__ import annotations

import json
import logging
import os
import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODELS = Path(os.environ.get("MCUDEPLOY_SHARED", REPO.parent / "shared")) / "models"
CONFIGS = {"none": {}, "h743": {"target": "stm32h743"},
           "banks": {"target": "stm32h743", "split_arena": True},
           "split": {"target": "mps3-an547", "split_auto": True, "split_limit": 16 * 1024}}
logger = logging.getLogger("plan_snapshot")


def snapshots() -> dict[str, dict]:
    """``<model>.<config>`` -> {"plan": deployment JSON, "files": generated network files}."""
    from mcudeploy.codegen import ProjectOptions, generate_files
    from mcudeploy.driver import deploy
    from mcudeploy.options import DeploymentOptions

    result: dict[str, dict] = {}
    for model in sorted([*MODELS.glob("*/*.tflite"), *MODELS.glob("*/*.onnx")]):
        for config, fields in CONFIGS.items():
            key = f"{model.stem}.{config}"
            try:
                deployment = deploy(model, replace(DeploymentOptions(), **fields))
            except Exception as error:   # recorded: a model a configuration refuses stays refused
                result[key] = {"error": f"{type(error).__name__}: {error}"}
                continue
            files = {}
            if deployment.fits:
                try:
                    files = {name: text for name, text in generate_files(deployment, ProjectOptions()).items()
                             if name.startswith("network")}
                except Exception as error:
                    files = {"error": f"{type(error).__name__}: {error}"}
            result[key] = {"plan": json.loads(json.dumps(deployment.to_json(), default=str)), "files": files}
            logger.info("%s done", key)
    return result


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if len(argv) != 2 or argv[0] not in ("write", "compare"):
        logger.error("usage: python tools/plan_snapshot.py write|compare DIR")
        return 2
    directory = Path(argv[1])
    current = snapshots()
    if argv[0] == "write":
        directory.mkdir(parents=True, exist_ok=True)
        for key, value in current.items():
            (directory / f"{key}.json").write_text(json.dumps(value, indent=1, sort_keys=True), encoding="utf-8")
        logger.info("wrote %d snapshots to %s", len(current), directory)
        return 0
    different = [key for key, value in current.items()
                 if not (directory / f"{key}.json").exists()
                 or json.loads((directory / f"{key}.json").read_text(encoding="utf-8")) != value]
    for key in different:
        logger.error("DIFFERENT: %s", key)
    logger.info("%d snapshots compared, %d different", len(current), len(different))
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
