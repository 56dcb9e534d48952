"""Seeded fuzz cases for the command line, one generator per class of bad input.

``generate(seed, count, families)`` returns ``count`` :class:`Case` s, taking the families
in turn; case ``i`` depends only on ``(seed, family, i)``. A case writes its files into an
empty folder (``build``), runs ``argv`` there (``{d}`` is the folder) and names the paths the
command was told to write (``writes``); ``protect`` lists paths that must stay unchanged
even inside those. :mod:`fuzz_harness` runs and judges them.

Families: ``model-bytes`` (byte mutations of real and small models), ``onnx-structure``
and ``tflite-structure`` (structure-aware mutations, :mod:`fuzz_models`), ``data-files``
(calibration / input / label files), ``options``, ``targets`` (TOML targets, ST memory
pools), ``hostile-names`` (markup, escapes, bidi, comment closers in names),
``output-paths`` (writers pointed at folders, inputs, missing folders, a full disk, planted
manifests, symlinks) and ``degenerate-graphs``; and those of :mod:`fuzz_surfaces`
(``project-files``, ``deploy-state``, ``run-stores``, ``sweep-files``, ``search-logs``,
``doctor-logs``, ``special-files``, ``long-names``).
"""
from __future__ import annotations

import io
import json
import os
import pickle
import random
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from onnx import helper

import fuzz_models as fm
from onnx_builders import make_model

MODEL_WRITES = ("out.json", "out.csv", "out.npz", "q.onnx", "gen", "report.json", "t.png", "plot.png")


@dataclass
class Case:
    family: str
    name: str
    files: dict[str, bytes]
    argv: list[str]
    writes: tuple[str, ...] = ()
    protect: tuple[str, ...] = ()
    links: dict[str, str] = field(default_factory=dict)   # link path -> target (relative)
    folders: tuple[str, ...] = ()
    fifos: tuple[str, ...] = ()          # named pipes (nothing ever writes to them)
    stdin: bytes = b""                   # the command's standard input
    subprocess: bool = False             # run as `python -m mcudeploy` (a Dask cluster, a full deploy)

    def build(self, folder: Path) -> None:
        for name in self.folders:
            (folder / name).mkdir(parents=True, exist_ok=True)
        for name in self.fifos:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            os.mkfifo(folder / name)
        for name, data in self.files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data.replace(b"{d}", str(folder).encode()))
        for link, target in self.links.items():
            (folder / link).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(target, folder / link)


def _npy(array: np.ndarray) -> bytes:
    stream = io.BytesIO()
    np.save(stream, array, allow_pickle=True)
    return stream.getvalue()


def _npz(**arrays: np.ndarray) -> bytes:
    stream = io.BytesIO()
    np.savez(stream, **arrays)
    return stream.getvalue()


def _floats(rng: random.Random, *shape: int) -> np.ndarray:
    return np.random.default_rng(rng.randrange(2**32)).normal(size=shape).astype(np.float32)


def _tiny_float_model(rng: random.Random) -> bytes:
    return fm.onnx_conv_net(rng).SerializeToString()


def _model_command(rng: random.Random, model: str, input_shape: tuple[int, ...]) -> tuple[list[str], dict[str, bytes]]:
    """A command reading ``model`` (and the data files it needs)."""
    data = {"in.npy": _npy(_floats(rng, *input_shape)),
            "calib.npy": _npy(_floats(rng, 4, *input_shape))}
    choice = rng.randrange(9)
    argv = [["analyze", model], ["analyze", model, "--json", "out.json", "--csv", "out.csv"],
            ["plan", model], ["plan", model, "--target", "stm32h743", "--json", "out.json"],
            ["run", model, "--inputs", "in.npy", "-o", "out.npz"],
            ["quantize", model, "--calib", "calib.npy", "-o", "q.onnx"],
            ["generate", model, "-o", "gen"], ["lint", model, "--target", "stm32h743"],
            ["validate", model, "--quantized", model, "--samples", "2"]][choice]
    return argv, data


# -- families ---------------------------------------------------------------------------
def model_bytes(rng: random.Random) -> Case:
    suffix, data = fm.real_model(rng) if rng.random() < 0.7 else (".onnx", _tiny_float_model(rng))
    model = "m" + suffix
    argv, files = _model_command(rng, model, (1, 3, 8, 8))
    return Case("model-bytes", f"{argv[0]} {suffix}", {model: fm.mutate_bytes(data, rng), **files},
                argv, MODEL_WRITES)


def onnx_structure(rng: random.Random) -> Case:
    extra: dict[str, bytes] = {}
    data = fm.mutated_onnx(rng, extra)
    argv, files = _model_command(rng, "m.onnx", rng.choice([(1, 3, 8, 8), (1, 2, 4, 4), (1, 4)]))
    if "sub/keep.txt" in extra:
        extra.pop("sub/keep.txt")
        return Case("onnx-structure", f"{argv[0]} external", {"m.onnx": data, **extra, **files,
                    "sub/keep.txt": b"keep"}, argv, MODEL_WRITES, links={"link.bin": "/dev/zero"})
    return Case("onnx-structure", argv[0], {"m.onnx": data, **files}, argv, MODEL_WRITES)


def tflite_structure(rng: random.Random) -> Case:
    argv, files = _model_command(rng, "m.tflite", rng.choice([(1, 4, 4, 2), (1, 8), (1, 10)]))
    return Case("tflite-structure", argv[0], {"m.tflite": fm.tflite_model(rng), **files}, argv, MODEL_WRITES)


def _bad_npz(rng: random.Random, good: bytes) -> bytes:
    """An .npz whose zip structure is damaged in one of the ways the issue names."""
    buffer = bytearray(good)
    kind = rng.randrange(5)
    if kind == 0:
        return bytes(buffer[: rng.randrange(1, len(buffer))])
    if kind == 1:   # a data byte flipped: bad CRC
        position = good.find(b"NUMPY") + 130
        buffer[min(position, len(buffer) - 30)] ^= 0x55
    elif kind in (2, 3):   # encrypted flag / unknown compression method, local + central header
        for signature, flag_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
            at = good.find(signature)
            while at >= 0:
                if kind == 2:
                    buffer[at + flag_at] |= 0x01
                else:
                    struct.pack_into("<H", buffer, at + flag_at + 2, 99)
                at = good.find(signature, at + 4)
    else:   # a member header declaring 10^12 elements
        start = good.find(b"{'descr'")
        end = good.find(b"}", start)
        header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }"
        buffer[start:end + 1] = header[: end + 1 - start].ljust(end + 1 - start)
    return bytes(buffer)


def _bad_data(rng: random.Random, shape: tuple[int, ...]) -> tuple[str, bytes]:
    good = _floats(rng, 3, *shape)
    kind = rng.randrange(14)
    huge = io.BytesIO()
    np.lib.format.write_array_header_1_0(huge, {"descr": "<f4", "fortran_order": False, "shape": (10**12,)})
    variants = [
        ("x.npy", _npy(np.array([{"a": 1}, None], dtype=object))),
        ("x.npy", pickle.dumps({"x": good})), ("x.npz", b""), ("x.npy", b""),
        ("x.npz", _bad_npz(rng, _npz(x=good))), ("x.npy", huge.getvalue() + b"\0" * 64),
        ("x.npy", _npy(good.astype(rng.choice([np.int64, np.bool_, np.complex64, np.float16, np.uint8])))),
        ("x.npz", _npz(x=good, extra=good)), ("x.npz", _npz(other=good)),
        ("x.npy", _npy(np.full((2, *shape), rng.choice([np.nan, np.inf]), np.float32))),
        ("x.npy", _npy(np.zeros((0, *shape), np.float32))), ("x.npy", _npy(np.array(["a", "b"]))),
        ("x.npy", _npy(np.zeros((2, 3, 5), np.float32))), ("x.npy", _npy(good)[:-7]),
    ]
    return variants[kind]


def _png(width: int, height: int, mode: str = "1") -> bytes:
    from PIL import Image

    stream = io.BytesIO()
    Image.new(mode, (width, height)).save(stream, format="PNG")
    return stream.getvalue()


def _png_bomb(side: int = 30000) -> bytes:
    """A PNG whose header says ``side`` x ``side`` pixels (a decompression bomb), built
    without making the image."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\0" * 4096)) + chunk(b"IEND", b""))


def data_files(rng: random.Random) -> Case:
    model = {"m.onnx": _tiny_float_model(rng)}
    name, data = _bad_data(rng, (1, 3, 8, 8))
    choice = rng.randrange(6)
    if choice == 0:
        return Case("data-files", f"quantize --calib {name}", {**model, name: data},
                    ["quantize", "m.onnx", "--calib", name, "-o", "q.onnx"], ("q.onnx",))
    if choice == 1:
        return Case("data-files", f"run --inputs {name}", {**model, name: data},
                    ["run", "m.onnx", "--inputs", name, "-o", "out.npz"], ("out.npz", "out.json"))
    if choice == 2:
        return Case("data-files", f"validate --data {name}", {**model, name: data},
                    ["validate", "m.onnx", "--quantized", "m.onnx", "--data", name])
    if choice == 3:
        labels = rng.choice([np.array([0.5, 1, 2]), np.array([-1, 0, 1]), np.zeros((3, 2)),
                             np.array([0, 1]), np.array([99, 0, 1]), np.array([True, False, True])])
        return Case("data-files", "validate --labels", {**model, "x.npy": _npy(_floats(rng, 3, 1, 3, 8, 8)),
                    "y.npy": _npy(labels) if rng.random() < 0.8 else data},
                    ["validate", "m.onnx", "--quantized", "m.onnx", "--data", "x.npy", "--labels", "y.npy"])
    if choice == 4:
        int8 = fm.tflite_model(rng, mutate=False)
        return Case("data-files", f"generate --test-vectors {name}", {"m.tflite": int8, name: data},
                    ["generate", "m.tflite", "-o", "gen", "--test-vectors", name], ("gen",))
    image = rng.choice([_png_bomb(), _png(8, 8, "RGB")[:40], b"not a png", _png(8, 8, "I;16"),
                        _png(8, 8, "RGBA")])
    extra = rng.choice([[], ["--mean", "0.1,0.2"], ["--std", "0"], ["--mean", "nan"], ["--layout", "NHWC"]])
    return Case("data-files", f"quantize --calib images {extra}", {**model, "images/a.png": image},
                ["quantize", "m.onnx", "--calib", "images", "-o", "q.onnx", *extra], ("q.onnx",))


OPTION_CASES: list[tuple[list[str], tuple[str, ...]]] = [
    (["analyze", "m.onnx", "--input-shape", "x=1," + "9" * 20 + ",8,8"], ()),
    (["analyze", "m.onnx", "--input-shape", "x=0,3,8,8"], ()),
    (["analyze", "m.onnx", "--input-shape", "x=1,3,99999,99999"], ()),
    (["analyze", "m.onnx", "--input-shape", "x"], ()), (["analyze", "m.onnx", "--input-shape", "=1"], ()),
    (["analyze", "m.onnx", "--input-shape", "x=1,3,8,8,1,1,1,1,1"], ()),
    (["analyze", "m.onnx", "--input-shape", "nope=1,3,8,8"], ()),
    (["analyze", "m.onnx", "--input-shape", "x=١,٣,٨,٨"], ()),
    (["validate", "m.onnx", "--quantized", "m.onnx", "--seed", "-1"], ()),
    (["validate", "m.onnx", "--quantized", "m.onnx", "--samples", "0"], ()),
    (["validate", "m.onnx", "--quantized", "m.onnx", "--samples", "1000000000"], ()),
    (["validate", "m.onnx", "--quantized", "m.onnx", "--range=nan,1"], ()),
    (["validate", "m.onnx", "--quantized", "m.onnx", "--range", "1,0"], ()),
    (["validate", "m.onnx", "--quantized", "m.onnx", "--cosine-min", "nan"], ()),
    (["validate", "m.onnx", "--quantized", "m.onnx", "--seed", "9" * 50], ()),
    (["plan", "m.onnx", "--time-limit", "nan"], ()), (["plan", "m.onnx", "--time-limit", "inf"], ()),
    (["plan", "m.onnx", "--time-limit", "-1"], ()), (["plan", "m.onnx", "--alignment", "0"], ()),
    (["plan", "m.onnx", "--alignment", "3"], ()), (["plan", "m.onnx", "--alignment", "9" * 30], ()),
    (["plan", "m.onnx", "--sram-limit", "-1"], ()), (["plan", "m.onnx", "--sram-limit", "9" * 40], ()),
    (["plan", "m.onnx", "--reserve", "1e9"], ()), (["plan", "m.onnx", "--stack", "abc"], ()),
    (["plan", "m.onnx", "--seed", "-1"], ()), (["plan", "m.onnx", "--target", "nosuch"], ()),
    (["plan", "--allocation-csv", "a.csv", "--capacity", "nan"], ()),
    (["plan", "--allocation-csv", "a.csv", "--time-limit", "nan"], ()),
    (["plan", "--allocation-csv", "bad.csv"], ()), (["plan"], ()),
    (["quantize", "m.onnx", "--calib", "c.npy", "-o", "q.onnx", "--target-cosine", "nan"], ("q.onnx",)),
    (["quantize", "m.onnx", "--calib", "c.npy", "-o", "q.onnx", "--image-scale", "nan"], ("q.onnx",)),
    (["quantize", "m.onnx", "--calib", "c.npy", "-o", "q.onnx", "--mean", "a"], ("q.onnx",)),
    (["quantize", "m.onnx", "--calib", "c.npy", "-o", "q.onnx", "--keep-float", "nosuch"], ("q.onnx",)),
    (["quantize", "m.onnx", "--calib", "c.npy", "-o", "q.onnx", "--int16", "nosuch"], ("q.onnx",)),
    (["quantize", "m.onnx", "--calib", "c.npy", "-o", "q.txt"], ()),
    (["quantize", "m.onnx", "--calib", "c.npy", "-o", "q.onnx", "--target-sqnr", "inf", "--auto-mixed"], ("q.onnx",)),
    (["run", "m.onnx", "--inputs", "c.npy", "-o", "o.npz", "--engine", "bogus"], ("o.npz", "o.json")),
    (["lint", "m.onnx", "--target", "stm32h743", "--cpu", "nosuch"], ()),
    (["lint", "m.onnx", "--target", "stm32h743", "--rule", "bogus"], ()),
    (["lint", "m.onnx", "--target", "stm32h743", "--fail-on", "x"], ()),
    (["generate", "m.onnx", "-o", "gen", "--core", "bogus"], ()), (["targets", "bogus"], ()),
    (["nosuchcommand"], ()), ([], ()), (["analyze"], ()), (["analyze", "missing.onnx"], ()),
    (["analyze", "afolder"], ()), (["--bogus"], ()), (["analyze", "m.onnx", "--bogus"], ()),
    (["analyze", "m.onnx", "--json"], ()), (["-vvvvv", "analyze", "m.onnx"], ()),
    (["analyze", "--help"], ()), (["--version"], ()),
    (["estimate", "m.onnx", "--target", "nosuch"], ()), (["estimate", "m.onnx", "--target", "stm32h743"], ()),
    (["doctor", "bad.csv"], ()), (["doctor", "afolder"], ()), (["report", "nosuch-run"], ()),
    (["runs", "--runs", "bad.csv"], ()), (["runs", "--runs", "afolder"], ()),
    (["analyze", "m.onnx", "--tag", "=" * 3], ()), (["analyze", "m.onnx", "--runs", "nope/x.db"], ("nope",)),
]


def options(rng: random.Random) -> Case:
    argv, writes = rng.choice(OPTION_CASES)
    csv_text = rng.choice([b"id,lower,upper,size\n0,0,2,16\n", b"id,lower,upper,size\n0,2,0,-5\n",
                           b"garbage", b"id,lower,upper,size\nx,nan,inf,1e99\n", b""])
    files = {"m.onnx": _tiny_float_model(rng), "c.npy": _npy(_floats(rng, 2, 1, 3, 8, 8)),
             "a.csv": b"id,lower,upper,size\n0,0,2,16\n1,1,3,32\n", "bad.csv": csv_text}
    return Case("options", " ".join(argv)[:80], files, list(argv), writes, folders=("afolder",))


MINIMAL_TARGET = """name = "board"
[core]
name = "Cortex-M4"
clock_mhz = 100
[[regions]]
name = "SRAM"
base = 0x20000000
size = "128K"
[[regions]]
name = "FLASH"
base = 0x08000000
size = "1M"
kind = "flash"
access = "r"
"""


def _bad_target(rng: random.Random) -> str:
    depth = rng.choice([5000, 20000, 100000])
    edits = [
        lambda t: t + "deep = " + "[" * depth + "]" * depth + "\n",
        lambda t: t + "deep = " + "{a=" * min(depth, 20000) + "1" + "}" * min(depth, 20000) + "\n",
        lambda t: t.replace("clock_mhz = 100", "clock_mhz = " + "1" * 5001),
        lambda t: t.replace("clock_mhz = 100", "clock_mhz = " + rng.choice(["nan", "inf", "-inf", "0", "1e308"])),
        lambda t: t.replace('kind = "flash"', 'kind = "flash"\nbandwidth_mb_per_s = nan'),
        lambda t: t.replace('name = "SRAM"', "name = " + json.dumps(rng.choice(fm.HOSTILE_NAMES))),
        lambda t: t.replace('size = "128K"', "size = " + rng.choice(['"99999999999G"', "-5", "18446744073709551616", '"1.5"', "0"])),
        lambda t: t.replace("base = 0x20000000", "base = " + rng.choice(["-1", "0xffffffffffffffffff", "1e3"])),
        lambda t: t + 'regions_from = "' + rng.choice(["../x.mpool", "/etc/passwd", "t.toml", "afolder", "p.json"]) + '"\n',
        lambda t: "\xff\xfe garbage",
        lambda t: "",
        lambda t: t.replace("[core]", "[core]\n[core]"),
    ]
    return rng.choice(edits)(MINIMAL_TARGET)


def _bad_pool(rng: random.Random) -> bytes:
    depth = rng.choice([5000, 100000])
    pool = {"name": "pool", "offset": {"value": "0x20000000", "magnitude": "BYTES"},
            "size": {"value": 64, "magnitude": "KBYTES"}, "prop": {"rights": "ACC_WRITE"}}
    kind = rng.randrange(8)
    if kind == 0:
        pool["prop"] = "rw"
    elif kind == 1:
        return ("[" * depth + "]" * depth).encode()
    elif kind == 2:
        return b'{"memory": {"mempools": [{"name": "a", "offset": 0, "size": 1' + b"0" * 5000 + b"}]}}"
    elif kind == 3:
        pool["size"] = rng.choice([float("nan"), -1, "0x", 1e400 if False else 1.5, [], None])
    elif kind == 4:
        pool["name"] = rng.choice(fm.HOSTILE_NAMES)
    elif kind == 5:
        pool["prop"] = {"rights": 5, "byteWidth": "a", "freqRatio": 0, "latency": []}
    elif kind == 6:
        pool["offset"] = {"value": 1, "magnitude": 12}
    else:
        return b'{"memory": {"mempools": [{"name": "a", "offset": NaN, "size": Infinity}]}}'
    return json.dumps({"memory": {"mempools": [pool]}}).encode()


def targets(rng: random.Random) -> Case:
    files = {"m.tflite": fm.tflite_model(rng, mutate=False), "t.toml": _bad_target(rng).encode("utf-8", "surrogateescape"),
             "p.json": _bad_pool(rng)}
    argv = rng.choice([["targets", "t.toml"], ["targets", "t.toml", "--json"],
                       ["plan", "m.tflite", "--target", "t.toml"],
                       ["lint", "m.tflite", "--target", "stm32h743", "--memory-pools", "p.json"],
                       ["generate", "m.tflite", "-o", "gen", "--target", "t.toml"],
                       ["plan", "m.tflite", "--target", "stm32n6", "--memory-pools", "p.json"]])
    return Case("targets", " ".join(argv), files, argv, ("gen",), folders=("afolder",))


def hostile_names(rng: random.Random) -> Case:
    if rng.random() < 0.6:
        model, data = "m.onnx", fm.set_names(rng.choice([fm.onnx_conv_net, fm.onnx_misc_net])(rng), rng)
        shape = (1, 3, 8, 8)
    else:
        from tflite_builders import Op, Tensor, build_model

        name = rng.choice(fm.HOSTILE_NAMES)
        tensors = [Tensor(name + "in", (1, 8), "int8", quant=([0.05], [0], 0)),
                   Tensor(name, (4, 8), "int8", data=np.ones((4, 8), np.int8), quant=([0.02], [0], 0)),
                   Tensor(name + "b", (4,), "int32", data=np.zeros(4, np.int32), quant=([0.001], [0], 0)),
                   Tensor(name + "out", (1, 4), "int8", quant=([0.1], [0], 0))]
        model, data, shape = "m.tflite", build_model(tensors, [Op("FULLY_CONNECTED", [0, 1, 2], [3])], [0], [3]), (1, 8)
    argv, files = _model_command(rng, model, shape)
    return Case("hostile-names", argv[0], {model: data, **files}, argv, MODEL_WRITES)


def _output_case(rng: random.Random) -> tuple[str, dict[str, bytes], list[str], tuple, tuple, dict, tuple]:
    manifest = json.dumps({"generator": "mcudeploy", "format": 2, "files": {
        "../victim.txt": "0" * 64, "{d}/victim.txt": "0" * 64, "sub/../../victim.txt": "0" * 64,
        "notes.txt": "0" * 64}}).encode()
    cases = [
        ("quantize -o = model", {}, ["quantize", "m.onnx", "--calib", "c.npy", "-o", "m.onnx"], (), (), {}, ()),
        ("run -o = inputs", {}, ["run", "m.onnx", "--inputs", "x.npz", "-o", "x.npz"], (), (), {}, ()),
        ("quantize --report = calib", {}, ["quantize", "m.onnx", "--calib", "c.npy", "-o", "q.onnx", "--report", "c.npy"], ("q.onnx",), (), {}, ()),
        ("analyze --json folder", {}, ["analyze", "m.onnx", "--json", "afolder"], (), (), {}, ("afolder",)),
        ("analyze --csv = model", {}, ["analyze", "m.onnx", "--csv", "m.onnx"], (), (), {}, ()),
        ("analyze --json missing folder", {}, ["analyze", "m.onnx", "--json", "nope/out.json"], (), (), {}, ()),
        ("plan --png folder", {}, ["plan", "m.onnx", "--png", "afolder"], (), (), {}, ("afolder",)),
        ("plan --png odd suffix", {}, ["plan", "m.onnx", "--png", "t.xyz"], ("t.xyz",), (), {}, ()),
        ("plan --json = model", {}, ["plan", "m.tflite", "--json", "m.tflite"], (), (), {}, ()),
        ("plan --export-tflm = model", {}, ["plan", "m.tflite", "--export-tflm", "m.tflite"], (), (), {}, ()),
        ("plan csv -o = csv", {}, ["plan", "--allocation-csv", "a.csv", "-o", "a.csv"], (), (), {}, ()),
        ("generate planted manifest", {"gen/.mcudeploy-manifest.json": manifest, "gen/notes.txt": b"mine"},
         ["generate", "m.tflite", "-o", "gen", "--force"], ("gen",), ("gen/notes.txt",), {}, ()),
        ("generate planted manifest, no force", {"gen/.mcudeploy-manifest.json": manifest},
         ["generate", "m.tflite", "-o", "gen"], ("gen",), (), {}, ()),
        ("generate linked runtime", {}, ["generate", "m.tflite", "-o", "gen", "--force"], ("gen",), (),
         {"gen/runtime": "../userdir"}, ("gen",)),
        ("generate linked file", {}, ["generate", "m.tflite", "-o", "gen", "--force"], ("gen",), (),
         {"gen/network.c": "../victim.txt"}, ("gen",)),
        ("generate -o = model", {}, ["generate", "m.tflite", "-o", "m.tflite"], (), (), {}, ()),
        ("run -o /dev/full", {}, ["run", "m.onnx", "--inputs", "x.npz", "-o", "/dev/full"], (), (), {}, ()),
        ("analyze --json /dev/full", {}, ["analyze", "m.onnx", "--json", "/dev/full"], (), (), {}, ()),
        ("validate --plot folder", {}, ["validate", "m.onnx", "--quantized", "m.onnx", "--samples", "2", "--plot", "afolder"], (), (), {}, ("afolder",)),
        ("validate --json = data", {}, ["validate", "m.onnx", "--quantized", "m.onnx", "--data", "x.npz", "--json", "x.npz"], (), (), {}, ()),
        ("analyze --json through link", {}, ["analyze", "m.onnx", "--json", "link.json"], (), (), {"link.json": "m.onnx"}, ()),
        ("analyze --html folder", {}, ["analyze", "m.onnx", "--html", "afolder"], (), (), {}, ("afolder",)),
        ("analyze --html = model", {}, ["analyze", "m.onnx", "--html", "m.onnx"], (), (), {}, ()),
        ("analyze --runs = model", {}, ["analyze", "m.onnx", "--runs", "m.onnx"], (), (), {}, ()),
        ("analyze --runs = data", {}, ["analyze", "m.onnx", "--runs", "c.npy"], (), (), {}, ()),
        ("analyze --runs folder", {}, ["analyze", "m.onnx", "--runs", "afolder"], ("afolder",), (), {}, ("afolder",)),
    ]
    return rng.choice(cases)


def output_paths(rng: random.Random) -> Case:
    name, files, argv, writes, protect, links, folders = _output_case(rng)
    base = {"m.onnx": _tiny_float_model(rng), "m.tflite": fm.tflite_model(rng, mutate=False),
            "c.npy": _npy(_floats(rng, 2, 1, 3, 8, 8)), "x.npz": _npz(x=_floats(rng, 1, 3, 8, 8)),
            "victim.txt": b"precious", "userdir/a.c": b"user code",
            "a.csv": b"id,lower,upper,size\n0,0,2,16\n"}
    return Case("output-paths", name, {**base, **files}, argv, writes, protect, links, folders)


def degenerate_graphs(rng: random.Random) -> Case:
    kind = rng.randrange(9)
    one = {"w": np.ones((1, 4), np.float32)}
    if kind == 0:
        model = make_model([helper.make_node("Relu", ["w"], ["y"], name="r")], {}, ["y"], one)
    elif kind == 1:
        model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], {"x": [1, 4]}, [])
    elif kind == 2:
        model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], {"x": [1, 4]}, ["y", "w"], one)
    elif kind in (3, 4, 5):
        dtype = {3: np.bool_, 4: np.float16, 5: np.int64}[kind]
        node = helper.make_node("Identity" if kind != 4 else "Relu", ["x"], ["y"], name="n")
        model = make_model([node], {"x": [1, 4]}, {"y": dtype}, input_dtypes={"x": dtype})
    elif kind == 6:
        model = fm.onnx_chain(rng.choice([2000, 4000]))
    elif kind == 7:
        model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], {"x": []}, ["y"])
    else:
        model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], {"x": [1] * 9}, ["y", "y"])
    argv, files = _model_command(rng, "m.onnx", (1, 4))
    return Case("degenerate-graphs", f"{kind} {argv[0]}", {"m.onnx": model.SerializeToString(), **files},
                argv, MODEL_WRITES)


FAMILIES: dict[str, Callable[[random.Random], Case]] = {
    "model-bytes": model_bytes, "onnx-structure": onnx_structure, "tflite-structure": tflite_structure,
    "data-files": data_files, "options": options, "targets": targets, "hostile-names": hostile_names,
    "output-paths": output_paths, "degenerate-graphs": degenerate_graphs,
}
# the second campaign's families (issue 26); imported here, after Case, which they build
from fuzz_surfaces import SURFACE_FAMILIES  # noqa: E402

FAMILIES.update(SURFACE_FAMILIES)


class Cases:
    """The cases of one campaign, each built when it is asked for (a case's files can be
    large; only the worker running it builds it)."""

    def __init__(self, seed: int, count: int, families: list[str] | None = None) -> None:
        self.seed, self.count = seed, count
        self.families = families or list(FAMILIES)
        unknown = sorted(set(self.families) - set(FAMILIES))
        if unknown:
            raise ValueError(f"unknown fuzz families {unknown}; known: {sorted(FAMILIES)}")

    def __len__(self) -> int:
        return self.count

    def family(self, index: int) -> str:
        return self.families[index % len(self.families)]

    def __getitem__(self, index: int) -> Case:
        if not 0 <= index < self.count:
            raise IndexError(index)
        family = self.family(index)
        return FAMILIES[family](random.Random(f"{self.seed}/{family}/{index}"))


def generate(seed: int, count: int, families: list[str] | None = None) -> Cases:
    """``count`` cases, the families taken in turn (see the module docstring)."""
    return Cases(seed, count, families)
