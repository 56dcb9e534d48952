"""The keys of a project file ``mcudeploy.toml`` outside ``[deployment.*]`` (data, not code).

One :class:`ProjectKey` per key: its section, name, kind, default, accepted values and the
help text. :mod:`.project` checks a file against this table and :mod:`.project_template`
writes the commented file ``mcudeploy init`` produces from it, so the two cannot disagree.

Kinds: ``path`` (text, relative to the project file), ``text``, ``int`` / ``float`` (with
``minimum`` / ``maximum``), ``bool``, ``choice`` (one of ``choices``), ``choices`` (a list of
``choices``), ``floats`` (a list of finite numbers), ``shapes`` (a table NAME = [dims]).
The deployment options (``[deployment.target]``, ``[deployment.memory]``, ...) are the
sections of a ``--config`` file, checked by :mod:`mcudeploy.options`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..quantize.apply import WEIGHT_GRANULARITIES
from ..quantize.observers import RANGE_METHODS

CODE_CHECKS = ("host", "qemu", "qemu-m4", "qemu-m55")   # qemu: the emulator of the target's core
LINT_LEVELS = ("error", "warning", "info", "never")


@dataclass(frozen=True)
class ProjectKey:
    section: str
    key: str
    kind: str
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    required: bool = False
    example: Any = None          # what ``init`` writes (commented out) when there is no default


KEYS: tuple[ProjectKey, ...] = (
    ProjectKey("project", "model", "path", None, "the model to deploy (ONNX or TFLite; float, or already int8)",
               required=True),
    ProjectKey("project", "name", "text", None, "names the outputs and the report (default: the model file's stem)"),
    ProjectKey("project", "version", "text", None,
               "model version in the results table (default: the first 12 digits of its SHA-256)"),
    ProjectKey("project", "output", "path", "deploy",
               "output folder: quantized model, C project, report.html, deploy.json, deployment.toml"),
    ProjectKey("project", "input_shapes", "shapes", None, "fix dynamic input dimensions: NAME = [d1, d2, ...]",
               example={"input": [1, 3, 224, 224]}),
    ProjectKey("calibration", "data", "path", None,
               "calibration inputs: .npy, .npz keyed by input name, or a folder of images (100-500 samples)",
               example="calibration.npz"),
    ProjectKey("calibration", "samples", "int", 0, "use the first N samples of a .npy / .npz (0: all)", minimum=0),
    ProjectKey("calibration", "observer", "choice", "minmax", "how activation ranges are chosen",
               choices=tuple(RANGE_METHODS)),
    ProjectKey("calibration", "weights", "choice", "per-channel", "weight scales", choices=WEIGHT_GRANULARITIES),
    ProjectKey("calibration", "activations", "choice", "int8", "activation type (int16: 16x8 mode)",
               choices=("int8", "int16")),
    ProjectKey("calibration", "image_scale", "float", 1.0 / 255.0,
               "image folders: x = (pixels * image_scale - mean) / std", minimum=0.0),
    ProjectKey("calibration", "mean", "floats", [0.0], "image folders: one value, or one per channel"),
    ProjectKey("calibration", "std", "floats", [1.0], "image folders: one value, or one per channel (non-zero)"),
    ProjectKey("calibration", "channel_order", "choice", "RGB", "image folders: channel order fed to the model",
               choices=("RGB", "BGR")),
    ProjectKey("calibration", "layout", "choice", None, "image folders: layout of the image input "
               "(default: the input's)", choices=("NCHW", "NHWC"), example="NHWC"),
    ProjectKey("validation", "data", "path", None,
               "validation inputs (.npy / .npz; default: random inputs over the quantized input's range)",
               example="validation.npz"),
    ProjectKey("validation", "labels", "path", None, "class index per validation sample (.npy): accuracy",
               example="validation_labels.npy"),
    ProjectKey("validation", "samples", "int", 50, "validation samples (random inputs: how many; data: the first N)",
               minimum=1),
    ProjectKey("validation", "cosine_min", "float", 0.99, "PASS needs cosine >= this on every output",
               minimum=-1.0, maximum=1.0),
    ProjectKey("validation", "top1_min", "float", 0.99, "PASS needs top-1 agreement >= this", minimum=0.0,
               maximum=1.0),
    ProjectKey("validation", "top5_min", "float", 0.90, "PASS needs top-5 agreement >= this", minimum=0.0,
               maximum=1.0),
    ProjectKey("validation", "accuracy_drop_max", "float", 2.0, "PASS needs an accuracy drop <= this "
               "(percentage points; with labels)", minimum=0.0),
    ProjectKey("validation", "code", "choices", ["host", "qemu"],
               "where the generated C code is checked bit-exactly: host, qemu (the emulator of the target's "
               "core: qemu-m4 or qemu-m55), qemu-m4, qemu-m55; [] for none", choices=CODE_CHECKS),
    ProjectKey("validation", "code_samples", "int", 2, "samples run through the generated code", minimum=1),
    ProjectKey("lint", "fail_on", "choice", "never", "stop the deploy when a lint finding is at least this severe",
               choices=LINT_LEVELS),
    ProjectKey("search", "enabled", "bool", False,
               "after the ladder's steps, run the option search (mcudeploy search) and deploy its best "
               "configuration; off: the project's options are the deployment"),
    ProjectKey("search", "objective", "choice", "memory", "what the search minimises",
               choices=("memory", "latency", "balanced")),
    ProjectKey("search", "budget", "int", 50, "trials the search may run", minimum=1),
    ProjectKey("generate", "test_vectors", "int", 2, "validation samples exported as C test vectors (0: none)",
               minimum=0),
    ProjectKey("generate", "trustzone", "bool", False,
               "also the TrustZone secure entry and images (checked under QEMU mps3-an547 on M55-class targets)"),
)
SECTION_HELP = {
    "project": "the model and where the outputs go",
    "calibration": "post-training quantization (mcudeploy quantize)",
    "validation": "float vs quantized (mcudeploy validate) and the generated code on host / QEMU",
    "lint": "design-for-deployment findings (mcudeploy lint)",
    "search": "the search stage: the options raised step by step, then optionally the option search",
    "generate": "the C project (mcudeploy generate)",
}
SECTIONS: dict[str, dict[str, ProjectKey]] = {}
for _key in KEYS:
    SECTIONS.setdefault(_key.section, {})[_key.key] = _key
DEPLOYMENT_SECTION = "deployment"
