"""The whole test suite's wall time as CI runs it (issue 27: under 12 minutes on 2 idle cores).

    python benchmarks/suite_bench.py [--no-shared] [--workdir /work/ci-suite]
    python benchmarks/suite_bench.py --from-log LOG --junit XML [--no-shared]   # a run already made

Clones this checkout's HEAD into ``WORKDIR/repo`` (a fresh clone: no build or cache left by an
earlier run), links ``WORKDIR/shared`` to ``../shared`` as CI has it (not with ``--no-shared``:
then ``CI`` is unset and the tests that need a model skip), and runs
``CI=true PYTHONPATH=repo/src python3 -m pytest -p no:cacheprovider --junitxml=...`` there with
the pyproject's options (``-n auto --dist loadfile``, ``--durations=20``). Records the load
average before and after (``uptime``), the wall time, the counts (passed / failed / skipped),
the xdist workers, the slowest 20 and the test files' summed durations.

Writes (or replaces) the run's section in benchmarks/results/suite.md.
"""
from __future__ import annotations

import argparse
import collections
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from paths import REPO, RESULTS

COMMAND = "CI=true PYTHONPATH=$PWD/src python3 -m pytest -p no:cacheprovider --junitxml=JUNIT"


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def run_suite(workdir: Path, shared: bool) -> tuple[str, Path]:
    """The suite in a fresh clone (``LOG`` text: uptime, pytest's output, wall, uptime; junit path)."""
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", str(REPO), str(workdir / "repo")], check=True)
    if shared:
        (workdir / "shared").symlink_to(REPO.parent / "shared")
    repo, junit = workdir / "repo", workdir / "junit.xml"
    env = {**os.environ, "PYTHONPATH": str(repo / "src")}
    env.pop("CI", None)
    if shared:
        env["CI"] = "true"
    before, started = _uptime(), time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=3000)
    wall = time.monotonic() - started
    log = f"{before}\n{proc.stdout}{proc.stderr}\nwall {wall:.2f} s\n{_uptime()}\n"
    (workdir / "pytest.log").write_text(log)      # kept beside the junit file
    return log, junit


def _file_totals(junit: Path) -> list[tuple[str, float]]:
    totals: dict[str, float] = collections.defaultdict(float)
    for case in ET.parse(junit).getroot().iter("testcase"):
        dotted = case.get("classname") or case.get("name", "")   # a collection error: no classname
        totals[(dotted.split(".")[1] if "." in dotted else dotted) + ".py"] += float(case.get("time") or 0)
    return sorted(totals.items(), key=lambda item: -item[1])


def _junit_summary(junit: Path) -> str:
    """The counts when pytest's own summary line is not in the log."""
    suite = next(ET.parse(junit).getroot().iter("testsuite")).attrib
    tests, skipped, failures, errors = (int(suite[key]) for key in ("tests", "skipped", "failures", "errors"))
    return (f"{tests - skipped - failures - errors} passed, {failures} failed, {errors} errors, {skipped} skipped "
            f"in {suite['time']}s (from the junit file)")


def section(label: str, log: str, junit: Path, note: str = "") -> str:
    """The results section of one run, from its log and junit file."""
    uptimes = [line for line in log.splitlines() if "load average" in line]
    summary = next((line.strip("= ") for line in reversed(log.splitlines()) if re.search(r"\d+ passed", line)),
                   None) or _junit_summary(junit)
    wall = re.search(r"wall ([\d.]+) s", log) or re.search(r"in ([\d.]+)s \(from the junit", summary)
    workers = re.search(r"created: (\d+)/\d+ workers?", log)
    slowest = log.split("slowest 20 durations")[1].split("short test summary")[0] if "slowest 20" in log else ""
    totals = _file_totals(junit)
    minutes = f"- wall: {float(wall.group(1)) / 60:.1f} min ({wall.group(1)} s)" if wall else "- wall: ?"
    lines = [f"## {label}", "", minutes,
             f"- result: {summary}", f"- workers: {workers.group(1) if workers else '0 (serial)' if 'session starts' in log else '? (not in the log)'}",
             f"- load before: `{uptimes[0] if uptimes else '?'}`", f"- load after: `{uptimes[-1] if uptimes else '?'}`",
             f"- summed test durations: {sum(t for _, t in totals):.0f} s over {len(totals)} files", "",
             "Slowest 20 (pytest --durations=20):", "", "```", *[s for s in slowest.strip("= \n").splitlines()
                                                                 if s.strip() and "=" not in s], "```", "",
             "Files with the largest summed durations:", "", "| file | s |", "|---|---:|",
             *[f"| {name} | {seconds:.1f} |" for name, seconds in totals[:10]], "", *([note, ""] if note else [])]
    return "\n".join(lines)


def write(label: str, text: str) -> Path:
    """Replace (or add) the run's section in benchmarks/results/suite.md."""
    out = RESULTS / "suite.md"
    head = (f"# The test suite's wall time (benchmarks/suite_bench.py)\n\nCommand, in a fresh clone: `{COMMAND}` "
            f"(with `../shared` linked; `--no-shared`: no link, CI unset).\nMachine: {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, pytest {_version('pytest')}, pytest-xdist {_version('xdist')}.\n\n")
    sections = re.split(r"(?m)^(?=## )", out.read_text())[1:] if out.exists() else []
    sections = [s for s in sections if not s.startswith(f"## {label}\n")] + [text]
    out.write_text(head + "\n".join(s.rstrip("\n") + "\n" for s in sections))
    return out


def _version(module: str) -> str:
    return __import__(module).__version__


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-shared", action="store_true", help="no ../shared link, CI unset")
    parser.add_argument("--workdir", type=Path, default=Path("/work/ci-suite"))
    parser.add_argument("--from-log", type=Path, help="record a run already made: its output (uptime lines included)")
    parser.add_argument("--junit", type=Path, help="with --from-log: its --junitxml file")
    parser.add_argument("--label", help="the section's title")
    parser.add_argument("--note", default="", help="a paragraph added to the section")
    args = parser.parse_args()
    label = args.label or ("without ../shared, CI unset" if args.no_shared else "CI: with ../shared, CI=true")
    if args.from_log:
        log, junit = args.from_log.read_text(), args.junit
    else:
        log, junit = run_suite(args.workdir, shared=not args.no_shared)
    print(write(label, section(label, log, junit, args.note)))


if __name__ == "__main__":
    main()
