"""Run fuzz cases (:mod:`fuzz_cases`) against the command line and judge each one.

A case is a folder of files (a model, data, a target, an output folder ...) and an
``argv``. It runs ``mcudeploy.cli.main.main(argv)`` in a worker process, in-process there
(stdout / stderr captured), so a signal (SIGFPE / SIGSEGV in C or C++ code) kills the
worker, not the test session: the parent notes the signal against the case the worker had
started and starts a new worker at the next case. A case passes only when

* the exit code is 0 or one of the error classes (1 = lint findings, 2-9, see
  :mod:`mcudeploy.errors`), a non-zero code other than 1 with one ``mcudeploy: error:`` line;
* no exception escaped ``main`` (the in-process form of a traceback) and stderr holds no
  ``Traceback``; no signal; it finished within the timeout (``SIGALRM`` in the worker, and a
  watchdog in the parent for code that never returns to Python);
* every file in the case folder (hashed before and after, symlinks by target) is unchanged,
  except the paths the case says the command was told to write;
* nothing the command printed holds a terminal escape (``ESC``) or a bidi override, and no C
  / header / linker file it wrote holds one either;
* nothing appeared outside the case folder (beside it, or in ``/dev``: ``/dev/null.jsonl``).

A case reads its own standard input (``Case.stdin``, empty by default), never the worker's.
Cases that start a Dask cluster or a full deploy run as ``python -m mcudeploy`` in a process
group of their own (``Case.subprocess``), killed whole at the timeout.

Workers limit their address space (``RLIMIT_AS``), so a runaway allocation is a
``MemoryError`` (a failure) instead of the out-of-memory killer.

    python tests/fuzz_harness.py --seed 1 --count 300          # a campaign, summary table
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import io
import json
import logging
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
UNSAFE_OUTPUT = re.compile("[\x1b\x9b\u202a-\u202e\u2066-\u2069]")
GENERATED_SUFFIXES = (".c", ".h", ".ld", ".ld.inc", ".txt", "Makefile")
ALLOWED_CODES = set(range(0, 10))
RUN_LOG = (".mcudeploy",)   # every command records its run in ./.mcudeploy (mcudeploy.runs)
EXTRA_ADDRESS_SPACE = 3 << 30


class CaseTimeout(BaseException):
    """Raised by SIGALRM in the worker (a BaseException: ``except Exception`` cannot eat it)."""


@dataclasses.dataclass
class Result:
    index: int
    family: str
    name: str
    code: int | None = None
    traceback: str = ""
    signal: int | None = None
    hang: bool = False
    altered: list[str] = dataclasses.field(default_factory=list)
    bad_message: bool = False
    unsafe_output: str = ""
    seconds: float = 0.0
    stderr_tail: str = ""

    @property
    def passed(self) -> bool:
        return (self.code in ALLOWED_CODES and not self.traceback and self.signal is None
                and not self.hang and not self.altered and not self.bad_message
                and not self.unsafe_output)

    def problems(self) -> list[str]:
        found = []
        if self.traceback:
            found.append(f"traceback: {self.traceback}")
        if self.signal is not None:
            found.append(f"signal {self.signal}")
        if self.hang:
            found.append("hang")
        if self.altered:
            found.append(f"altered files: {self.altered}")
        if self.bad_message:
            found.append(f"no one-line error: {self.stderr_tail!r}")
        if self.unsafe_output:
            found.append(f"unsafe output: {self.unsafe_output}")
        if self.code is not None and self.code not in ALLOWED_CODES:
            found.append(f"exit code {self.code}")
        return found


# -- file snapshots ---------------------------------------------------------------------
def snapshot(folder: Path) -> dict[str, str]:
    """``relative path -> sha256`` (or ``link:target``) of everything under ``folder``."""
    state = {}
    for root, folders, names in os.walk(folder, followlinks=False):
        base = Path(root)
        for name in folders + names:
            path = base / name
            relative = path.relative_to(folder).as_posix()
            if path.is_symlink():
                state[relative] = "link:" + os.readlink(path)
            elif path.is_file():
                state[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
            elif path.is_dir():
                state[relative] = "dir"
    return state


def altered_files(before: dict[str, str], after: dict[str, str], writes: tuple[str, ...],
                  protect: tuple[str, ...] = ()) -> list[str]:
    def allowed(relative: str) -> bool:
        return relative not in protect and any(
            relative == w or relative.startswith(w.rstrip("/") + "/") for w in writes)

    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    return sorted(k for k in changed if not allowed(k) and not (after.get(k) == "dir" and k not in before))


def _unsafe_generated(folder: Path, writes: tuple[str, ...]) -> str:
    for write in writes:
        root = folder / write
        paths = [root] if root.is_file() else (root.rglob("*") if root.is_dir() else [])
        for path in paths:
            if path.is_file() and not path.is_symlink() and path.name.endswith(GENERATED_SUFFIXES):
                match = UNSAFE_OUTPUT.search(path.read_text(encoding="utf-8", errors="replace"))
                if match:
                    return f"{path.relative_to(folder)} holds {match.group()!r}"
    return ""


# -- running one case (in the worker) -----------------------------------------------------
def _alarm(signum, frame):
    raise CaseTimeout()


def _in_process(argv: list[str], stdin: bytes, folder: Path, timeout: float, result: Result) -> tuple[str, str]:
    """``main(argv)`` in this process (``SIGALRM`` ends a hang); its stdout and stderr."""
    from mcudeploy.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    for handler in logging.getLogger().handlers[:]:
        logging.getLogger().removeHandler(handler)
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    cwd, saved_stdin = os.getcwd(), sys.stdin
    try:
        os.chdir(folder)
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))      # never the worker's own stdin
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result.code = main(argv)
    except CaseTimeout:
        result.hang = True
    except SystemExit as exit_:
        result.code = exit_.code if isinstance(exit_.code, int) else 2
    except BaseException as error:   # noqa: BLE001 - every escape is a finding
        frame = traceback.extract_tb(error.__traceback__)[-1]
        result.traceback = (f"{type(error).__name__}: {str(error)[:200]} at "
                            f"{Path(frame.filename).name}:{frame.lineno}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        os.chdir(cwd)
        sys.stdin = saved_stdin
    return out.getvalue(), err.getvalue()


def _in_subprocess(argv: list[str], stdin: bytes, folder: Path, timeout: float, result: Result) -> tuple[str, str]:
    """``python -m mcudeploy argv`` in a process group of its own (killed whole at a hang)."""
    process = subprocess.Popen([sys.executable, "-m", "mcudeploy", *argv], cwd=folder, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        result.hang = True
    if process.returncode is not None and process.returncode < 0 and not result.hang:
        result.signal = -process.returncode
    elif not result.hang:
        result.code = process.returncode
    return out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def _entries(folder: Path) -> set[str]:
    try:
        return set(os.listdir(folder))
    except OSError:
        return set()


def run_case(case, index: int, root: Path, timeout: float) -> Result:
    folder = root / f"case{index:05d}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    result = Result(index, case.family, case.name)
    case.build(folder)
    before = snapshot(folder)
    # /dev is shared with every other process: only names of the case's own /dev arguments count
    devices = tuple(Path(part).name for part in case.argv if part.startswith("/dev/"))
    outside_before = {place: _entries(place) for place in (root, Path("/dev"))}
    argv = [part.replace("{d}", str(folder)) for part in case.argv]
    start = time.perf_counter()
    run = _in_subprocess if getattr(case, "subprocess", False) else _in_process
    stdout, stderr = run(argv, getattr(case, "stdin", b""), folder, timeout, result)
    result.seconds = time.perf_counter() - start
    if "Traceback (most recent call last)" in stderr and not result.traceback:
        result.traceback = "Traceback printed on stderr"
    lines = [line for line in stderr.splitlines() if line.strip()]
    result.stderr_tail = lines[-1][:300] if lines else ""
    if result.code not in (None, 0, 1) and not any(line.startswith("mcudeploy: error: ") for line in lines):
        result.bad_message = True
    printed = UNSAFE_OUTPUT.search(stdout + stderr)
    if printed:
        result.unsafe_output = f"printed {printed.group()!r}"
    result.unsafe_output = result.unsafe_output or _unsafe_generated(folder, case.writes)
    for place, names in outside_before.items():      # nothing written outside the case folder
        new = sorted(_entries(place) - names)
        if place == Path("/dev"):
            new = [name for name in new if name.startswith(devices)] if devices else []
            for name in new:                       # /dev/null.jsonl, /dev/zero-journal: removed again
                with contextlib.suppress(OSError):
                    os.unlink(place / name)
        if new and not result.unsafe_output:
            result.unsafe_output = f"wrote outside the case folder: {', '.join(str(place / n) for n in new[:3])}"
    result.altered = altered_files(before, snapshot(folder), case.writes + RUN_LOG, case.protect)
    shutil.rmtree(folder, ignore_errors=True)
    return result


def _limit_memory() -> None:
    with open("/proc/self/status") as status:
        size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    limit = size + EXTRA_ADDRESS_SPACE
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))


def worker(seed: int, count: int, families: list[str] | None, indices: list[int],
           results: Path, root: Path, timeout: float) -> None:
    import fuzz_cases
    import mcudeploy.cli.main  # noqa: F401  (imported before the limit: shared libraries)

    cases = fuzz_cases.generate(seed, count, families)
    _limit_memory()
    with results.open("a", encoding="utf-8") as stream:
        for index in indices:
            stream.write(json.dumps({"start": index}) + "\n")
            stream.flush()
            result = run_case(cases[index], index, root, timeout)
            stream.write(json.dumps(dataclasses.asdict(result)) + "\n")
            stream.flush()


# -- the campaign (in the parent) -------------------------------------------------------
def _read_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            pass
    return lines


class _Worker:
    def __init__(self, number: int, seed: int, count: int, families, indices: list[int],
                 scratch: Path, timeout: float) -> None:
        self.number, self.seed, self.count, self.families = number, seed, count, families
        self.pending = list(indices)
        self.results_path = scratch / f"worker{number}.jsonl"
        self.root = scratch / f"cases{number}"
        self.timeout = timeout
        self.done: dict[int, dict] = {}
        self.process: subprocess.Popen | None = None
        self.last_progress = time.monotonic()
        self.seen_lines = 0

    def start(self) -> None:
        self.results_path.unlink(missing_ok=True)
        self.seen_lines = 0
        argv = [sys.executable, str(HERE / "fuzz_harness.py"), "--worker", "--seed", str(self.seed),
                "--count", str(self.count), "--results", str(self.results_path), "--root",
                str(self.root), "--timeout", str(self.timeout), "--indices",
                ",".join(map(str, self.pending))]
        if self.families:
            argv += ["--families", ",".join(self.families)]
        self.process = subprocess.Popen(argv, cwd=HERE, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        self.last_progress = time.monotonic()

    def poll(self, cases) -> bool:
        """Collect results; restart after a crash / hang; True while work remains."""
        lines = _read_lines(self.results_path)
        if len(lines) != self.seen_lines:
            self.seen_lines = len(lines)
            self.last_progress = time.monotonic()
        started = None
        for line in lines:
            if "start" in line:
                started = line["start"]
            else:
                self.done[line["index"]] = line
                started = None
        self.pending = [i for i in self.pending if i not in self.done]
        returncode = self.process.poll()
        stalled = time.monotonic() - self.last_progress > self.timeout + 60
        if returncode is None and not stalled:
            return True
        if returncode is None:
            self.process.kill()
            self.process.wait()
        if started is not None and started not in self.done:
            try:
                name = cases[started].name
            except Exception:   # noqa: BLE001 - only for the label
                name = "?"
            result = Result(started, cases.family(started), name)
            if stalled:
                result.hang = True
            elif returncode is not None and returncode < 0:
                result.signal = -returncode
            else:
                result.traceback = f"worker exited with {returncode}"
            self.done[started] = dataclasses.asdict(result)
            self.pending = [i for i in self.pending if i != started]
        if self.pending:
            self.start()
            return True
        return False


def run_campaign(seed: int, count: int, families: list[str] | None = None, *, workers: int = 2,
                 timeout: float = 30.0) -> list[Result]:
    """Every case of ``fuzz_cases.generate(seed, count, families)``, judged."""
    sys.path.insert(0, str(HERE))
    import fuzz_cases

    cases = fuzz_cases.generate(seed, count, families)
    scratch = Path(tempfile.mkdtemp(prefix="mcudeploy-fuzz-"))
    pool = [_Worker(n, seed, count, families, list(range(n, len(cases), workers)), scratch, timeout)
            for n in range(workers)]
    try:
        for member in pool:
            member.start()
        active = list(pool)
        while active:
            time.sleep(0.2)
            active = [member for member in active if member.poll(cases)]
    finally:
        for member in pool:
            if member.process is not None and member.process.poll() is None:
                member.process.kill()
        shutil.rmtree(scratch, ignore_errors=True)
    done = {index: line for member in pool for index, line in member.done.items()}
    return [Result(**done[index]) for index in sorted(done)]


def summary(results: list[Result]) -> dict[str, dict[str, int]]:
    """Counts per family: cases, tracebacks, signals, hangs, altered files, other failures."""
    table: dict[str, Counter] = defaultdict(Counter)
    for result in results:
        row = table[result.family]
        row["cases"] += 1
        row["tracebacks"] += bool(result.traceback)
        row["signals"] += result.signal is not None
        row["hangs"] += result.hang
        row["altered files"] += bool(result.altered)
        row["unsafe output"] += bool(result.unsafe_output)
        row["bad message"] += result.bad_message
        row["passed"] += result.passed
        row["exit 0"] += result.code == 0
    return {family: dict(counts) for family, counts in sorted(table.items())}


def _main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--families")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--indices")
    parser.add_argument("--results", type=Path)
    parser.add_argument("--root", type=Path)
    args = parser.parse_args()
    families = args.families.split(",") if args.families else None
    if args.worker:
        indices = [int(i) for i in args.indices.split(",")] if args.indices else []
        worker(args.seed, args.count, families, indices, args.results, args.root, args.timeout)
        return
    results = run_campaign(args.seed, args.count, families, workers=args.workers, timeout=args.timeout)
    for result in results:
        if not result.passed:
            print(f"FAIL {result.index} {result.family}/{result.name}: {'; '.join(result.problems())}")
    print(json.dumps(summary(results), indent=1))


if __name__ == "__main__":
    _main()
