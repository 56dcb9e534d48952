"""The CLI hook: every command that computes something records its run (:mod:`mcudeploy.runs`).

    code = record_command(args, argv, lambda: load_command(args.command).run(args))

:func:`record_command` opens the store (:mod:`mcudeploy.runs.location`), inserts the run,
makes it the :func:`~mcudeploy.runs.current.current_run` (commands add figures and payload
through :mod:`mcudeploy.runs.capture`), records every ``mcudeploy.*`` log warning, the git
commit, the files the command wrote (its output options, :data:`OUTPUT_OPTIONS`) and the
exit code or error, then writes the run. With ``--html FILE`` it also writes the run's HTML
report. Commands that only read (:data:`UNRECORDED_COMMANDS`) are not recorded; a new
command that computes something is recorded without any change here.

Switched off by ``--no-record`` or ``MCUDEPLOY_NO_RECORD=1`` (``--html`` still works: the
run is then kept in memory only). A store that cannot be opened or written is reported
once on stderr and the command goes on: recording never fails a command.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..errors import UsageError
from ..runs.current import active_run
from ..runs.log_capture import capturing
from ..safe_io import check_output_path

if TYPE_CHECKING:
    from ..runs.live import Run

log = logging.getLogger("mcudeploy.runs")
NO_RECORD_ENV = "MCUDEPLOY_NO_RECORD"
# deploy records each of its stages as a run itself (mcudeploy.workflow.stage_runs); init computes nothing
UNRECORDED_COMMANDS = frozenset({"targets", "runs", "doctor", "report", "deploy", "init", "data"})
HTML_COMMANDS = frozenset({"analyze", "plan", "validate"})
# options naming files a command writes; recorded as artefacts when they exist afterwards
INPUT_OPTIONS = ("model", "quantized", "calib", "inputs", "data", "labels", "test_vectors",
                 "allocation_csv", "target", "memory_pools", "config")
OUTPUT_OPTIONS = ("output", "json", "json_path", "csv", "png", "plot", "report", "export_tflm", "html")
# every option naming a file a command writes: none may be the run store
WRITTEN_OPTIONS = (*OUTPUT_OPTIONS, "log", "save_config")
# options that do not change what is computed: not part of the configuration hash
UNHASHED_OPTIONS = ("model", "runs", "no_record", "verbose", "tag", *OUTPUT_OPTIONS)

_store_warning_given = False


def add_recording_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    """``--runs`` and ``--no-record`` on every command; ``--html`` on :data:`HTML_COMMANDS`."""
    if command in UNRECORDED_COMMANDS:
        return
    group = parser.add_argument_group("run records")
    group.add_argument("--runs", type=Path, metavar="DB",
                       help="run store to record this run in (default: .mcudeploy/runs.sqlite beside "
                            "the project file, else in the current folder)")
    group.add_argument("--no-record", action="store_true",
                       help=f"do not record this run (also: {NO_RECORD_ENV}=1)")
    group.add_argument("--tag", action="append", default=[], metavar="NAME[=VALUE]",
                       help="label the recorded run, e.g. --tag sweep=alpha; repeatable")
    if command in HTML_COMMANDS:
        group.add_argument("--html", type=Path, metavar="FILE",
                           help="write this run's self-contained HTML report")


def recording_disabled(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "no_record", False)) or os.environ.get(NO_RECORD_ENV, "") not in ("", "0")


def record_command(args: argparse.Namespace, argv: Sequence[str], compute: Callable[[], int]) -> int:
    """Run ``compute`` (the command) as a recorded run (module docstring); its exit code."""
    html = getattr(args, "html", None)
    _refuse_the_store_as_output(args)
    if args.command in UNRECORDED_COMMANDS or (recording_disabled(args) and html is None):
        return compute()
    if html is not None and str(html) == "-":
        raise UsageError("--html -: the HTML report is written to a file, not to standard output (which "
                         "carries the command's own report); give a file name, e.g. --html report.html")
    if html is not None:   # before any work: no folder, no missing folder, none of the inputs
        inputs = [getattr(args, name, None) for name in INPUT_OPTIONS]
        check_output_path(html, "--html", inputs=[i for i in inputs if isinstance(i, (str, Path))])
    from ..runs.location import GitCommit

    commit = GitCommit()           # runs while the command does
    run = _start(args, argv)
    try:
        with capturing(run), active_run(run), run.recording():
            try:
                run.exit_code = compute()
            finally:
                run.record.git_commit = commit.result()
                _record_outputs(run, args)
    finally:
        if html is not None:
            _write_html(run, Path(html))
        if run.store is not None:
            run.store.close()
    return run.exit_code


def _refuse_the_store_as_output(args: argparse.Namespace) -> None:
    """:class:`UsageError` when an output option names the run store (writing it would
    replace every recorded run), before any work; recorded or not, the store is the user's."""
    from ..runs.location import default_store_path

    store = getattr(args, "runs", None) or default_store_path()
    for name in WRITTEN_OPTIONS:
        path = _path_option(args, name)
        if path is None or str(path) == "-":
            continue
        try:
            same = os.path.samefile(path, store)
        except (OSError, ValueError):
            same = False
        if same:
            option = "-o" if name == "output" else f"--{name.replace('_', '-')}"
            raise UsageError(f"{option} {path}: this is the run store {store}; writing it would replace every "
                             "recorded run. Choose another output name")


def _start(args: argparse.Namespace, argv: Sequence[str]) -> "Run":
    """The run, in the store when recording is on and the store works, else in memory."""
    from ..runs.live import Run, begin_record
    from ..runs.location import default_store_path
    from ..runs.records import sha256_of_file
    from ..runs.schema import RunStoreError
    from ..runs.store import RunStore

    details: dict[str, Any] = {"config": _config(args), "unhashed": UNHASHED_OPTIONS, "model": _hashable(args),
               "target": _text_option(args, "target"), "stage": _text_option(args, "stage"),
               "tags": dict(_tag(text) for text in getattr(args, "tag", None) or []),
               "git_commit": None}   # known when the command ends
    if not recording_disabled(args):
        try:
            store = RunStore.open(getattr(args, "runs", None) or default_store_path())
        except RunStoreError as error:
            _warn_store_once(error)
        else:
            try:
                return store.begin(args.command, list(argv), **details)
            except RunStoreError as error:
                store.close()
                _warn_store_once(error)
    record = begin_record(args.command, list(argv), **details)
    if details["model"] is not None and details["model"].is_file():
        record.model_sha256 = sha256_of_file(details["model"])
    return Run(record)


def _hashable(args: argparse.Namespace) -> Path | None:
    """The model path to record and hash, or None when it cannot be read (``/proc/self/mem``,
    a FIFO): the command itself then says so in one line, the run is recorded without it."""
    from ..errors import McuDeployError
    from ..text_inputs import check_readable

    path = _path_option(args, "model")
    if path is None:
        return None
    try:
        if not path.exists():
            return path       # recorded by name; the command says it is missing
    except (OSError, ValueError):
        return None           # a name the file system refuses: the command says so in one line
    try:
        check_readable(path, "model")
    except McuDeployError:
        return None
    return path


def _warn_store_once(error: Exception) -> None:
    global _store_warning_given
    if not _store_warning_given:
        log.warning("run not recorded: %s", error)
        _store_warning_given = True


def _config(args: argparse.Namespace) -> dict[str, Any]:
    """The command's options as JSON-able values (paths as text; options not given left out)."""
    config = {}
    for name, value in sorted(vars(args).items()):
        if name in ("command", "verbose", "runs", "no_record", "tag") or value is None or callable(value):
            continue
        if isinstance(value, Path):
            value = str(value)
        elif isinstance(value, (list, tuple)):
            value = [str(v) if isinstance(v, Path) else v for v in value]
        config[name] = value
    return config


def _tag(text: str) -> tuple[str, str]:
    name, _, value = text.partition("=")
    if not name.strip():
        raise UsageError(f"--tag {text!r}: give NAME or NAME=VALUE")
    return name.strip(), value.strip()


def _path_option(args: argparse.Namespace, name: str) -> Path | None:
    value = getattr(args, name, None)
    return Path(value) if isinstance(value, (str, Path)) else None


def _text_option(args: argparse.Namespace, name: str) -> str | None:
    value = getattr(args, name, None)
    return str(value) if value is not None else None


def _exists(path: Path) -> bool:
    """Whether ``path`` exists; ``False`` for a name the file system refuses (too long, a NUL,
    a symlink loop): the command has refused it already, the record only says what was written."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _record_outputs(run: "Run", args: argparse.Namespace) -> None:
    for name in OUTPUT_OPTIONS:
        if name == "html":
            continue   # written after the run ends (it shows the final status)
        path = _path_option(args, name)
        if path is not None and str(path) != "-" and _exists(path):
            try:
                run.artefact(path)
            except OSError as error:
                run.warn(f"artefact {path} not recorded: {error}")


def _write_html(run: "Run", path: Path) -> None:
    from ..report.html import write_html_report

    write_html_report(run.record, path)
    print(f"HTML report written to {path}", file=sys.stderr)   # stderr: stdout may carry --json -
    run.artefact(path)
    run.flush()
