"""Benchmark: mcudeploy's post-training int8 quantization of the float MLPerf Tiny models
against the int8 models the MLPerf Tiny authors made from the same networks.

Run ``python benchmarks/mlperf_ptq_bench.py [--calibration 200] [--evaluation 200]`` (a few
minutes on 2 cores). Writes ``benchmarks/results/mlperf_ptq.md`` and ``mlperf_ptq.json``.

Models (``../shared/models/mlperf_tiny``): ``resnet8`` (CIFAR-10, 32x32x3, 10 classes),
``mobilenetv1_vww`` (visual wake words, 96x96x3, 2 classes), ``fc_autoencoder`` (anomaly
detection, 640 log-mel features in and out), each as ``*_float.tflite`` and ``*_int8.tflite``.

Input range: read from the int8 model's input quantization, ``[s * (-128 - z), s * (127 - z)]``
(ResNet-8: ``s = 1, z = -128``, pixels in [0, 255]; VWW: ``s = 1/255, z = -128``, [0, 1];
autoencoder: ``s = 0.391, z = 89``, about [-84.8, 14.9]).

Data (seeded; calibration and evaluation sets are different draws):

* images: random square crops (side 0.3-1 of the photo's shorter side, random horizontal
  flip) of the photos shipped inside scikit-image (``skimage.data``), resized with Pillow
  (bilinear) to the model's size and mapped from [0, 255] onto the input range above;
* autoencoder: no real log-mel data ships in any package, so two stand-ins, each its own
  table: (a) the model's own input statistics, seeded uniform noise over the range the MLPerf
  int8 model's input quantization covers (that range *is* their calibration statistics);
  (b) MLPerf's log-mel front end (:func:`log_mel_inputs`, numpy) applied to seeded synthetic
  machine sounds (:func:`machine_sound`).

Compared on the evaluation inputs, against the float model run by LiteRT (reference kernels):

* ours: calibration once on the float reference, ranges by each observer (minmax, the
  default; percentile; entropy; mse), per-channel int8 weights, run bit-exactly by ``run_int``;
  plus minmax with per-tensor weights, and minmax with ``tflite`` weight granularity (per
  channel for convolutions, per tensor for FULLY_CONNECTED, as the MLPerf models do);
* theirs: the MLPerf int8 model run by ``run_int`` (bit-exact with TFLite Micro): float inputs
  quantized with their input parameters ``q = clamp(round(x / s) + z)``, outputs dequantized
  ``y = s * (q - z)``.

Metrics: cosine to the float output over all samples (``validate.metrics``), top-1 agreement
(classifiers), MSE to the float output (autoencoder). A second table puts our minmax
activation scales next to theirs for the first layers, matched by node name. Last, to
separate *ranges* from *mechanics*: our quantizer fed their activation ranges (read from
their scales and zero points) should rebuild their model; reported as the share of identical
output bytes on the same int8 inputs.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from paths import RESULTS, SHARED  # noqa: E402

MODELS = SHARED / "models" / "mlperf_tiny"
PHOTOS = ("astronaut", "chelsea", "coffee", "rocket", "camera", "coins", "clock", "grass",
          "gravel", "brick", "moon", "immunohistochemistry", "hubble_deep_field", "colorwheel")
OBSERVERS = ("minmax", "percentile", "entropy", "mse")
PER_TENSOR = "minmax, per-tensor weights"
TFLITE_WEIGHTS = "minmax, tflite weights (conv per channel, FC per tensor)"
CALIBRATION_SEED, EVALUATION_SEED = 0, 1
COMPARED_LAYERS = 6
DATA_ORIGINS = {
    "photos": "random crops of skimage.data photos, mapped onto the int8 model's input range",
    "uniform": "seeded uniform noise over the int8 model's input range (no real log-mel data "
               "ships in any package; that range is the MLPerf calibration's own statistics)",
    "log-mel": "log-mel features (MLPerf's front end: 128 bands, 5 frames, n_fft 1024, hop "
               "512, 16 kHz) of seeded synthetic machine sounds (hum + harmonics + noise), "
               "computed with numpy"}

log = logging.getLogger("mlperf_ptq_bench")


@dataclass(frozen=True)
class Benchmark:
    name: str            # file stem: ``{name}_float.tflite`` / ``{name}_int8.tflite``
    kind: str            # "classifier" or "autoencoder"
    data: str            # "photos" or "uniform"


    @property
    def label(self) -> str:
        return self.name if self.data == "photos" else f"{self.name}, {self.data} inputs"


BENCHMARKS = (Benchmark("resnet8", "classifier", "photos"),
              Benchmark("mobilenetv1_vww", "classifier", "photos"),
              Benchmark("fc_autoencoder", "autoencoder", "uniform"),
              Benchmark("fc_autoencoder", "autoencoder", "log-mel"))
# MLPerf Tiny anomaly-detection features: 16 kHz audio, n_fft 1024, hop 512, 128 mel bands,
# 5 consecutive frames concatenated, 10 * log10(mel power).
SAMPLE_RATE, FFT_SIZE, HOP, MEL_BANDS, FRAMES = 16000, 1024, 512, 128, 5


# -- data -------------------------------------------------------------------------------------
def input_range(int8_graph) -> tuple[float, float]:
    """The float range the int8 model's input quantization covers."""
    quant = int8_graph.inputs[0].quant
    scale, zero_point = float(quant.scale[0]), int(quant.zero_point[0])
    return scale * (-128 - zero_point), scale * (127 - zero_point)


def photos() -> list[np.ndarray]:
    """The scikit-image photos as RGB uint8 arrays (grayscale ones stacked to three channels)."""
    import skimage.data

    images = []
    for name in PHOTOS:
        image = np.asarray(getattr(skimage.data, name)())
        images.append(np.stack([image] * 3, axis=-1) if image.ndim == 2 else image[..., :3])
    return images


def photo_crops(images: list[np.ndarray], count: int, size: int, seed: int,
                value_range: tuple[float, float]) -> np.ndarray:
    """``[count, 1, size, size, 3]`` float32 NHWC crops, pixels 0-255 mapped onto ``value_range``."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    low, high = value_range
    batch = np.empty((count, 1, size, size, 3), np.float32)
    for index in range(count):
        photo = images[rng.integers(len(images))]
        side = int(min(photo.shape[:2]) * rng.uniform(0.3, 1.0))
        top, left = rng.integers(photo.shape[0] - side + 1), rng.integers(photo.shape[1] - side + 1)
        crop = Image.fromarray(np.ascontiguousarray(photo[top:top + side, left:left + side]))
        pixels = np.asarray(crop.resize((size, size), Image.BILINEAR), np.float32)
        if rng.random() < 0.5:
            pixels = pixels[:, ::-1]
        batch[index, 0] = low + pixels / 255.0 * (high - low)
    return batch


def uniform_inputs(shape: tuple[int, ...], count: int, seed: int,
                   value_range: tuple[float, float]) -> np.ndarray:
    return np.random.default_rng(seed).uniform(*value_range, (count, *shape)).astype(np.float32)


def mel_filterbank() -> np.ndarray:
    """``[MEL_BANDS, FFT_SIZE // 2 + 1]`` triangular filters evenly spaced on the mel scale
    ``m = 2595 * log10(1 + f / 700)``, each normalised to unit area (Slaney style)."""
    def to_hz(mel: np.ndarray) -> np.ndarray:
        return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)

    edges = to_hz(np.linspace(0.0, 2595.0 * np.log10(1.0 + SAMPLE_RATE / 2 / 700.0), MEL_BANDS + 2))
    bins = np.fft.rfftfreq(FFT_SIZE, 1.0 / SAMPLE_RATE)
    lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    triangles = np.maximum(0.0, np.minimum((bins - lower) / (centre - lower),
                                           (upper - bins) / (upper - centre)))
    return triangles * (2.0 / (upper - lower))


def machine_sound(rng: np.random.Generator, seconds: float = 0.25) -> np.ndarray:
    """A seeded machine-like sound: a hum (fundamental 50-1000 Hz, 1-11 harmonics) plus
    smoothed noise, peak level 10^-3 to 10^-0.5 of full scale."""
    time_axis = np.arange(int(SAMPLE_RATE * seconds)) / SAMPLE_RATE
    fundamental = rng.uniform(50.0, 1000.0)
    hum = sum(rng.uniform(0.0, 1.0) / harmonic
              * np.sin(2 * np.pi * fundamental * harmonic * time_axis + rng.uniform(0.0, 2 * np.pi))
              for harmonic in range(1, int(rng.integers(1, 12)) + 1))
    noise = np.convolve(rng.standard_normal(time_axis.size), np.ones(int(rng.integers(1, 8))), "same")
    sound = (hum / np.abs(hum).max() * rng.uniform(0.0, 1.0)
             + noise / np.abs(noise).max() * rng.uniform(0.02, 1.0))
    return sound / np.abs(sound).max() * 10.0 ** rng.uniform(-3.0, -0.5)


def log_mel_inputs(count: int, seed: int) -> np.ndarray:
    """``[count, 1, 640]`` float32 log-mel feature vectors of :func:`machine_sound` clips."""
    rng, filterbank = np.random.default_rng(seed), mel_filterbank()
    window = np.hanning(FFT_SIZE)
    batch = np.empty((count, 1, MEL_BANDS * FRAMES), np.float32)
    for index in range(count):
        sound = machine_sound(rng)
        start = int(rng.integers(0, sound.size - FFT_SIZE - HOP * (FRAMES - 1)))
        frames = np.stack([sound[start + i * HOP:start + i * HOP + FFT_SIZE] * window
                           for i in range(FRAMES)])
        mel_power = (np.abs(np.fft.rfft(frames, axis=1)) ** 2) @ filterbank.T
        batch[index, 0] = (10.0 * np.log10(mel_power + np.finfo(np.float64).eps)).reshape(-1)
    return batch


def datasets(benchmark: Benchmark, float_graph, int8_graph, calibration: int,
             evaluation: int) -> tuple[np.ndarray, np.ndarray]:
    """Calibration and evaluation inputs ``[N, *input_shape]`` (see module docstring)."""
    value_range = input_range(int8_graph)
    shape = float_graph.inputs[0].shape
    if benchmark.data == "photos":
        images = photos()
        return (photo_crops(images, calibration, shape[1], CALIBRATION_SEED, value_range),
                photo_crops(images, evaluation, shape[1], EVALUATION_SEED, value_range))
    if benchmark.data == "log-mel":
        return log_mel_inputs(calibration, CALIBRATION_SEED), log_mel_inputs(evaluation, EVALUATION_SEED)
    return (uniform_inputs(shape, calibration, CALIBRATION_SEED, value_range),
            uniform_inputs(shape, evaluation, EVALUATION_SEED, value_range))


# -- runs -------------------------------------------------------------------------------------
def litert_outputs(path: Path, inputs: np.ndarray) -> np.ndarray:
    """The float model's outputs ``[N, *output_shape]`` in LiteRT (reference kernels)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interpreter = Interpreter(model_path=str(path),
                              experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interpreter.allocate_tensors()
    source, target = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
    outputs = []
    for sample in inputs:
        interpreter.set_tensor(source["index"], sample)
        interpreter.invoke()
        outputs.append(interpreter.get_tensor(target["index"]).copy())
    return np.stack(outputs)


def their_outputs(int8_graph, inputs: np.ndarray) -> np.ndarray:
    """The MLPerf int8 model on float ``inputs``: quantize, ``run_int``, dequantize."""
    from mcudeploy.reference import run_int

    source, target = int8_graph.inputs[0], int8_graph.outputs[0]
    scale, zero_point = float(source.quant.scale[0]), int(source.quant.zero_point[0])
    quantized = np.clip(np.round(inputs / scale) + zero_point, -128, 127).astype(np.int8)
    raw = run_int(int8_graph, {source.name: quantized}, batch=True)[target.name]
    return target.quant.dequantize(raw).astype(np.float32)


def calibrated(float_graph, calibration: np.ndarray) -> tuple:
    """``(prepared graph, observed samples per tensor, seconds)``: one calibration pass."""
    from mcudeploy.quantize.calibration import calibrate, load_calibration
    from mcudeploy.quantize.prepare import prepare_for_quantization

    prepared = prepare_for_quantization(float_graph)
    start = time.perf_counter()
    observed = calibrate(prepared, load_calibration(list(calibration), prepared), progress=False)
    return prepared, observed, time.perf_counter() - start


def our_models(prepared, observed: dict) -> dict:
    """Our quantized graph per observer, and minmax with per-tensor and with tflite weights."""
    from mcudeploy.quantize.apply import QuantizeOptions, quantize_graph
    from mcudeploy.quantize.observers import observed_range

    graphs = {}
    for observer in OBSERVERS:
        ranges = {name: observed_range(sample, observer) for name, sample in observed.items()}
        graphs[observer] = quantize_graph(prepared, ranges).graph
    ranges = {name: observed_range(sample, "minmax") for name, sample in observed.items()}
    graphs[PER_TENSOR] = quantize_graph(prepared, ranges, QuantizeOptions(weights="per-tensor")).graph
    graphs[TFLITE_WEIGHTS] = quantize_graph(prepared, ranges, QuantizeOptions(weights="tflite")).graph
    return graphs


# -- our quantizer given their ranges ---------------------------------------------------------
def _covered_range(quant) -> tuple[float, float]:
    scale, zero_point = float(quant.scale[0]), int(quant.zero_point[0])
    return scale * (-128 - zero_point), scale * (127 - zero_point)


def their_ranges(prepared, int8_graph, observed: dict) -> tuple[dict, int]:
    """Activation ranges taken from the int8 model (the range each tensor's scale and zero
    point cover), matched by node name; our minmax range where no name matches. Returns the
    ranges and how many node outputs matched."""
    from mcudeploy.quantize.observers import observed_range

    ranges = {name: observed_range(sample, "minmax") for name, sample in observed.items()}
    ranges[prepared.inputs[0].name] = _covered_range(int8_graph.inputs[0].quant)
    theirs = {node.name: node.outputs[0] for node in int8_graph.nodes if node.outputs[0].quant is not None}
    matched = [node for node in prepared.nodes if node.name in theirs]
    for node in matched:
        ranges[node.outputs[0].name] = _covered_range(theirs[node.name].quant)
    return ranges, len(matched)


def their_weight_granularity(int8_graph) -> tuple[str, bool]:
    """Our ``weights`` option that matches the int8 model (``tflite`` when its convolutions are
    per channel and its fully connected layers per tensor), and whether most of its weighted
    layers are per channel."""
    weights = [(node.op, node.inputs[1].quant.scale.size > 1) for node in int8_graph.nodes
               if node.op in ("Conv", "Gemm") and node.inputs[1].const is not None
               and node.inputs[1].quant is not None]
    majority = 2 * sum(per_channel for _, per_channel in weights) > len(weights)
    if all(per_channel == (op == "Conv") for op, per_channel in weights):
        return "tflite", majority
    return ("per-channel" if majority else "per-tensor"), majority


def reproduction(prepared, observed: dict, int8_graph, evaluation: np.ndarray) -> dict:
    """Our quantizer with their activation ranges (and their weight granularity, see
    :func:`their_weight_granularity`), int8 in / out, against their model on the same int8
    inputs: identical output bytes."""
    from mcudeploy.quantize.apply import QuantizeOptions, quantize_graph
    from mcudeploy.reference import run_int

    ranges, matched = their_ranges(prepared, int8_graph, observed)
    granularity, per_channel = their_weight_granularity(int8_graph)
    graph = quantize_graph(prepared, ranges, QuantizeOptions(weights=granularity, int8_io=True)).graph
    source = int8_graph.inputs[0]
    scale, zero_point = float(source.quant.scale[0]), int(source.quant.zero_point[0])
    inputs = np.clip(np.round(evaluation / scale) + zero_point, -128, 127).astype(np.int8)
    ours = run_int(graph, {graph.inputs[0].name: inputs}, batch=True, capture=True)
    theirs = run_int(int8_graph, {source.name: inputs}, batch=True, capture=True)
    difference = np.abs(ours[graph.outputs[0].name].astype(np.int32)
                        - theirs[int8_graph.outputs[0].name].astype(np.int32))
    return {"matched_layers": matched, "layers": len(prepared.nodes), "per_channel": per_channel,
            "weights": granularity,
            "identical_fraction": float(np.mean(difference == 0)), "max_lsb": int(difference.max()),
            "first_difference": _first_difference(graph, int8_graph, ours, theirs)}


def _first_difference(graph, int8_graph, ours: dict, theirs: dict) -> str | None:
    """``"node (op)"``: the first node, in order, whose output bytes differ between the two
    captured runs (nodes matched by name); None when all agree."""
    their_outputs = {node.name: node.outputs[0].name for node in int8_graph.nodes}
    for node in graph.nodes:
        if node.name in their_outputs and not np.array_equal(
                ours[node.outputs[0].name], theirs[their_outputs[node.name]]):
            return f"{_short(node.name)} ({node.op})"
    return None


def our_outputs(graph, inputs: np.ndarray) -> np.ndarray:
    from mcudeploy.reference import run_int

    return run_int(graph, {graph.inputs[0].name: inputs}, batch=True)[graph.outputs[0].name]


def scores(benchmark: Benchmark, reference: np.ndarray, estimate: np.ndarray) -> dict[str, float]:
    from mcudeploy.validate.metrics import compare_output

    count = len(reference)
    metrics = compare_output("output", reference.reshape(count, -1), estimate.reshape(count, -1))
    row = {"cosine": metrics.cosine, "sqnr_db": metrics.snr_db}
    if benchmark.kind == "classifier":
        row["top1_agreement"] = metrics.top1_agreement
    else:
        row["mse"] = metrics.rmse ** 2
    return row


# -- scales -----------------------------------------------------------------------------------
def scale_rows(ours, theirs, count: int = COMPARED_LAYERS) -> list[dict]:
    """Output scale / zero point of the first ``count`` compute layers present in both graphs
    under the same node name, plus the graph input."""
    their_nodes = {node.name: node for node in theirs.nodes}
    rows = [_scale_row("(graph input)", "input", ours.inputs[0].users[0].outputs[0], theirs.inputs[0])]
    for node in ours.nodes:
        if len(rows) > count or node.name not in their_nodes:
            continue
        if node.op in ("QuantizeLinear", "DequantizeLinear") or node.outputs[0].quant is None:
            continue
        rows.append(_scale_row(node.name, node.op, node.outputs[0], their_nodes[node.name].outputs[0]))
    return rows


def _scale_row(name: str, op: str, our_value, their_value) -> dict:
    ours, theirs = our_value.quant, their_value.quant
    return {"layer": name, "op": op,
            "our_scale": float(ours.scale[0]), "our_zero_point": int(ours.zero_point[0]),
            "their_scale": float(theirs.scale[0]), "their_zero_point": int(theirs.zero_point[0]),
            "scale_ratio": float(ours.scale[0] / theirs.scale[0])}


# -- driver -----------------------------------------------------------------------------------
def run_benchmark(benchmark: Benchmark, calibration_count: int, evaluation_count: int) -> dict:
    from mcudeploy.importers import load_model

    float_path = MODELS / f"{benchmark.name}_float.tflite"
    float_graph = load_model(float_path)
    int8_graph = load_model(MODELS / f"{benchmark.name}_int8.tflite")
    calibration, evaluation = datasets(benchmark, float_graph, int8_graph, calibration_count,
                                       evaluation_count)
    reference = litert_outputs(float_path, evaluation)
    prepared, observed, calibration_seconds = calibrated(float_graph, calibration)
    graphs = our_models(prepared, observed)
    rows = {"theirs (MLPerf int8 model)": scores(benchmark, reference, their_outputs(int8_graph, evaluation))}
    for observer, graph in graphs.items():
        rows[f"ours, {observer}"] = scores(benchmark, reference, our_outputs(graph, evaluation))
    log.info("%s: %s", benchmark.name, json.dumps(rows, default=float))
    return {"rows": rows, "scales": scale_rows(graphs["minmax"], int8_graph),
            "reproduction": reproduction(prepared, observed, int8_graph, evaluation),
            "input_range": input_range(int8_graph), "calibration_seconds": calibration_seconds,
            "data": benchmark.data}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibration", type=int, default=200)
    parser.add_argument("--evaluation", type=int, default=200)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("mcudeploy").setLevel(logging.ERROR)
    start = time.perf_counter()
    results = {b.label: run_benchmark(b, args.calibration, args.evaluation) for b in BENCHMARKS}
    write(results, args, time.perf_counter() - start)
    return 0


def write(results: dict, args, seconds: float) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "mlperf_ptq.json").write_text(json.dumps(
        {"calibration": args.calibration, "evaluation": args.evaluation, "models": results},
        indent=2, default=float) + "\n")
    text = "\n".join(report_lines(results, args, seconds)) + "\n"
    (RESULTS / "mlperf_ptq.md").write_text(text)
    log.info("%s", text)


def report_lines(results: dict, args, seconds: float) -> list[str]:
    command = "python benchmarks/mlperf_ptq_bench.py"
    if (args.calibration, args.evaluation) != (200, 200):
        command += f" --calibration {args.calibration} --evaluation {args.evaluation}"
    lines = ["# MLPerf Tiny: our int8 PTQ vs the MLPerf authors' int8 models", "",
             f"Produced by `{command}` in {seconds:.0f} s on {os.cpu_count()} CPU cores "
             f"({platform.machine()}, Python {platform.python_version()}; 1-minute load average "
             f"{os.getloadavg()[0]:.1f} at the end: the machine is shared). Seeds: calibration "
             f"{CALIBRATION_SEED}, evaluation {EVALUATION_SEED}; {args.calibration} calibration and "
             f"{args.evaluation} evaluation inputs per model (different draws). Reference: the "
             "float `.tflite` in LiteRT. Ours: `run_int` on our quantized graph (per-channel "
             "int8 weights unless the row says otherwise, float in/out through "
             "Quantize/Dequantize). Theirs: `run_int` on the "
             "MLPerf `*_int8.tflite` with float inputs quantized by its input parameters and "
             "outputs dequantized by its output parameters.", ""]
    for name, result in results.items():
        lines += _model_lines(name, result)
    return lines + _notes()


def _model_lines(name: str, result: dict) -> list[str]:
    low, high = result["input_range"]
    origin = DATA_ORIGINS[result["data"]]
    columns = [c for c in ("cosine", "sqnr_db", "top1_agreement", "mse")
               if c in next(iter(result["rows"].values()))]
    lines = [f"## {name}", "",
             f"Inputs: {origin}. The int8 model's input range: [{low:.4g}, {high:.4g}]. "
             f"Our calibration pass: {result['calibration_seconds']:.1f} s.", "",
             "| quantization | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for row_name, row in result["rows"].items():
        cells = [f"{row[c]:.5f}" if c == "cosine" else f"{row[c]:.3g}" if c == "mse"
                 else f"{row[c]:.2f}" for c in columns]
        lines.append(f"| {row_name} | " + " | ".join(cells) + " |")
    same = result["reproduction"]
    lines += ["", f"Our quantizer given *their* activation ranges ({same['matched_layers']} of "
              f"{same['layers']} layers matched by name, "
              f"`--weights {same['weights']}` like "
              f"theirs, int8 in / out) vs their model, same int8 inputs: "
              f"{100 * same['identical_fraction']:.2f} % of output bytes identical, largest "
              f"difference {same['max_lsb']} LSB; first layer whose output differs: "
              f"{'`' + same['first_difference'] + '`' if same['first_difference'] else 'none'}."]
    lines += ["", "Activation scales, ours (minmax) vs theirs, first layers (node names of the "
              "float and int8 models line up):", "",
              "| layer | op | our scale | our zp | their scale | their zp | ours / theirs |",
              "|---|---|---|---|---|---|---|"]
    for row in result["scales"]:
        lines.append(f"| `{_short(row['layer'])}` | {row['op']} | {row['our_scale']:.5g} | "
                     f"{row['our_zero_point']} | {row['their_scale']:.5g} | "
                     f"{row['their_zero_point']} | {row['scale_ratio']:.3f} |")
    return lines + [""]


def _short(name: str, limit: int = 48) -> str:
    """The first ``;``-separated part of a TFLite tensor name, cut to ``limit`` characters."""
    head = name.split(";")[0]
    return head if len(head) <= limit else head[:limit - 3] + "..."


def _notes() -> list[str]:
    return ["Notes: cosine and SQNR (dB) are over all evaluation outputs flattened; top-1 "
            "agreement is the share of inputs whose best class matches the float model's; MSE "
            "is the mean squared difference to the float model's reconstruction. Photos are not "
            "CIFAR-10 / VWW images: they are natural images in the right range, so they exercise "
            "realistic activation statistics, not the task's accuracy. The MLPerf authors "
            "calibrated on their real datasets, so 'theirs' has an in-distribution advantage "
            "on real data and a possible disadvantage on these inputs.", "",
            "Reading the 'given their ranges' lines: with the same ranges and the same weight "
            "granularity (`--weights tflite`: convolutions per channel, FULLY_CONNECTED per "
            "tensor) our scales, zero points, integer weights and biases equal theirs: weights "
            "and biases are rounded in float32 like TFLite's converter (`round(w * float32(127 "
            "/ max|w|))`, `round(b * float32(1 / (s_in * s_w)))`, ties away from zero; "
            "tests/test_quantize_observers.py checks every weight and bias of the three models). "
            "Before this (float64 `w / s`, one granularity for the whole model) 78.75 % "
            "(ResNet-8), 95.50 % (VWW) and 99.98 / 99.99 % (autoencoder) of the output bytes "
            "were identical. A layer left unmatched by name keeps our minmax range: where "
            "that is a layer whose range TFLite fixes anyway (ResNet-8's and VWW's "
            "Softmax), the outputs are identical all the same."]

if __name__ == "__main__":
    raise SystemExit(main())
