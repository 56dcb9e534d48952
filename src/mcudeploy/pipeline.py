"""The outer pipeline, written once: quantize -> validate -> deploy -> generate -> verify.

    outcome = quantize(float_graph, calibration, QuantizationConfig(...), preprocess=spec)
    quantized = comparable(float_graph, outcome.graph)           # integer form, inputs paired
    samples = validation_samples(float_graph, quantized, data=None, count=100, seed=0)
    result = validate(float_graph, quantized, samples, thresholds=Thresholds())
    deployment = deploy(quantized, options)                      # mcudeploy.driver.deploy
    project = generate(deployment, ProjectOptions(...), preprocess=spec, folder=out)   # .files, .written
    check = verify(deployment, integer_feeds(deployment, 1, seed), qemu_engine(deployment.target))

Its callers are the CLI commands (``quantize``, ``validate``, ``generate``), the staged deploy
(:mod:`mcudeploy.workflow`) and the sweep cells (:mod:`mcudeploy.sweep.stages`). Each
translates its own configuration (an argparse namespace, a project file's sections, a cell's
request) into the typed inputs here (a :class:`~mcudeploy.quantize.quantizer.QuantizationConfig`,
:class:`~mcudeploy.validate.thresholds.Thresholds`, a
:class:`~mcudeploy.deployment.Deployment`, :class:`~mcudeploy.codegen.ProjectOptions`), calls,
and records the typed result in its own run (:mod:`mcudeploy.runs.capture`, which comes after
this module in the stage order); nothing here reads a configuration format. ``deploy`` is
:func:`mcudeploy.driver.deploy`, the inner pipeline, unchanged.

The worst metric over the outputs is the figure a caller reports:
``worst(name) = min over outputs of metric name`` (``None`` when no output has it).
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from .codegen import ProjectOptions, TestVectors, generate_files, write_project
from .data_files import arrays_for_inputs, check_arrays
from .driver import deploy
from .errors import McuDeployError
from .estimate import estimate
from .ir import Graph
from .preprocess.dataset import folder_arrays, samples_of
from .preprocess.emit import add_preprocess_files
from .quantize.quantizer import QuantizationConfig, QuantizationOutcome, quantize_model
from .reference.int_executor import run_int
from .validate.c_runner import GeneratedCodeCheck
from .validate.compare import (
    ValidationResult,
    check_models,
    default_range,
    integer_form,
    quantized_feeds,
    validate_models,
)
from .validate.data import Samples, load_labels, load_samples, random_samples
from .validate.generated_code import check_generated_code, random_integer_feeds
from .validate.metrics import class_count
from .validate.qemu import INSTALL_HINT, TOOLS, qemu_engine
from .validate.thresholds import Thresholds

if TYPE_CHECKING:
    from .deployment import Deployment
    from .estimate.records import Estimate
    from .preprocess.spec import AudioPreprocess, ImagePreprocess
    from .quantize.calibration import ImagePreprocessing

    PreprocessSpec = Union[ImagePreprocess, AudioPreprocess]

__all__ = ["INSTALL_HINT", "Generated", "Worst", "calibration_samples", "comparable", "deploy", "estimated", "failure_message",
           "generate", "integer_feeds", "memory_use", "missing_tools", "qemu_engine", "quantize", "test_vectors",
           "validate", "validation_labels", "validation_samples", "verify"]


# -- quantize ------------------------------------------------------------------------------

def calibration_samples(graph: Graph, path: Path | str, count: int) -> list[dict[str, np.ndarray]]:
    """The first ``count`` samples of a ``.npy`` / ``.npz`` file, one ``{input: array}`` each."""
    samples = check_arrays(graph, arrays_for_inputs(path, graph, "calibration data"), str(path)).head(count)
    return [{name: array[index] for name, array in samples.arrays.items()} for index in range(samples.count)]


def quantize(graph: Graph, calibration: Any, config: QuantizationConfig, *,
             preprocessing: ImagePreprocessing | None = None,
             preprocess: PreprocessSpec | None = None) -> QuantizationOutcome:
    """Post-training quantization of the float ``graph``. ``calibration``: a path (``.npy``,
    ``.npz``, a folder of images) or samples; with a ``[preprocess]`` spec a folder goes
    through the pipeline the generated ``preprocess.c`` runs on the board."""
    if preprocess is not None and isinstance(calibration, Path) and calibration.is_dir():
        calibration = samples_of(folder_arrays(graph, calibration, preprocess))
    return quantize_model(graph, calibration, config, preprocessing=preprocessing)


# -- validate ------------------------------------------------------------------------------

def comparable(float_graph: Graph, quantized_graph: Graph) -> Graph:
    """The quantized graph in the integer form that is compared (and deployed), its inputs
    and outputs checked to pair with the float model's."""
    quantized = integer_form(quantized_graph)
    check_models(float_graph, quantized)
    return quantized


def validation_samples(float_graph: Graph, quantized_graph: Graph, *, data: Path | None, count: int | None,
                       seed: int, value_range: tuple[float, float] | None = None) -> Samples:
    """The first ``count`` samples of ``data`` (all when None), or ``count`` uniform random
    inputs over ``value_range`` (default: what the quantized input represents)."""
    if data is None:
        assert count is not None, "random inputs need a count"
        return random_samples(float_graph, count, seed, value_range or default_range(quantized_graph))
    samples = load_samples(data, float_graph)
    return samples.head(count) if count else samples


def validation_labels(path: Path, float_graph: Graph, count: int) -> np.ndarray:
    """``count`` class labels for the float model's class-score output."""
    classes = next((class_count(v.shape) for v in float_graph.outputs if class_count(v.shape)), None)
    return load_labels(path, count, classes)


def validate(float_graph: Graph, quantized_graph: Graph, samples: Samples, *, labels: np.ndarray | None = None,
             thresholds: Thresholds = Thresholds(), per_layer: bool = False, explain: bool = False,
             layer_samples: int = 0) -> ValidationResult:
    """Float vs quantized on ``samples`` against ``thresholds``. ``explain``: a failure is
    compared again layer by layer (to name the layer where the error jumps); ``layer_samples``:
    a pass gets the per-layer comparison of that many samples (the report's error plot)."""
    result = validate_models(float_graph, quantized_graph, samples, labels=labels, thresholds=thresholds,
                             per_layer=per_layer)
    if explain and not result.passed:
        return validate_models(float_graph, quantized_graph, samples, labels=labels, thresholds=thresholds,
                               per_layer=True)
    if layer_samples and result.layers is None:
        result.layers = validate_models(float_graph, quantized_graph, samples.head(layer_samples),
                                        thresholds=thresholds, per_layer=True, progress=False).layers
    return result


@dataclass(frozen=True)
class Worst:
    """The worst value of each metric over the outputs (None: no output has it)."""
    cosine: float | None
    snr_db: float | None
    top1_agreement: float | None
    quantized_accuracy: float | None
    float_accuracy: float | None

    @classmethod
    def of(cls, result: ValidationResult) -> Worst:
        def lowest(name: str) -> float | None:
            return min((getattr(m, name) for m in result.metrics if getattr(m, name) is not None), default=None)
        return cls(lowest("cosine"), lowest("snr_db"), lowest("top1_agreement"), lowest("quantized_accuracy"),
                   lowest("float_accuracy"))


def failure_message(result: ValidationResult, *, explained: bool = False) -> str:
    """``validation FAILED: <each failed check>``; ``explained``: with the layer where the
    error first jumps and the result's hint."""
    text = "validation FAILED: " + "; ".join(c.describe(result.samples) for c in result.failures)
    if explained:
        jump = result.layers.first_jump if result.layers is not None else None
        text += (f"; the error first jumps at layer {jump!r}" if jump else "") + (f"; {result.hint}" if result.hint else "")
    return text


# -- deploy: mcudeploy.driver.deploy; its figures ------------------------------------------

def memory_use(deployment: Deployment) -> dict[str, int]:
    """Bytes used per memory kind (``sram``, ``psram``, ``flash``) over the ledger's regions."""
    use = {"sram": 0, "psram": 0, "flash": 0}
    for region in deployment.ledger.regions:
        use[region.kind] = use.get(region.kind, 0) + region.used
    return use


def estimated(deployment: Deployment) -> tuple[Estimate | None, str]:
    """``(Estimate, "")`` or ``(None, why not)``; an incomplete estimate says so."""
    if deployment.target is None:
        return None, "not estimated: no target"
    try:
        result = estimate(deployment)
    except McuDeployError as error:
        return None, f"not estimated: {error}"
    return result, "" if result.complete else "estimate incomplete (layers without figures)"


# -- generate ------------------------------------------------------------------------------

def test_vectors(graph: Graph, feeds: dict[str, np.ndarray], source: str) -> TestVectors:
    """Samples and their outputs from the integer reference, for the generated ``main.c``."""
    return TestVectors(feeds, run_int(graph, feeds, batch=True), source)


test_vectors.__test__ = False  # type: ignore[attr-defined]  # not a pytest test (imported by tests)


@dataclass(frozen=True)
class Generated:
    """A generated C project: its files by relative path, and the paths written (none when
    it was not written)."""
    files: dict[str, str]
    written: list[Path]


def generate(deployment: Deployment, options: ProjectOptions = ProjectOptions(), *,
             preprocess: PreprocessSpec | None = None, folder: Path | None = None,
             force: bool = False) -> Generated:
    """The C project of ``deployment`` (with ``preprocess.c/.h`` for a spec); written into
    ``folder`` when given (:func:`mcudeploy.codegen.write_project`: files of others kept)."""
    files = add_preprocess_files(generate_files(deployment, options), preprocess, deployment.graph)
    return Generated(files, write_project(files, folder, force=force) if folder is not None else [])


# -- verify --------------------------------------------------------------------------------

def integer_feeds(deployment: Deployment, count: int, seed: int, *, float_graph: Graph | None = None,
                  samples: Samples | None = None) -> dict[str, np.ndarray]:
    """Feeds for the generated code: float ``samples`` quantized with the deployed inputs'
    parameters, else ``count`` uniform random integers."""
    if samples is not None and float_graph is not None:
        return quantized_feeds(float_graph, deployment.graph, samples.head(count))
    return random_integer_feeds(deployment.graph, count, seed)


def missing_tools() -> list[str]:
    """The cross toolchain and emulator programs not on ``PATH`` (QEMU runs need all)."""
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def verify(deployment: Deployment, feeds: dict[str, np.ndarray], engine: str, *,
           profile: bool = False) -> GeneratedCodeCheck:
    """The generated code run on ``engine`` (``host``, ``qemu-m4``, ``qemu-m55``, ``serial:PORT``),
    every output byte compared with the integer reference."""
    return check_generated_code(deployment, feeds, engine, profile=profile)
