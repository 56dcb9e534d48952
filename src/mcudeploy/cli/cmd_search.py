"""``mcudeploy search``: search the compile options of a model on a target, with a trial log.

    mcudeploy search MODEL --target T [--objective memory|latency|balanced] [--config FILE]
        [deployment options] [--budget N | --time S] [-j N] [--seed N] [--space FILE]
        [--flash-limit B] [--npu-only] [--strict-alignment] [--backend mcudeploy|vela]
        [--log FILE] [-o BEST.toml [--front]] [--json F|-]

Every deployment option given (on the command line or in ``--config``) is a constraint the
search never varies. Each trial is one configuration run through the pipeline
(:func:`mcudeploy.search.run_search`); ``--log FILE`` gets one line per trial (PASS, or FAIL
with every reason and its numbers) and ``FILE.jsonl`` the same as JSON lines, written as the
search runs (an existing ``FILE.jsonl`` that is not a trial log is refused, never replaced). ``-o`` writes the winning configuration as a ``--config`` file for ``plan``,
``estimate`` and ``generate``; with ``--front`` every point of the on-chip front (the memory
objective's candidates: arena on chip, each faster than the smaller ones) is written beside it
as ``BEST.trialN.toml``, so the trade of RAM for latency is the user's choice. Exit 0 when a configuration passes; 8 when none does (after
printing the verified what-if fixes); errors exit with their class's code and keep the log
written so far.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import DoesNotFitError, McuDeployError, UsageError
from ..options import SECTIONS, DeploymentOptions, load_options
from ..report.console import make_console
from ..safe_io import check_sidecar_path
from ..search import Constraints, SearchRequest, load_space_file, run_search
from ..search.log import check_log_paths, cost_note
from ..search.pareto import OBJECTIVES
from ..search.reasons import exact
from ..search.records import FOUND_BY, latency_text
from ..text_inputs import read_toml
from ..units import parse_size
from .cmd_analyze import input_shapes_from
from .deployment_args import add_deployment_arguments, deployment_options
from .output import add_json_argument, check_outputs, emit, to_stdout
from .registry import command


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", type=Path, help="model to search (.onnx / .tflite / .h5 / .keras)")
    parser.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
                        help="fix the shape of input NAME; repeatable")
    add_deployment_arguments(parser, target_required=True)
    group = parser.add_argument_group("search")
    group.add_argument("--objective", choices=OBJECTIVES, default="memory",
                       help="what the best configuration minimises (default memory: on-chip RAM first, then a step to a "
                            "larger, faster configuration when it saves a larger share of latency than it adds "
                            "of RAM; see --front)")
    limit = group.add_mutually_exclusive_group()
    limit.add_argument("--budget", type=int, metavar="N", help="trials to run exploring (default 100)")
    limit.add_argument("--time", type=float, metavar="S", help="seconds to explore")
    group.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")
    group.add_argument("--seed", type=int, default=0, help="seed of the random moves (default 0)")
    group.add_argument("--space", type=Path, metavar="FILE.toml", help="knob values to try: [space] knob = [values]")
    group.add_argument("--flash-limit", metavar="BYTES", help="most flash the weights may take (e.g. 1M)")
    group.add_argument("--npu-only", action="store_true", help="fail any trial that leaves a layer with MACC on the CPU")
    group.add_argument("--strict-alignment", action="store_true",
                       help="fail any trial with an NPU layer whose channels are not a multiple of the NPU's alignment")
    group.add_argument("--backend", choices=("mcudeploy", "vela"), default="mcudeploy",
                       help="compiler to drive: mcudeploy's pipeline, or Arm's Vela (Ethos-U targets, .tflite)")
    group.add_argument("--no-fixes", dest="fixes", action="store_false", help="no what-if fixes when nothing passes")
    group.add_argument("--log", type=Path, metavar="FILE",
                       help="trial log; also writes FILE.jsonl (JSON lines), which must not be a file of yours")
    group.add_argument("-o", "--output", type=Path, metavar="BEST.toml",
                       help="write the best configuration (with --backend vela also BEST.vela.ini, which must "
                            "not be a file of yours)")
    group.add_argument("--front", action="store_true",
                       help="with -o BEST.toml: also write every point of the on-chip front (the configurations "
                            "whose arena is on chip, each faster than the smaller ones) as BEST.trialN.toml")
    add_json_argument(parser, "the search result (every trial, best, front, critical limit, fixes)")


def _config_fields(path: Path | None) -> set[str]:
    """The option fields a ``--config`` file sets (it is read again by load_options, which checks it)."""
    if path is None:
        return set()
    try:
        document = read_toml(path, "--config")
    except McuDeployError:
        return set()          # load_options says what is wrong
    return {SECTIONS[s][k].field for s, table in document.items() if s in SECTIONS and isinstance(table, dict)
            for k in table if k in SECTIONS[s]}


def _request(args: argparse.Namespace) -> SearchRequest:
    options = deployment_options(args)
    from_file = load_options(args.config) if args.config is not None else DeploymentOptions()
    locked = _config_fields(args.config) | {name for name in DeploymentOptions.__dataclass_fields__
                                            if getattr(options, name) != getattr(from_file, name)}
    flash_limit = None
    if args.flash_limit is not None:
        try:
            flash_limit = parse_size(args.flash_limit)
        except ValueError as err:
            raise UsageError(f"--flash-limit {args.flash_limit!r}: {err}") from None
    budget = args.budget if args.budget is not None or args.time is not None else 100
    return SearchRequest(target=options.target, options=options, locked=frozenset(locked - {"target"}),
                         objective=args.objective, budget=budget, time_limit=args.time, jobs=args.jobs,
                         seed=args.seed, constraints=Constraints(flash_limit, args.npu_only, args.strict_alignment),
                         space=load_space_file(args.space) if args.space is not None else {},
                         backend=args.backend, input_shapes=input_shapes_from(args) or None,
                         log_path=args.log, fixes=args.fixes)


@command("search", "Search compile options (schedule, reuse, regions, split arena, kernels, ...) with a "
         "trial log; verified what-if fixes when nothing fits", _arguments)
def run(args: argparse.Namespace) -> int:
    check_outputs({"-o": args.output, "--json": args.json}, [args.model, args.config, args.space])
    if args.log is not None:
        check_log_paths(args.log, [args.model, args.config, args.space])
    if args.output is not None and args.backend == "vela":
        check_sidecar_path(_vela_ini(args.output), "-o (its sidecar BEST.vela.ini)", belongs=_is_vela_ini,
                           inputs=[args.model, args.config, args.space])
    if args.front:
        _check_front_files(args)
    request = _request(args)
    result = run_search(args.model, request)
    if not to_stdout(args.json):
        _print(result)
    if args.json is not None:
        emit(json.dumps(result.to_json(), indent=1, default=str) + "\n", args.json, "--json")
    console = make_console()
    if result.found and args.output is not None:
        if result.vela is not None:
            ini = _vela_ini(args.output)
            check_sidecar_path(ini, "-o (its sidecar BEST.vela.ini)", belongs=_is_vela_ini)
            emit(result.vela.ini_text, ini, "-o")
            emit(result.best_toml(str(ini)), args.output, "-o")
        else:
            emit(result.best_toml(), args.output, "-o")
        console.print(f"best configuration written to {args.output} (use it with --config)", markup=False)
        if args.front:                  # refused with --backend vela before the search
            for trial in result.on_chip_front:
                path = _front_file(args.output, trial.index)
                check_sidecar_path(path, "--front", belongs=_written_by_search)
                emit(result.trial_toml(trial), path, "--front")
            console.print(f"on-chip front: {len(result.on_chip_front)} configuration(s) written beside it as "
                          f"{_front_file(args.output, 0).name.replace('trial0', 'trialN')}", markup=False)
    if not result.found:
        if args.output is not None:
            console.print(f"nothing written to {args.output}: no configuration passes", markup=False)
        verified = sum(1 for fix in result.fixes if fix.verified)
        raise DoesNotFitError(f"{args.model.name}: no configuration of {len(result.trials)} trial(s) fits "
                              f"{result.target}" + (f"; {verified} verified what-if fix(es) above" if verified else
                                                    "; no what-if fix was verified"))
    return 0


def _front_file(output: Path, index: int) -> Path:
    return output.with_name(f"{output.stem}.trial{index}.toml")


def _first_line_starts(path: Path, prefix: str) -> bool:
    """Whether ``path``'s first line starts with ``prefix`` (how search knows a file it wrote)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as stream:
            return stream.readline(200).startswith(prefix)
    except OSError:
        return False


def _written_by_search(path: Path) -> bool:
    """Whether ``path`` is a configuration ``search`` wrote (its first line says so)."""
    return _first_line_starts(path, "# " + FOUND_BY)


def _check_front_files(args: argparse.Namespace) -> None:
    """``--front``: needs ``-o``, and no file of the user's named like a front file beside it."""
    if args.output is None or str(args.output) == "-":
        raise UsageError("--front writes the on-chip front beside the -o file: give -o BEST.toml")
    if args.backend == "vela":
        raise UsageError("--front: the Vela back end has no on-chip front of mcudeploy configurations; drop --front")
    for path in sorted(args.output.parent.glob(f"{args.output.stem}.trial*.toml")):
        check_sidecar_path(path, "--front", belongs=_written_by_search, inputs=[args.model, args.config, args.space])


def _vela_ini(output: Path) -> Path:
    return output.with_name(output.stem + ".vela.ini")


def _is_vela_ini(path: Path) -> bool:
    """Whether ``path`` is a vela.ini mcudeploy wrote (its first line says so)."""
    return _first_line_starts(path, "; generated by mcudeploy")


def _figures(trial) -> str:
    metrics = trial.metrics
    latency = latency_text(trial)
    return (f"latency {latency}, on-chip {metrics.on_chip_bytes} B, external {metrics.external_bytes} B, "
            f"flash {metrics.flash_bytes} B")


def _weights_line(best, default) -> str:
    """What the best's copy of weights into RAM costs on chip, beside the defaults' ("" without one)."""
    copied = best.metrics.weights_in_ram
    if not copied:
        return ""
    regions = ", ".join(f"{size} B in {region}" for region, size in sorted(copied.items()))
    before = default.metrics.weights_in_ram if default is not None and default.metrics is not None else {}
    then = f"the defaults copy {sum(before.values())} B" if before else "the defaults keep them in flash"
    return f"best copies weights from flash into RAM: {sum(copied.values())} B ({regions}); {then}"


def _print(result) -> None:
    console = make_console()
    say = lambda text: console.print(text, markup=False)     # noqa: E731 - names come from files
    say(f"search: {len(result.trials)} trial(s) in {result.seconds:.1f} s, {result.pruned} pruned by the bounds, "
        f"objective {result.request.objective}, executor {result.request.options.executor}")
    cost = cost_note(result.trials)
    if cost is not None:
        say(cost)
    default = result.default
    if default is not None:
        say(f"defaults (trial 0): {default.status}" + (f", {_figures(default)}" if default.passed else
            " - " + "; ".join(f"{r.code}: {r.message}" for r in default.reasons[:3])))
    if result.best is not None:
        say(f"best (trial {result.best.index}): {_figures(result.best)}")
        line = _weights_line(result.best, default)
        if line:
            say(line)
        say("pareto front (latency, on-chip RAM, flash): trials " + ", ".join(str(t.index) for t in result.front))
        if len(result.on_chip_front) > 1:
            say("on-chip front (arena on chip; more on-chip RAM, less latency; -o --front writes each): "
                + ", ".join(f"trial {t.index} {t.metrics.on_chip_bytes} B / {latency_text(t)}"
                            for t in result.on_chip_front))
    if result.critical is not None and result.critical.found:
        say(f"critical sram_limit: {exact(result.critical.passing)} passes (trial "
            f"{result.critical.passing_trial.index}); {exact(result.critical.failing)} fails (trial "
            f"{result.critical.failing_trial.index if result.critical.failing_trial else '-'})"
            + ("" if result.critical.exact else f"; not bisected further: --time {result.request.time_limit:g} s spent"))
    for rank, fix in enumerate(result.fixes, 1):
        mark = "verified" if fix.verified else "NOT verified"
        say(f"fix {rank} [{fix.kind}, {mark}{'' if fix.exact else ', needs retraining'}]: {fix.title}")
        for key, value in fix.price.items():
            say(f"    {key}: {value}")
        for line in fix.details:
            say(f"    {line}")
        for line in fix.apply:
            say(f"    apply: {line}")
    if result.baseline:
        say("mcudeploy's own pipeline on this target: " + ", ".join(f"{k.removeprefix('mcudeploy_')} {v}"
                                                                   for k, v in result.baseline.items()))
    for note in result.notes:
        say(note)
