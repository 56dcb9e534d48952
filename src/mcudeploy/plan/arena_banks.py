"""Split arena: the activation arena spread over several memory banks when no single bank
holds it (``[memory] split_arena = true``), as vendors' multi-heap pools do.

Input: a planned :class:`~.memory_plan.MemoryPlan` (one arena: every tensor's offset, its
alias groups and proved overlap pairs) and the banks the arena may use, in preference order,
each with the bytes it has free (:class:`Bank`). Output: :class:`BankSplit` - the bank and
the offset inside it of every tensor and scratch buffer, the bytes used per bank - or the
reason no split fits.

A tensor never spans two banks. The unit moved is an *alias group* (a tensor with its views
and concat slices: they share bytes by construction), kept with its inner layout:

    group extent  = max over members of (inner offset + packed size)
    group life    = [min first step, max last step + 1)

1. Assignment, largest group first (ties: earlier start, then name): each group goes to the
   first bank in preference order (fastest first; the caller puts external RAM last) whose
   live bytes stay within its free bytes at every step of the group's life:

       live(bank, t) + extent(group) - shared(group, bank, t) <= free(bank)   for t in life(group)

   where ``shared`` is what the group shared in the one-arena plan with an overlap partner
   already in that bank (a proved in-place / overlap pair may overlap again there), so every
   bank's live-set bound fits its capacity; a group no bank takes makes the split fail (the
   reason names it, its size, its steps and the largest room at that time).
2. Packing, per bank: greedy by size and, when the bank holds both ends of an overlap pair,
   the pair-aware first fit (:mod:`.paired_greedy`); the smaller arena wins. Both are
   deterministic. Fragmentation may still push a bank over: its room is then lowered by the
   excess and the assignment redone (at most ``ROUNDS`` times).

An overlap pair split over two banks (or packed apart) simply no longer overlaps: its output
loses ``alias_of``, which stays true only where the bytes are shared.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .allocators.greedy import allocate_greedy
from .buffers import Buffer, align_up, arena_size_of
from .paired_greedy import allocate_paired
from .reuse import OverlapPair

if TYPE_CHECKING:
    from .memory_plan import MemoryPlan, TensorPlacement

ROUNDS = 6


@dataclass(frozen=True)
class Bank:
    """One memory bank the arena is split over."""
    region: str
    free: int            # bytes the arena may take in the region


@dataclass
class BankSplit:
    """An arena split over several banks."""
    fits: bool
    placements: dict[str, tuple[str, int]] = field(default_factory=dict)   # placement name -> (bank, offset)
    bank_bytes: dict[str, int] = field(default_factory=dict)               # bank -> bytes used (packed)
    tensors_in: dict[str, list[str]] = field(default_factory=dict)          # bank -> tensor names
    unshared: set[str] = field(default_factory=set)   # pair outputs that no longer overlap their input
    reason: str = ""


@dataclass
class _Group:
    """Buffers planned together in one bank."""
    root: str
    size: int
    start: int
    end: int
    members: list[tuple[str, int]]       # (placement name, inner offset)
    base: int = 0                        # its offset in the one-arena plan


def _placements(plan: MemoryPlan) -> dict[str, TensorPlacement]:
    """Every on-chip placement by its name: tensors and scratch buffers (graph-split tensors
    of an external arena are not the arena's)."""
    external = set(plan.external)
    items = {name: p for name, p in plan.tensors.items() if name not in external}
    items.update({p.name: p for p in plan.scratch.values()})
    return items


def _root(name: str, tensors: dict, pair_edges: set[tuple[str, str]]) -> str:
    """The alias-group base of ``name``: follow ``alias_of`` except across an overlap pair."""
    seen = set()
    while name in tensors and (alias := tensors[name].alias_of) and (name, alias) not in pair_edges \
            and name not in seen:
        seen.add(name)
        name = alias
    return name


def plan_groups(plan: MemoryPlan) -> tuple[list[_Group], dict[str, str]]:
    """The alias groups of a placed plan and the root of every placement name."""
    items = _placements(plan)
    pair_edges = {(p.output, p.input) for p in plan.pairs}
    roots = {name: _root(name, items, pair_edges) for name in items}
    collected: dict[str, list[str]] = {}
    for name, root in roots.items():
        collected.setdefault(root, []).append(name)
    groups = []
    for root, names in sorted(collected.items()):
        base = min(items[n].offset for n in names)
        members = [(n, items[n].offset - base) for n in names]
        size = max(inner + align_up(items[n].size, plan.alignment) for n, inner in members)
        groups.append(_Group(root, size, min(items[n].first_step for n in names),
                             max(items[n].last_step for n in names) + 1, members, base))
    return groups, roots


def _credits(plan: MemoryPlan, groups: list[_Group], roots: dict[str, str]) -> dict[str, list[tuple[str, int, range]]]:
    """Root -> [(partner root, bytes, steps)]: the bytes an overlap pair shared in the one-arena
    plan, at the steps both were alive - what the pair may share again in one bank."""
    by_root = {g.root: g for g in groups}
    credits: dict[str, list[tuple[str, int, range]]] = {}
    for pair in plan.pairs:
        first, second = by_root.get(roots.get(pair.output, "")), by_root.get(roots.get(pair.input, ""))
        if first is None or second is None or first is second:
            continue
        shared = min(first.base + first.size, second.base + second.size) - max(first.base, second.base)
        steps = range(max(first.start, second.start), min(first.end, second.end))
        if shared > 0 and len(steps):
            credits.setdefault(first.root, []).append((second.root, shared, steps))
            credits.setdefault(second.root, []).append((first.root, shared, steps))
    return credits


def _demand(group: _Group, bank: str, chosen: dict[str, str], credits: dict, span: range) -> list[int]:
    """Bytes ``group`` adds to ``bank`` at each step of ``span``: its extent, less what it
    shares with an overlap partner already in that bank."""
    demand = [group.size] * len(span)
    for partner, shared, steps in credits.get(group.root, ()):
        if chosen.get(partner) == bank:
            for index, step in enumerate(span):
                if step in steps:
                    demand[index] -= shared
    return demand


def _assign(groups: list[_Group], banks: list[Bank], room: dict[str, int], steps: int,
            credits: dict) -> tuple[dict[str, str], str]:
    """Group root -> bank (rule 1 of the module docstring), or the reason one does not fit."""
    live = {bank.region: [0] * (steps + 1) for bank in banks}
    chosen: dict[str, str] = {}
    for group in sorted(groups, key=lambda g: (-g.size, g.start, g.root)):
        span = range(max(0, group.start), max(group.start + 1, group.end))
        for bank in banks:
            demand = _demand(group, bank.region, chosen, credits, span)
            if max(live[bank.region][t] + d for t, d in zip(span, demand)) <= room[bank.region]:
                chosen[group.root] = bank.region
                for t, d in zip(span, demand):
                    live[bank.region][t] += d
                break
        else:
            best = max(banks, key=lambda b: room[b.region] - max(live[b.region][t] for t in span))
            spare = room[best.region] - max(live[best.region][t] for t in span)
            return chosen, (f"tensor group {group.root!r} ({group.size} bytes, steps {group.start}-"
                            f"{group.end - 1}) fits no bank: the most room at those steps is "
                            f"{max(0, spare)} bytes in {best.region}")
    return chosen, ""


def _pack(groups: list[_Group], pairs: list[OverlapPair], alignment: int) -> tuple[dict[int | str, int], int]:
    """Offsets of one bank's groups (rule 2) and the bytes they take."""
    buffers = [Buffer(g.root, g.size, g.start, g.end, alignment) for g in groups]
    offsets = allocate_greedy(buffers).offsets
    size = arena_size_of(buffers, offsets)
    if pairs:
        paired = allocate_paired(buffers, pairs, alignment)
        paired_size = arena_size_of(buffers, paired)
        if paired_size < size:
            offsets, size = paired, paired_size
    return offsets, size


def _bank_pairs(plan: MemoryPlan, roots: dict[str, str], chosen: dict[str, str]) -> dict[str, list[OverlapPair]]:
    pairs: dict[str, list[OverlapPair]] = {}
    for pair in plan.pairs:
        output, source = roots.get(pair.output, pair.output), roots.get(pair.input, pair.input)
        if output != source and chosen.get(output) is not None and chosen.get(output) == chosen.get(source):
            pairs.setdefault(chosen[output], []).append(
                OverlapPair(output, source, pair.distance, pair.node, pair.check))
    return pairs


def split_over_banks(plan: MemoryPlan, banks: list[Bank]) -> BankSplit:
    """Spread ``plan``'s arena over ``banks`` (module docstring)."""
    groups, roots = plan_groups(plan)
    if not groups:
        return BankSplit(True)
    free = {bank.region: max(0, bank.free) for bank in banks}
    room = dict(free)
    steps = max(len(plan.order), max(g.end for g in groups))
    over: dict[str, int] = {}
    credits = _credits(plan, groups, roots)
    for _ in range(ROUNDS):
        chosen, reason = _assign(groups, banks, room, steps, credits)
        if reason:
            return BankSplit(False, reason=reason)
        pairs = _bank_pairs(plan, roots, chosen)
        packed = {bank.region: _pack([g for g in groups if chosen[g.root] == bank.region],
                                     pairs.get(bank.region, []), plan.alignment)
                  for bank in banks if any(chosen[g.root] == bank.region for g in groups)}
        over = {region: size - free[region] for region, (_, size) in packed.items() if size > free[region]}
        if not over:
            return _result(plan, groups, chosen, packed)
        for region, excess in over.items():     # fragmentation: lower the room and redo
            room[region] = max(0, room[region] - align_up(excess, plan.alignment))
    excess_text = ", ".join(f"{region} {bytes_over} bytes over" for region, bytes_over in over.items())
    return BankSplit(False, reason=f"the banks fragment: no packing fits after {ROUNDS} rounds ({excess_text})")


def _result(plan: MemoryPlan, groups: list[_Group], chosen: dict[str, str],
            packed: dict[str, tuple[dict[int | str, int], int]]) -> BankSplit:
    split = BankSplit(True, bank_bytes={region: size for region, (_, size) in packed.items()})
    for group in groups:
        region = chosen[group.root]
        base = packed[region][0][group.root]
        for name, inner in group.members:
            split.placements[name] = (region, base + inner)
            split.tensors_in.setdefault(region, []).append(name)
    for pair in plan.pairs:
        out, source = split.placements.get(pair.output), split.placements.get(pair.input)
        if out is None or source is None:
            continue
        out_size = align_up(plan.tensors[pair.output].size, plan.alignment)
        in_size = align_up(plan.tensors[pair.input].size, plan.alignment)
        shared = out[0] == source[0] and out[1] < source[1] + in_size and source[1] < out[1] + out_size
        if not shared:
            split.unshared.add(pair.output)
    return split
