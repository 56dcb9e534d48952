"""Plain records of the staged deployment: the stage order, one stage's result, the saved state.

* :data:`STAGES` - the order ``mcudeploy deploy`` runs (``--from`` names one of them);
* :class:`StageResult` - what one stage did: status (``ok`` | ``failed`` | ``skipped``), a
  one-line summary, figures (numbers, the run store's), details (JSON-able data later stages
  and the report read), the files it wrote, why it failed or was skipped and with which exit
  code, its run id, its duration;
* :class:`DeployState` - every stage result of the latest deploy of a project and the
  SHA-256 of the source model it ran on, saved as ``<output>/deploy.json`` after each stage
  (a resume reads it).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import McuDeployError
from ..runs.payload import clean
from ..text_inputs import read_json

STAGES = ("analyze", "lint", "feasibility", "quantize", "validate", "search", "generate", "verify", "report")
STAGE_HELP = {
    "analyze": "import the model: inputs, outputs, MACC, parameters, memory",
    "lint": "design-for-deployment findings on the target",
    "feasibility": "plan the float model at minimal options: does the pipeline take it, how big is it",
    "quantize": "post-training quantization with the calibration data",
    "validate": "float vs quantized on the validation data, against the thresholds",
    "search": "the deployment options raised step by step; the last step that fits is kept as fallback",
    "generate": "the C project of the chosen deployment",
    "verify": "the generated code, bit-exact against the integer reference on the host and QEMU",
    "report": "the results-table row and the HTML report of every stage",
}
OK, FAILED, SKIPPED = "ok", "failed", "skipped"
STATE_FILE = "deploy.json"


class StageFailed(McuDeployError):
    """A stage's own verdict stopped the deploy (lint findings at ``[lint] fail_on``, ...)."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class StageResult:
    stage: str
    status: str = OK
    summary: str = ""
    figures: dict[str, float | None] = field(default_factory=dict)   # None: not measured (as run figures)
    details: dict[str, Any] = field(default_factory=dict)
    artefacts: list[str] = field(default_factory=list)
    reason: str | None = None
    exit_code: int = 0
    run_id: int | None = None
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)        # the warnings logging did not print
    reused_from: str | None = None        # the deploy whose result a resumed deploy took

    @property
    def passed(self) -> bool:
        return self.status != FAILED

    def to_dict(self) -> dict[str, Any]:
        return clean(asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "StageResult":
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)


@dataclass
class DeployState:
    """The latest deploy of a project (``<output>/deploy.json``)."""
    deploy_id: str
    project: str
    stages: dict[str, StageResult] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)     # the project's settings it ran with
    model_sha256: str | None = None    # of the source model it ran on (a resume checks it)

    def to_json(self) -> str:
        return json.dumps({"deploy": self.deploy_id, "project": self.project, "config": clean(self.config),
                           "model_sha256": self.model_sha256,
                           "stages": [result.to_dict() for result in self.stages.values()]}, indent=1) + "\n"

    @classmethod
    def read(cls, path: Path) -> "DeployState | None":
        """The state saved at ``path``, or ``None`` when there is none or it is unreadable."""
        if not path.exists():
            return None
        data = read_json(path, "deploy state")    # a FIFO, a huge or too deep file: one error line
        try:
            stages = {entry["stage"]: StageResult.from_dict(entry) for entry in data["stages"]}
            digest = data.get("model_sha256")
            return cls(str(data["deploy"]), str(data["project"]), stages, dict(data.get("config", {})),
                       digest if isinstance(digest, str) else None)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return None
