"""Fuzz families of the surfaces added after the first campaign (issue 26): project files,
deploy state, run stores, sweep files, search logs, doctor logs, special files, long names.

Each function takes a seeded ``random.Random`` and returns one :class:`fuzz_cases.Case`;
:data:`SURFACE_FAMILIES` is added to ``fuzz_cases.FAMILIES``. Every case runs in a folder
that also holds files the command must not touch (``precious/``, ``notes.txt``), so a
deleted, replaced or followed-through file shows up as an altered file, and a file written
outside the case folder (``/dev/null.jsonl``, ``../x_int8.onnx``) as unsafe output
(:mod:`fuzz_harness`). Commands that start a Dask cluster or a full deploy run in a
subprocess (``Case.subprocess``); the rest in-process.
"""
from __future__ import annotations

import json
import random
import sqlite3
import tempfile
from pathlib import Path

import numpy as np

from conftest import MODELS
from fuzz_cases import Case, _npy

TINY_MODEL = MODELS / "tflite_micro/hello_world_int8.tflite"
ESCAPES = ["\x1b]0;owned\x07", "\x1b[2J", "\u202e", "\x1b[31m", "\x9b", "\u2066"]
PRECIOUS = {"precious/keep.txt": b"keep me", "notes.txt": b"my notes"}
DEEP = ["x = " + "[" * 3000 + "]" * 3000, "x = " + "{a=" * 2000 + "1" + "}" * 2000,
        "[" + ".".join(["a"] * 200) + "]\nb = 1"]
LONG = "n" * 300


def _model() -> bytes:
    return TINY_MODEL.read_bytes()


def _hostile(rng: random.Random) -> str:
    return rng.choice(["name", "a$x^$b", "<script>", "x'y\"z"]) + rng.choice(ESCAPES)


def _toml_text(value: str) -> str:
    return json.dumps(value)       # a TOML basic string: JSON's escapes are TOML's


# -- project files -------------------------------------------------------------------------
PROJECT = """[project]
model = "m.tflite"
{project}
[validation]
code = ["host"]
[deployment.target]
name = "stm32h743"
"""


def _project_mutation(rng: random.Random) -> tuple[str, str]:
    kind = rng.randrange(12)
    if kind == 0:
        return "deep", PROJECT.format(project="") + rng.choice(DEEP) + "\n"
    if kind == 1:
        return "name-escape", PROJECT.format(project=f"name = {_toml_text(rng.choice(['../../x', '/tmp/x', 'a/../b', LONG, '..']))}")
    if kind == 2:
        return "version-escape", PROJECT.format(project=f"version = {_toml_text(_hostile(rng))}")
    if kind == 3:
        return "output", PROJECT.format(project=f"output = {_toml_text(rng.choice(['.', '..', 'precious', 'notes.txt', '/dev/null', LONG]))}")
    if kind == 4:
        return "nul", PROJECT.format(project="").replace('"m.tflite"', '"m\\u0000.tflite"')
    if kind == 5:
        return "garbage", "".join(rng.choice("[]{}=\"'#\n ab1.") for _ in range(rng.randrange(1, 400)))
    if kind == 6:
        return "unknown-key", PROJECT.format(project=f"{rng.choice(['modle', 'nam', 'x'])} = 1")
    if kind == 7:
        return "model-special", PROJECT.format(project="").replace('"m.tflite"', _toml_text(rng.choice(
            ["/dev/zero", "/proc/self/mem", "fifo", "precious", "../m.tflite", "m.tflite\x1b[2J"])))
    if kind == 8:
        return "huge-number", PROJECT.format(project="") + "[calibration]\nsamples = " + "9" * 5000 + "\n"
    if kind == 9:
        return "bad-values", PROJECT.format(project="") + rng.choice(
            ["[calibration]\nstd = [0.0]\n", "[validation]\nsamples = -1\n", "[search]\nbudget = 1e400\n",
             "[calibration]\nmean = [nan]\n", "[deployment.memory]\nsram_limit = \"-5K\"\n"])
    if kind == 10:
        return "bytes", bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))).decode("latin-1")
    return "valid", PROJECT.format(project="")


# the files deploy writes in its output folder (through its manifest: never a user's file)
DEPLOY_FILES = ("deploy", ".mcudeploy-deploy-manifest.json", "deploy.json", "deployment.toml", "passed.toml",
                "fallback.toml", "quantization.json", "report.html", "m_int8.onnx", "x_int8.onnx", "firmware")


def project_files(rng: random.Random) -> Case:
    name, text = _project_mutation(rng)
    # an output folder given as "." or ".." is the user's choice: deploy may add its own files
    # there, never replace one of theirs. The project sits in proj/, so that ".." is still a
    # folder of the case, holding the user's precious files.
    files = {"proj/m.tflite": _model(), "proj/mcudeploy.toml": text.encode("utf-8", "surrogateescape"), **PRECIOUS,
             "proj/notes.txt": PRECIOUS["notes.txt"]}
    fifos = ("proj/fifo",)
    argv = rng.choice([["deploy", "proj/mcudeploy.toml", "--quiet"], ["deploy", "proj/mcudeploy.toml", "--quiet",
                                                                      "--from", "report"],
                       ["init", "proj/m.tflite", "-o", "proj/mcudeploy.toml", "--force"],
                       ["init", "proj/" + rng.choice(["m\x1b[2J.tflite", "m\n.tflite", "m\r\x7f.tflite"]), "-o",
                        "proj/p.toml"]])
    if argv[0] == "init" and argv[1] != "proj/m.tflite":
        files[argv[1]] = _model()
    heavy = argv[0] == "deploy" and name == "valid"
    # deploy records its stages in the run store beside the project file (proj/.mcudeploy)
    writes = ("proj/mcudeploy.toml", "proj/p.toml", "proj/.mcudeploy") + tuple(f"proj/{f}" for f in DEPLOY_FILES) \
        + DEPLOY_FILES
    return Case("project-files", f"{argv[0]} {name}", files, argv, writes=writes,
                protect=tuple(PRECIOUS) + ("proj/notes.txt",), fifos=fifos, subprocess=heavy)


# -- deploy state --------------------------------------------------------------------------
def _state(folder_marker: str = "{d}") -> dict:
    stages = ["analyze", "lint", "feasibility", "quantize", "validate", "search", "generate", "verify"]
    return {"deploy": "1", "project": f"{folder_marker}/mcudeploy.toml", "config": {"project.model": "m.tflite"},
            "stages": [{"stage": stage, "status": "ok", "summary": "", "run_id": None} for stage in stages]}


def deploy_state(rng: random.Random) -> Case:
    state = _state()
    kind = rng.randrange(9)
    files = {"m.tflite": _model(), "mcudeploy.toml": PROJECT.format(project="").encode(), **PRECIOUS}
    links, fifos, name = {}, (), "valid"
    data = json.dumps(state).encode()
    if kind == 0:
        name, data = "deep", ("[" * 100000 + "]" * 100000).encode()
    elif kind == 1:
        name, data = "garbage", bytes(rng.randrange(256) for _ in range(rng.randrange(200)))
    elif kind == 2:
        name = "fifo"
        fifos = ("deploy/deploy.json",)
    elif kind == 3:
        name = "dev-zero"
        links["deploy/deploy.json"] = "/dev/zero"
    elif kind == 4:
        name = "wrong-types"
        state["stages"] = rng.choice([[1, 2], {"a": 1}, [{"stage": "analyze", "status": 5}], None])
        data = json.dumps(state).encode()
    elif kind == 5:
        name = "hostile-text"
        state["stages"][0]["summary"] = _hostile(rng)
        state["deploy"] = _hostile(rng)
        data = json.dumps(state).encode()
    elif kind == 6:
        name = "planted-link"
        links["deploy/passed.toml"] = "../notes.txt"
    elif kind == 7:
        name = "model-changed"
        files["m.tflite"] = _model()[:-4] + b"\0\0\0\0"
    if "deploy/deploy.json" not in links and "deploy/deploy.json" not in fifos:
        files["deploy/deploy.json"] = data
    start = rng.choice(["report", "report", "verify", "generate"])
    return Case("deploy-state", f"--from {start} {name}", files, ["deploy", "--quiet", "--from", start],
                writes=("deploy",), protect=tuple(PRECIOUS) + (("deploy/deploy.json",) if kind == 2 else ()),
                links=links, fifos=fifos, subprocess=start != "report")


# -- run stores ----------------------------------------------------------------------------
def _store_file(rng: random.Random) -> tuple[str, bytes | None, dict, tuple]:
    """``(kind, bytes of runs.sqlite or None, links, fifos)``."""
    kind = rng.randrange(8)
    if kind == 0:
        return "empty", b"", {}, ()
    if kind == 1:
        return "one-byte", b"x", {}, ()
    if kind == 2:
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "other.sqlite"
            with sqlite3.connect(path) as connection:
                connection.execute("create table notes (text)")
                connection.execute("insert into notes values ('mine')")
            connection.close()
            return "foreign-sqlite", path.read_bytes(), {}, ()
    if kind == 3:
        return "dev-null", None, {"runs.sqlite": rng.choice(["/dev/null", "/dev/zero", "/dev/full"])}, ()
    if kind == 4:
        return "fifo", None, {}, ("runs.sqlite",)
    if kind == 5:
        return "garbage", bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4096))), {}, ()
    if kind == 6:
        return "link-out", None, {"runs.sqlite": "notes.txt"}, ()
    return "fresh", None, {}, ()


def run_stores(rng: random.Random) -> Case:
    kind, data, links, fifos = _store_file(rng)
    files = dict(PRECIOUS)
    if data is not None:
        files["runs.sqlite"] = data
    run_id = rng.choice(["1", "last", "-1", "18446744073709551616", "\u2460", "99999999999999999999999", "0", "-0"])
    argv = rng.choice([["runs", "list", "--runs", "runs.sqlite"],
                       ["runs", "list", "--runs", "runs.sqlite", "--limit", rng.choice(["100000000000000000000", "-1", "0"])],
                       ["runs", "show", run_id, "--runs", "runs.sqlite"],
                       ["runs", "diff", run_id, "1", "--runs", "runs.sqlite"],
                       ["runs", "export", "--runs", "runs.sqlite", "--csv", rng.choice(["out.csv", "runs.sqlite", "precious", "-"])],
                       ["report", run_id, "--runs", "runs.sqlite", "-o", rng.choice(["r.html", "runs.sqlite", LONG + ".html"])],
                       ["doctor", run_id, "--runs", "runs.sqlite"],
                       ["analyze", "m.tflite", "--runs", "runs.sqlite"]])
    files["m.tflite"] = _model()
    protect = tuple(PRECIOUS) + (() if kind == "fresh" else ("runs.sqlite",))   # never turned into a store
    return Case("run-stores", f"{' '.join(argv[:2])} {kind}", files, argv, writes=("out.csv", "r.html", "runs.sqlite"),
                protect=protect, links=links, fifos=fifos)


# -- sweep files ---------------------------------------------------------------------------
SWEEP = """[sweep]
name = {name}
stages = {stages}
{timeout}
[axes]
models = ["m.tflite"]
targets = ["stm32h743"]
{extra}
"""


def _generator(rng: random.Random) -> tuple[str, dict[str, bytes]]:
    """A ``[[generators]]`` table and its files: the one outside the sweep's folder writes
    ``ran.txt`` when it is imported (a new file: an altered-file failure if anything runs it)."""
    benign = b'def make(size):\n    return open("sweep/m.tflite", "rb").read()\n'
    marking = b'open("ran.txt", "w").write("ran")\n' + benign
    choice = rng.randrange(6)
    callable_ = ["shutil:rmtree", "os:system", "../outside/gen.py:make", "gen.py:make", "gen.py:missing",
                 "/etc/passwd.py:x"][choice]
    parameter = {0: 'path = ["precious"]', 1: 'command = ["touch ran.txt"]'}.get(choice, "size = [1, 2]")
    files = {"outside/gen.py": marking, "sweep/gen.py": benign}
    return f'[[generators]]\ncallable = "{callable_}"\nparameters = {{{parameter}}}\n', files


def sweep_files(rng: random.Random) -> Case:
    name = _toml_text(_hostile(rng) if rng.random() < 0.3 else "s")
    stages = rng.choice(['["analyze"]', '["plan"]', '["plan"]', '["analyze", "os:system"]',
                         '["analyze", "plugin.py:run"]'])
    timeout = rng.choice([""] * 8 + ["timeout = 1e300", "timeout = inf", "timeout = -1", "retries = 100000000000"])
    files = {"sweep/m.tflite": _model(), "sweep/plugin.py": b"def run(context):\n    return {'x': 1}\n", **PRECIOUS}
    extra = ""
    if rng.random() < 0.3:
        extra, generator_files = _generator(rng)
        files.update(generator_files)
    text = SWEEP.format(name=name, stages=stages, timeout=timeout, extra=extra)
    if rng.random() < 0.15:
        text += rng.choice(DEEP) + "\n"
    files["sweep/s.toml"] = text.encode()
    fifos = ("sweep/fifo.toml",)
    sweep_file = rng.choice(["sweep/s.toml"] * 6 + ["sweep/fifo.toml", "/dev/zero", "sweep", "missing.toml"])
    option = rng.choice([["--list"], ["--list"], ["--csv", "sweep/m.tflite"], ["--out", "sweep/s.toml"],
                         ["--png", "x.out"], ["--html", "-"], ["--workers", "2147483648"], ["--timeout", "inf"],
                         ["--timeout", "nan"], ["--retries", "-1"], ["--cells", "999"],
                         ["--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", "1"],
                         ["--workers", "1", "--csv", "out.csv", "--png", "p.png", "--timeout", "60"]])
    heavy = option[0] == "--workers" and option[1] == "1" and sweep_file == "sweep/s.toml"
    return Case("sweep-files", f"sweep {option[0]}", files, ["sweep", sweep_file, *option, "--no-progress"],
                writes=("out.csv", "p.png"), protect=tuple(PRECIOUS) + ("sweep/m.tflite", "sweep/s.toml"),
                fifos=fifos, subprocess=heavy)


# -- search logs ---------------------------------------------------------------------------
def search_logs(rng: random.Random) -> Case:
    files = {"m.tflite": _model(), **PRECIOUS, "log.txt.jsonl": b"mine\n", "log.txt": b"old log\n"}
    links, fifos = {}, ()
    log = rng.choice(["log.txt", "new.txt", "/dev/null", "precious", "fifo", "m.tflite", LONG, "link.txt",
                      "missing/log.txt"])
    if log == "fifo":
        fifos = ("fifo",)
    protect = tuple(PRECIOUS) + ("log.txt.jsonl", "m.tflite")
    writes: tuple[str, ...] = ("new.txt", "new.txt.jsonl", "log.txt")
    if log == "link.txt":
        # the user named a link to notes.txt: the log goes where it points (an in-folder link is
        # followed, as a shell redirection does: safe_io), its sidecar is link.txt.jsonl
        links["link.txt"] = "notes.txt"
        writes += ("notes.txt", "link.txt.jsonl")
        protect = tuple(p for p in protect if p != "notes.txt")
    argv = ["search", "m.tflite", "--target", "stm32h743", "--budget", str(rng.choice([1, 2])), "--log", log]
    return Case("search-logs", f"--log {log[:20]}", files, argv, writes=writes, protect=protect, links=links,
                fifos=fifos)


# -- doctor logs ---------------------------------------------------------------------------
def _log_text(rng: random.Random) -> bytes:
    kind = rng.randrange(6)
    lines = ["does not fit: SRAM by 1024 bytes", "Arena size is too small for all buffers. Needed 10 but only 5 "
             "was available", "CONV_2D 'x' is not supported on the NPU", "E103 (ValueError): x"]
    if kind == 0:
        return "\n".join(rng.choice(lines) + rng.choice(ESCAPES) for _ in range(20)).encode()
    if kind == 1:
        return "\n".join(rng.choice(["A", "1", "a '", "E103 ", "by 1 "]) * 1000 for _ in range(40)).encode()
    if kind == 2:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 5000)))
    if kind == 3:
        return ("x" * rng.randrange(1, 2 << 20)).encode()
    if kind == 4:
        return b""
    return "\n".join(rng.choice(lines) for _ in range(rng.randrange(1, 50))).encode()


def doctor_logs(rng: random.Random) -> Case:
    files = {"log.txt": _log_text(rng), **PRECIOUS}
    fifos = ("fifo.log",)
    subject = rng.choice(["log.txt", "log.txt", "-", "-", "fifo.log", "/dev/zero", "/dev/null", ".",
                          "text " + _hostile(rng), "does not fit: SRAM by 1 bytes" + rng.choice(ESCAPES),
                          "18446744073709551616", "\u2460"])
    stdin = _log_text(rng) if subject == "-" else b""
    argv = ["doctor", subject] + (["--json"] if rng.random() < 0.2 else [])
    return Case("doctor-logs", f"doctor {subject[:12]!r}", files, argv, protect=tuple(PRECIOUS), fifos=fifos,
                stdin=stdin)


# -- special files -------------------------------------------------------------------------
SPECIAL = ["/dev/zero", "/dev/null", "fifo", "folder", "/proc/self/mem", "link-zero", "link-loop", "missing"]


def special_files(rng: random.Random) -> Case:
    special = rng.choice(SPECIAL)
    files = {"m.tflite": _model(), "x.npy": _npy(np.zeros((1, 1), np.float32)), **PRECIOUS}
    links = {"link-zero": "/dev/zero", "link-loop": "link-loop"}
    command = rng.choice([
        ["plan", "m.tflite", "--target", "stm32h743", "--config", special],
        ["plan", "m.tflite", "--target", "stm32h743", "--memory-pools", special],
        ["plan", "m.tflite", "--target", special],
        ["estimate", "m.tflite", "--target", "stm32h743", "--overlay", special],
        ["search", "m.tflite", "--target", "stm32h743", "--budget", "1", "--space", special],
        ["analyze", special], ["plan", "--allocation-csv", special],
        ["run", "m.tflite", "--inputs", special, "-o", "out.npz"],
        ["sweep", special, "--list"], ["deploy", special, "--quiet"], ["doctor", special],
        ["init", "m.tflite", "-o", special, "--force"],
    ])
    # init -o missing creates the file it was told to write
    return Case("special-files", f"{command[0]} {special}", files, command, writes=("out.npz", "missing"),
                protect=tuple(PRECIOUS) + ("m.tflite",), links=links, fifos=("fifo",), folders=("folder",))


# -- long names ----------------------------------------------------------------------------
def long_names(rng: random.Random) -> Case:
    name = rng.choice([LONG, "d/" + LONG, LONG[:200] + "\u00e9" * 30, "x" * 4097])
    files = {"m.tflite": _model(), **PRECIOUS}
    command = rng.choice([["generate", "m.tflite", "--target", "stm32h743", "-o", name],
                          ["analyze", "m.tflite", "--json", name], ["plan", "m.tflite", "--target", "stm32h743",
                                                                     "--png", name + ".png"],
                          ["analyze", "m.tflite", "--runs", name], ["report", "last", "-o", name],
                          ["init", "m.tflite", "-o", name], ["doctor", name], ["analyze", name],
                          ["sweep", name + ".toml", "--list"]])
    return Case("long-names", f"{command[0]} {len(name)}", files, command, writes=("d",),
                protect=tuple(PRECIOUS) + ("m.tflite",), folders=("d",))


SURFACE_FAMILIES = {
    "project-files": project_files, "deploy-state": deploy_state, "run-stores": run_stores,
    "sweep-files": sweep_files, "search-logs": search_logs, "doctor-logs": doctor_logs,
    "special-files": special_files, "long-names": long_names,
}
