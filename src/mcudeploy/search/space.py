"""The option space of the compile-option search, as data: every knob, its values, when it
applies, and what the search never varies.

Input: the target, the options the user gave (their fields are *locked*: a constraint, never
varied), the graph (for node names) and an optional ``--space FILE``. Output: a
:class:`Space` - the knobs with their candidate values, first value = the base's - and the
helpers that turn a configuration (knob -> value) into checked
:class:`~mcudeploy.options.DeploymentOptions`.

mcudeploy back end (:data:`KNOBS`, one row per :class:`~mcudeploy.options.DeploymentOptions`
field)::

    schedule              memory-aware | file               execution order
    reuse                 on | off                          in-place, overlap, concat reuse
    overlap               on | off       (with reuse)       partial overlap of an output on its input
    concat_in_place       on | off       (with reuse)       inputs written into the Concat's slices
    alignment             4 | 8 | 16 | 32                   tensor offsets and sizes
    io_in_arena           on | off                          graph inputs / outputs in the arena
    activation_region     auto | each allowed region        arena pinned to one bank
    external_activations  on | off       (external RAM)     the arena may go to PSRAM
    split_arena           off | on                          arena over several banks
    weights               auto | flash | ram                where weights live
    weights_ram_limit     all | the bytes of the hottest weights that remove 1/4, 1/2, 3/4 of
                          their flash traffic (slow flash, weights not in flash): the on-chip
                          RAM the copies may take
    kernels               auto | arena | reference          kernel variants (fastest = auto when it fits)
    force_cpu             () | nodes the NPU refuses        NPU / CPU mapping override
    tiling_auto           off | on       (pipeline tiles)   layers run tile by tile
    tiling_max_overhead   0.15 | 0.3     (with tiling_auto) extra MACC (halos) accepted
    split_auto            off | on       (external RAM)     graph split, crossing tensors off chip
    split_levels          off | on       (external RAM)     cut at every resolution level, tile each level
    split_limit           room | each smaller bank (with levels) the on-chip peak the levels are tiled to
    channel_splits        the base's only (--space varies)  Convs split by output channels
    input_channel_splits  the base's only (--space varies)  Convs summed over input-channel groups

The two channel splits are knobs with one value unless ``--space`` gives more (e.g.
``input_channel_splits = [{}, {conv7 = 2}, {conv7 = 4}]``): they change no figure the search
scores for the better on their own (the same weights, a larger arena for the int32
accumulator or the channel Concat, more passes), they pay off where the weights are streamed
or an NPU limits one layer's weights, which the user knows and names.

Constraints, never varied: the target, ``sram_limit``, ``reserve``, ``reserve_regions``,
``stack``, ``memory_pools``, and every option the user gave (command line or ``--config``).
Not in the space, and why: the allocator (the planner already races greedy, branch and
bound, CP-SAT and the pair-aware first fit and keeps the smallest arena: nothing to choose);
per-layer kernel variants (the options carry one preference for the model); int8 / int16 per
layer (a change of precision needs re-quantization with calibration data: out of scope of a
compile search, see ``mcudeploy quantize --int16``).

``--space FILE`` (TOML, table ``[space]``, ``knob = [values]``) replaces the values of the
knobs it names; an unknown knob or a value the option refuses is a
:class:`~mcudeploy.errors.UsageError` naming the file, the knob and the accepted values.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import UsageError
from ..options import KERNEL_PREFERENCES, OPTION_SPECS, SCHEDULES, WEIGHT_PLACEMENTS, DeploymentOptions
from ..text_inputs import read_toml

BOOLS = (True, False)
ALIGNMENTS = (4, 8, 16, 32)
CONSTRAINT_FIELDS = frozenset({"target", "executor", "memory_pools", "sram_limit", "reserve", "reserve_regions",
                               "stack", "time_limit", "tiling_regions", "tiling_limit",
                               "tiling_mode", "split_points", "split_limit",
                               "external_region"})


@dataclass(frozen=True)
class SpaceContext:
    """What the knobs' values depend on."""
    target: Any                           # mcudeploy.targets.Target
    base: DeploymentOptions
    npu_refused: tuple[str, ...] = ()     # nodes whose NPU layers fail (force_cpu candidates)
    tiling: bool = False                  # the pipeline tiles ([tiling] auto)
    graph_split: bool = False             # the pipeline splits graphs ([split] auto)
    weight_budgets: tuple[int, ...] = ()  # [weights] ram_limit values (placement.hot_weight_budgets)


@dataclass(frozen=True)
class Knob:
    name: str                              # = the DeploymentOptions field
    values: Callable[[SpaceContext], tuple]
    what: str
    applies: Callable[[dict], bool] = lambda config: True   # irrelevant values are normalised away
    enables: tuple[tuple[str, Any], ...] = ()   # the other knobs' values that make it apply, set by a
    #                                             move to one of its values (a RAM limit for weights in flash)


def pipeline_has(stage: str) -> bool:
    """Whether the pipeline implements ``[tiling] auto`` / ``[split] auto`` (the plan modules
    the driver runs for them exist)."""
    import importlib.util
    return importlib.util.find_spec(f"mcudeploy.plan.{stage}") is not None


def _regions(context: SpaceContext) -> tuple:
    """Auto, or each region the arena may be pinned to (external ones only when the base
    allows external activations: ``--on-chip-only`` keeps PSRAM out)."""
    target = context.target
    has_npu = target.npu is not None
    return (None, *(r.name for r in target.regions
                    if r.writable and r.holds_data and (r.npu_access or not has_npu)
                    and (r.on_chip or context.base.external_activations)
                    and r.name not in context.base.reserve_regions))


def _level_peaks(context: SpaceContext) -> tuple:
    """``split_limit`` values with ``split_levels``: the whole room (the default, fewest tiles),
    then the size of every smaller on-chip bank, largest first. A peak that fits a smaller bank
    puts the arena there, and the smaller banks are often the fast ones (the STM32N6's 448 KiB
    npuRAMs: 6.4 GB/s, one cycle, against cpuRAM2's 1 MiB at 3.2 GB/s); more tiles buy it (U-Net
    256: 727 KiB on chip in cpuRAM2 is slower than the hand configuration's 436 KiB in npuRAM3)."""
    banks = sorted({r.size for r in context.target.regions if r.on_chip and r.writable and r.holds_data},
                   reverse=True)
    if not banks or not (context.graph_split and context.tiling):
        return (context.base.split_limit,)
    return (context.base.split_limit, *banks[1:])


def _has_external(context: SpaceContext) -> bool:
    return any(r.writable and r.holds_data and not r.on_chip for r in context.target.regions)


KNOBS: tuple[Knob, ...] = (
    Knob("schedule", lambda c: SCHEDULES, "execution order"),
    Knob("reuse", lambda c: BOOLS, "in-place, overlap and concat reuse"),
    Knob("overlap", lambda c: BOOLS, "an output written over its dying input", lambda k: k.get("reuse", True)),
    Knob("concat_in_place", lambda c: BOOLS, "Concat inputs written into its slices", lambda k: k.get("reuse", True)),
    Knob("alignment", lambda c: ALIGNMENTS, "tensor alignment in bytes"),
    Knob("io_in_arena", lambda c: BOOLS, "graph inputs / outputs in the arena"),
    Knob("activation_region", _regions, "the bank the arena is pinned to (auto: fastest that holds it)"),
    Knob("external_activations", lambda c: BOOLS if _has_external(c) else (False,), "the arena may use PSRAM"),
    Knob("split_arena", lambda c: (False, True), "the arena spread over several banks",
         lambda k: k.get("activation_region") is None),
    Knob("weights", lambda c: WEIGHT_PLACEMENTS, "weights in flash or copied to RAM"),
    Knob("weights_ram_limit", lambda c: (None, *c.weight_budgets), "on-chip RAM the copied weights may take",
         lambda k: k.get("weights", "auto") != "flash", enables=(("weights", "auto"),)),
    # "fastest" is "auto" whenever the deployment fits, and fails otherwise: not worth a trial
    Knob("kernels", lambda c: tuple(k for k in KERNEL_PREFERENCES if k != "fastest"), "kernel variants"),
    Knob("force_cpu", lambda c: ((), *((name,) for name in c.npu_refused)) if c.target.npu else ((),),
         "nodes forced onto the CPU"),
    Knob("tiling_auto", lambda c: (False, True) if c.tiling else (False,), "layers run tile by tile",
         lambda k: not k.get("split_levels")),
    Knob("tiling_max_overhead", lambda c: (0.15, 0.3) if c.tiling else (c.base.tiling_max_overhead,),
         "most extra MACC the automatic tiling accepts", lambda k: bool(k.get("tiling_auto"))),
    Knob("split_auto", lambda c: (False, True) if c.graph_split and _has_external(c) and c.base.external_activations
         else (False,), "graph split: crossing tensors off chip (not with --on-chip-only)",
         lambda k: not k.get("split_levels")),
    Knob("split_levels", lambda c: (False, True) if c.graph_split and c.tiling and _has_external(c)
         and c.base.external_activations else (False,),
         "cut at every resolution level, spill what crosses, tile each level to fit (not with --on-chip-only)"),
    Knob("split_limit", _level_peaks, "the on-chip peak the levels are tiled to (less: more tiles, more MACC)",
         lambda k: bool(k.get("split_levels"))),
    Knob("channel_splits", lambda c: (c.base.channel_splits,), "Convs split by output channels"),
    Knob("input_channel_splits", lambda c: (c.base.input_channel_splits,),
         "Convs summed over input-channel groups (int32 accumulator)"),
)
KNOB_NAMES = tuple(knob.name for knob in KNOBS)
KNOB_TABLE = {knob.name: knob for knob in KNOBS}


@dataclass
class Space:
    """Candidate values per knob (the base's value first) and the locked knobs."""
    values: dict[str, tuple]
    locked: frozenset[str]
    base: DeploymentOptions
    notes: list[str] = field(default_factory=list)

    @property
    def free(self) -> list[str]:
        """The knobs with more than one value, in table order."""
        return [name for name, values in self.values.items() if len(values) > 1]

    def base_config(self) -> dict[str, Any]:
        return {name: values[0] for name, values in self.values.items()}

    def size(self) -> int:
        total = 1
        for values in self.values.values():
            total *= len(values)
        return total


def check_against_target(context: SpaceContext, overrides: dict[str, list]) -> None:
    """A ``--space`` value the target cannot take is the user's error, said before any trial:
    external RAM (``external_activations`` / ``split_auto`` on) on a target without one, an
    ``activation_region`` the target does not have."""
    target = context.target
    names = [r.name for r in target.regions]
    if not _has_external(context):
        for knob in ("external_activations", "split_auto", "split_levels"):
            if True in overrides.get(knob, []):
                raise UsageError(f"--space: knob {knob!r} = on needs external RAM (PSRAM), and target "
                                 f"{target.name!r} has none (regions {', '.join(names)}); remove the value")
    for region in overrides.get("activation_region", []):
        if region is not None and region not in names:
            raise UsageError(f"--space: knob 'activation_region' = {region!r}: target {target.name!r} has no such "
                             f"region; its regions are {', '.join(names)}")


def build_space(context: SpaceContext, locked: frozenset[str] = frozenset(),
                overrides: dict[str, list] | None = None) -> Space:
    """The space for ``context`` (module docstring); ``overrides`` from ``--space``, checked
    against the target (:func:`check_against_target`)."""
    overrides = overrides or {}
    check_against_target(context, overrides)
    values: dict[str, tuple] = {}
    for knob in KNOBS:
        current = getattr(context.base, knob.name)
        if knob.name in locked and knob.name not in overrides:
            values[knob.name] = (current,)
            continue
        candidates = tuple(overrides.get(knob.name, knob.values(context)))
        values[knob.name] = (current, *(v for v in candidates if v != current))
    return Space(values, locked, context.base)


def move(config: dict[str, Any], name: str, value: Any) -> dict[str, Any]:
    """``config`` with knob ``name`` set to ``value`` and, when the knob would not apply, the
    values of :attr:`Knob.enables` that make it apply (normalised)."""
    moved = {**config, name: value}
    knob = KNOB_TABLE.get(name)         # None: a knob of another back end (Vela's), with no rules here
    if knob is not None and value != getattr(DeploymentOptions(), name) and not knob.applies(moved):
        moved.update(dict(knob.enables))
    return normalise(moved)


def normalise(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with the values of knobs that do not apply set to their defaults, so two
    configurations that deploy the same way compare equal."""
    defaults = DeploymentOptions()
    result = dict(config)
    for knob in KNOBS:
        if knob.name in result and not knob.applies(result):
            result[knob.name] = getattr(defaults, knob.name)
    return result


def config_key(config: dict[str, Any]) -> tuple:
    """A hashable identity of a (normalised) configuration."""
    return tuple((name, tuple(value) if isinstance(value, (list, tuple)) else value)
                 for name, value in sorted(normalise(config).items()))


def options_for(base: DeploymentOptions, config: dict[str, Any]) -> DeploymentOptions:
    """``base`` with ``config``'s knob values, each checked like a ``--config`` value."""
    return base.with_values(**normalise(config))


def load_space_file(path: str | Path) -> dict[str, list]:
    """``--space FILE``: ``[space]`` knob = [values], each value checked (module docstring)."""
    path = Path(path)
    document = read_toml(path, "--space")
    if set(document) != {"space"} or not isinstance(document["space"], dict):
        raise UsageError(f"--space {path}: expected one table [space] of knob = [values]; "
                         f"found {', '.join(map(repr, document)) or 'nothing'}")
    return {name: check_knob_values(name, values, f"--space {path}")
            for name, values in document["space"].items()}


def check_knob_values(name: str, values: Any, where: str) -> list:
    """The values of knob ``name``, each checked by its option's rules."""
    if name not in KNOB_NAMES:
        raise UsageError(f"{where}: unknown knob {name!r}; the knobs are {', '.join(KNOB_NAMES)}")
    if not isinstance(values, list) or not values:
        raise UsageError(f"{where}: knob {name!r} needs a non-empty list of values, got {values!r}")
    checked: list[Any] = []
    for value in values:
        if name == "activation_region" and value == "auto":
            checked.append(None)
            continue
        if name == "force_cpu" and isinstance(value, str):
            value = [value]
        try:
            option = DeploymentOptions().with_values(**{name: value})
        except UsageError as err:
            spec = OPTION_SPECS[name]
            accepted = f"; accepted: {', '.join(map(str, spec.choices))}" if spec.choices else ""
            raise UsageError(f"{where}: knob {name!r}: {err}{accepted}") from None
        checked.append(getattr(option, name))
    return checked


def describe_value(value: Any) -> str:
    """A knob value as the trial log shows it."""
    if value is True:
        return "on"
    if value is False:
        return "off"
    if value is None:
        return "auto"
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
        return "{" + ", ".join(f"{name} = {count}" for name, count in value) + "}"     # node = count
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)
