"""In-place and overlap reuse: which tensors may share bytes, each proved safe by a named check.

Input: the graph, the execution order and the :class:`~.liveness.TensorLife` records.
Output: a :class:`ReuseSet` of

* :class:`Alias` - a tensor that *is* bytes of another (its base) at a byte offset:
  - ``view`` (Reshape / Flatten / Squeeze / Unsqueeze / Identity / Dropout): same bytes,
    the kernel (``mcu_reshape``) is a no-op when input and output coincide;
  - ``concat-slice``: a Concat input written by its producer straight into its slice of
    the Concat's output; the Concat itself then runs no kernel (``elided``).
  - ``channel-slice``: the same for an NHWC channel concat (the last axis, leading axes not
    all 1), whose slices are strided: pixel ``p``, channel ``k`` of input ``i`` is element
    ``p * C_total + C_offset_i + k`` of the output, so ``offset = C_offset_i * itemsize``
    and ``channel_stride = C_total`` (elements between pixels, ``mcu_dims.c_stride``). Only
    when every producer's chosen kernel writes a strided output
    (:mod:`mcudeploy.kernels.strided_output`) and the Concat is each input's only reader
    (any other reader would read strided data) and no input is a graph output.
  - ``row-slice``: a Slice whose output is one contiguous byte range of its input (steps 1;
    the axes before the sliced one have extent 1 in the output, those after it are whole:
    in NHWC with batch 1, whole rows - a tile's stripe, :mod:`mcudeploy.passes.tile_spatial`)
    is those bytes, at ``offset = sum(start_i * stride_i) * itemsize``; the Slice runs no
    kernel (``elided``). Refused when the offset is not a multiple of the alignment (the
    Slice then copies).
  An alias group (a base and its aliases) is placed as one buffer alive over the union of
  the members' lifetimes.
* :class:`OverlapPair` - a node's output may start ``distance`` bytes (or more) below its
  dead input (:mod:`.overlap` proves the distance from the kernel's access order;
  0 = fully in place). Elementwise ops and activations get 0; convolutions and pools a
  few rows of pixels; stride-2 ones often 0 or less than one row.

Checks (each refusal is recorded with its reason): the input's last reader is this node
(``input-dies-here``), it is not a graph output (``not-graph-output``), both tensors are in
the arena, the groups are plain (no concat slices; an input group of slices is allowed when
the node reads its base, which spans them all), and the kernel's access order allows it.
Of a node's dead inputs, the one whose overlap saves most bytes (``in + out - max(out,
distance + in)``) is paired. A Concat is done in place only when its slices are contiguous (all axes before the concat
axis are 1) or channel slices (above), no input is requantized, every input is a distinct
node output, every slice starts at a multiple of the alignment, and doing so does not raise
the live-set bound (kept per step as the concats are decided, :class:`_LiveSum`).

Folding a Pad into the following Conv is a graph rewrite, not a plan: it is the pass
:mod:`mcudeploy.passes.fold_pads`, run by :func:`mcudeploy.driver.deploy`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..ir import Graph, Node, Value
from ..kernels.overlap import overlap_distance as reference_distance
from ..kernels.strided_output import strided_output_refusal
from .buffers import Buffer
from .liveness import KIND_OUTPUT, TensorLife

DistanceFunction = Callable[[Node, Value], "int | str"]
StridedOutputRule = Callable[[Node], "str | None"]
VIEW_OPS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout")


@dataclass(frozen=True)
class Alias:
    """A value stored inside another (``base``, at ``offset``): a view, or an in-place result."""
    name: str
    base: str
    offset: int
    check: str
    channel_stride: int = 0   # channel-slice: elements between pixels (mcu_dims.c_stride); 0 = dense


@dataclass(frozen=True)
class OverlapPair:
    """An output that may start ``distance`` bytes below its input (in-place / overlap reuse)."""
    output: str
    input: str
    distance: int
    node: str
    check: str


@dataclass
class ReuseSet:
    """The aliases and overlap pairs proved for one graph."""
    aliases: dict[str, Alias] = field(default_factory=dict)
    pairs: list[OverlapPair] = field(default_factory=list)
    refusals: list[tuple[str, str]] = field(default_factory=list)
    elided: list[str] = field(default_factory=list)
    external: frozenset[str] = frozenset()   # tensors in the external arena (graph split)

    def crosses(self, first: str, second: str) -> bool:
        """True when one tensor is in the external arena and the other is not: they never
        share bytes (a view between them is a transfer, :mod:`.memory_plan`)."""
        return (first in self.external) != (second in self.external)

    def root(self, name: str) -> tuple[str, int]:
        """The group base of ``name`` and ``name``'s byte offset inside it."""
        offset = 0
        while name in self.aliases:
            alias = self.aliases[name]
            offset += alias.offset
            name = alias.base
        return name, offset

    def members(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for name in self.aliases:
            groups.setdefault(self.root(name)[0], []).append(name)
        return groups


@dataclass(frozen=True)
class Group:
    """An alias group as the allocator sees it: one buffer of ``size`` bytes."""

    root: str
    size: int
    first_step: int
    last_step: int
    plain: bool          # no concat slices: every member at offset 0 (views only)
    holds_output: bool   # a member is a graph output


def groups_of(lives: list[TensorLife], reuse: ReuseSet) -> dict[str, Group]:
    """One :class:`Group` per root: extent = max(offset + size), lifetime = union."""
    collected: dict[str, list[tuple[TensorLife, int]]] = {}
    for life in lives:
        root, offset = reuse.root(life.name)
        collected.setdefault(root, []).append((life, offset))
    groups = {}
    for root, members in collected.items():
        groups[root] = Group(root, max(life.size + offset for life, offset in members),
                             min(life.first_step for life, _ in members),
                             max(life.last_step for life, _ in members),
                             not any(_is_slice(reuse, life.name) for life, _ in members),
                             any(life.kind == KIND_OUTPUT for life, _ in members))
    return groups


def _is_slice(reuse: ReuseSet, name: str) -> bool:
    alias = reuse.aliases.get(name)
    return alias is not None and alias.check in ("concat-slice", "channel-slice", "row-slice")


def group_buffers(groups: dict[str, Group], alignment: int) -> list[Buffer]:
    return [Buffer(g.root, g.size, g.first_step, g.last_step + 1, alignment) for g in groups.values()]


def find_reuse(graph: Graph, nodes: list[Node], lives: list[TensorLife], alignment: int, *,
               concat_in_place: bool | None = None, overlap: bool = True,
               distance: DistanceFunction = reference_distance,
               external: frozenset[str] = frozenset(),
               strided_output: StridedOutputRule | None = None) -> ReuseSet:
    """All proved reuses (see the module docstring). ``concat_in_place``: None = where it
    does not raise the live-set bound, True = wherever legal, False = never. ``distance``
    is the chosen kernel variant's overlap rule (:meth:`mcudeploy.kernels.KernelSelection.
    overlap_distance`; default: the reference kernels' proofs). ``external``: the tensors of
    the external arena; nothing is shared across the two arenas. ``strided_output``: why a
    node's chosen kernel cannot write a strided output, None when it can (:meth:`mcudeploy.
    kernels.KernelSelection.strided_output_refusal`; default: the reference kernels')."""
    strided = strided_output or _reference_strided_output
    arena = {life.name: life for life in lives}
    reuse = ReuseSet(external=frozenset(external))
    for node in nodes:
        if node.op in VIEW_OPS:
            _view_alias(node, arena, reuse)
        elif node.op == "Slice":
            _row_slice_alias(node, arena, reuse, alignment)
    if concat_in_place is not False:
        live = _LiveSum(lives, alignment)
        for node in nodes:
            if node.op == "Concat":
                _concat_alias(node, arena, reuse, live, alignment, force=bool(concat_in_place),
                              strided_output=strided)
    if overlap:
        _overlap_pairs(nodes, lives, reuse, distance)
    return reuse


def _view_alias(node: Node, arena: dict[str, TensorLife], reuse: ReuseSet) -> None:
    source, output = node.input(0), node.outputs[0]
    if source is None or source.name not in arena or output.name not in arena:
        reuse.refusals.append((node.name, "view: input or output is not in the arena (application-owned)"))
    elif reuse.crosses(source.name, output.name):
        reuse.refusals.append((node.name, "view: input and output are in different arenas (a transfer)"))
    elif source.nbytes != output.nbytes:
        reuse.refusals.append((node.name, "view: byte sizes differ"))
    else:
        reuse.aliases[output.name] = Alias(output.name, source.name, 0, "view")


def contiguous_slice_offset(node: Node) -> int | None:
    """Byte offset of a Slice's output in its input when the output is one contiguous byte
    range of it (module docstring), else None."""
    source, output = node.inputs[0], node.outputs[0]
    starts = [0] * source.rank
    for start, end, axis, step in zip(*(node.attrs[k] for k in ("starts", "ends", "axes", "steps"))):
        axis %= source.rank
        selected = range(source.shape[axis])[slice(start, end, step)]
        if selected.step != 1 and len(selected) > 1:
            return None
        starts[axis] = selected.start
    partial = [axis for axis in range(source.rank) if output.shape[axis] != source.shape[axis]]
    first = partial[0] if partial else source.rank - 1
    if any(output.shape[axis] != 1 for axis in range(first)) or partial[1:]:
        return None
    strides = [math.prod(source.shape[axis + 1:]) for axis in range(source.rank)]
    return sum(start * stride for start, stride in zip(starts, strides)) * source.dtype.itemsize


def _row_slice_alias(node: Node, arena: dict[str, TensorLife], reuse: ReuseSet, alignment: int) -> None:
    source, output = node.input(0), node.outputs[0]
    offset = contiguous_slice_offset(node)
    if source is None or source.name not in arena or output.name not in arena:
        reuse.refusals.append((node.name, "row-slice: input or output is not in the arena"))
    elif reuse.crosses(source.name, output.name):
        reuse.refusals.append((node.name, "row-slice: input and output are in different arenas (a transfer)"))
    elif offset is None:
        reuse.refusals.append((node.name, "row-slice: the slice is not one contiguous byte range"))
    elif offset % alignment:
        reuse.refusals.append((node.name, f"row-slice: byte offset {offset} is not a multiple of the "
                                          f"alignment {alignment}"))
    else:
        reuse.aliases[output.name] = Alias(output.name, source.name, offset, "row-slice")
        reuse.elided.append(node.name)


def _reference_strided_output(node: Node) -> str | None:
    return strided_output_refusal("reference", node)


def is_channel_concat(node: Node) -> bool:
    """A Concat whose slices are strided channel slices (module docstring), not contiguous."""
    output = node.outputs[0]
    axis = node.attrs["axis"] % output.rank
    return axis == output.rank - 1 and math.prod(output.shape[:axis]) != 1


def slice_places(node: Node) -> list[tuple[int, int]]:
    """(byte offset, channel stride) of every input's slice in the Concat's output: running
    byte sizes and stride 0 for contiguous slices, running channel counts times the
    itemsize and stride C_total for channel slices."""
    output = node.outputs[0]
    channel = is_channel_concat(node)
    places, offset = [], 0
    for value in node.inputs:
        places.append((offset, output.shape[-1] if channel else 0))
        offset += value.shape[-1] * value.dtype.itemsize if channel else value.nbytes
    return places


def _channel_slice_refusal(node: Node, arena: dict[str, TensorLife], strided_output: StridedOutputRule) -> str | None:
    """Why the producers of a channel concat's inputs cannot write their slices (None: they can)."""
    for value in node.inputs:
        readers = {user.name for user, _ in value.uses}
        if readers != {node.name}:
            other = sorted(readers - {node.name})
            return (f"channel slices: input {value.name!r} is also read by {other[0]!r}, which would "
                    "read strided data")
        life = arena.get(value.name)
        if life is not None and life.kind == KIND_OUTPUT:
            return f"channel slices: input {value.name!r} is a graph output (it must stay dense)"
        if value.producer is not None:
            refusal = strided_output(value.producer)
            if refusal:
                return "channel slices: " + refusal
    return None


def concat_refusal(node: Node, arena: dict[str, TensorLife], reuse: ReuseSet,
                   alignment: int = 1, strided_output: StridedOutputRule | None = None) -> str | None:
    """Why the Concat cannot be done in place (None when it can)."""
    output = node.outputs[0]
    axis = node.attrs["axis"] % output.rank
    if output.name not in arena or output.name in reuse.aliases:
        return "its output is not a plain arena tensor"
    if math.prod(output.shape[:axis]) != 1 and not is_channel_concat(node):
        return (f"slices along axis {axis} of {output.type_str()} are neither contiguous nor channel "
                "slices (the kernels write their output contiguously or with a channel stride)")
    names = [v.name for v in node.inputs if v is not None]
    if len(set(names)) != len(names):
        return "an input appears twice"
    for value in node.inputs:
        if value.name not in arena or value.producer is None:
            return f"input {value.name!r} is not a node output in the arena"
        if value.name in reuse.aliases or any(a.base == value.name for a in reuse.aliases.values()):
            return f"input {value.name!r} already shares bytes with another tensor"
        if value.dtype != output.dtype or value.quant != output.quant:
            return f"input {value.name!r} is requantized by the Concat"
        if reuse.crosses(value.name, output.name):
            return f"input {value.name!r} is in the other arena"
    if is_channel_concat(node):
        refusal = _channel_slice_refusal(node, arena, strided_output or _reference_strided_output)
        if refusal:
            return refusal
    for value, (offset, _) in zip(node.inputs, slice_places(node)):
        if offset % alignment:
            return f"input {value.name!r} would start at byte {offset}, not a multiple of the alignment {alignment}"
    return None


Extent = tuple[int, int, int]          # (packed size, first step, end step) of one alias group
Taken = list[tuple[str, list[TensorLife], Extent]]


class _LiveSum:
    """The live-set bound of the alias groups (what ``live_set_bound(group_buffers(groups_of(
    lives, reuse), alignment)).bytes`` gives), kept up to date as concats alias their inputs.

    Why: each concat in place is decided by the bound before and after it; recomputing it from
    every tensor per concat made the decisions quadratic (a U-Net 512 tiled at its levels has
    ~550 concats over ~9,000 tensors: 30 s of a 45 s trial). Aliasing a concat's inputs only
    changes the groups of those inputs and of its output, so the per-step live sum is updated
    by those groups alone (tests/test_plan_reuse.py checks it against the full recomputation).
    Built on the first concat that needs the bound (forced concats need none)."""

    def __init__(self, lives: list[TensorLife], alignment: int):
        self.lives, self.alignment = lives, alignment
        self.members: dict[str, list[TensorLife]] = {}
        self.built = False
        self.live = np.zeros(max((life.last_step + 2 for life in lives), default=1), dtype=np.int64)

    def build(self, reuse: ReuseSet) -> None:
        if not self.built:
            self.built = True
            for life in self.lives:
                self.members.setdefault(reuse.root(life.name)[0], []).append(life)
            for members in self.members.values():
                self._add(self._extent(members, reuse), 1)

    def _extent(self, members: list[TensorLife], reuse: ReuseSet) -> Extent:
        """As :func:`groups_of` and :meth:`.buffers.Buffer.packed_size` compute a group."""
        size = max(life.size + reuse.root(life.name)[1] for life in members)
        return (-(-size // self.alignment) * self.alignment, min(life.first_step for life in members),
                max(life.last_step for life in members) + 1)

    def _add(self, extent: Extent, sign: int) -> None:
        size, first, end = extent
        self.live[first:end] += sign * size

    @property
    def bytes(self) -> int:
        return int(self.live.max())

    def take(self, roots: set[str], reuse: ReuseSet) -> Taken:
        """Remove the groups of ``roots`` (under the aliases as they are) from the live sum."""
        taken = []
        for root in roots:
            members = self.members.pop(root, None)
            if members:
                extent = self._extent(members, reuse)
                self._add(extent, -1)
                taken.append((root, members, extent))
        return taken

    def put(self, taken: Taken, reuse: ReuseSet) -> Taken:
        """Add the members of ``taken`` back, grouped by their roots under the aliases now."""
        regrouped: dict[str, list[TensorLife]] = {}
        for _, members, _ in taken:
            for life in members:
                regrouped.setdefault(reuse.root(life.name)[0], []).append(life)
        put = []
        for root, members in regrouped.items():
            # a new alias points into the concat's output, whose group was taken with the inputs'
            assert root not in self.members, f"alias group {root!r} joined without being taken"
            self.members[root] = members
            extent = self._extent(members, reuse)
            self._add(extent, 1)
            put.append((root, members, extent))
        return put

    def swap(self, remove: Taken, restore: Taken) -> None:
        """Undo a :meth:`put` (``remove``) of what :meth:`take` returned (``restore``)."""
        for root, _, extent in remove:
            del self.members[root]
            self._add(extent, -1)
        for root, members, extent in restore:
            self.members[root] = members
            self._add(extent, 1)


def _concat_alias(node: Node, arena: dict[str, TensorLife], reuse: ReuseSet, live: _LiveSum,
                  alignment: int, force: bool, strided_output: StridedOutputRule) -> None:
    refusal = concat_refusal(node, arena, reuse, alignment, strided_output)
    if refusal:
        reuse.refusals.append((node.name, "concat in place: " + refusal))
        return
    # the live-set bound decides only when not forced, and outside the external arena (in the
    # external arena of a graph split the slices are the stores' copies: always in place)
    output = node.outputs[0].name
    decides = not force and output not in reuse.external
    if decides:
        live.build(reuse)
    before = live.bytes if decides else 0
    taken = live.take({reuse.root(v.name)[0] for v in node.inputs} | {reuse.root(output)[0]}, reuse) \
        if live.built else []
    added = []
    check = "channel-slice" if is_channel_concat(node) else "concat-slice"
    for value, (offset, stride) in zip(node.inputs, slice_places(node)):
        reuse.aliases[value.name] = Alias(value.name, output, offset, check, stride)
        added.append(value.name)
    put = live.put(taken, reuse) if live.built else []
    after = live.bytes if decides else 0
    if after > before:
        for name in added:
            del reuse.aliases[name]
        live.swap(put, taken)
        reuse.refusals.append((node.name, f"concat in place would raise the live-set bound "
                                          f"from {before} to {after} bytes"))
    else:
        reuse.elided.append(node.name)


def _overlap_pairs(nodes: list[Node], lives: list[TensorLife], reuse: ReuseSet,
                   distance: DistanceFunction) -> None:
    groups = groups_of(lives, reuse)
    planned = {life.name for life in lives}   # once, not once per node
    for step, node in enumerate(nodes):
        if not node.outputs or node.op in VIEW_OPS or node.name in reuse.elided:
            continue
        output = node.outputs[0]
        out_root = reuse.root(output.name)[0]
        if output.name not in planned or not groups[out_root].plain:
            continue
        best: OverlapPair | None = None
        for value in {v.name: v for v in node.inputs if v is not None and not v.is_constant}.values():
            result = _pair_for(node, step, value, out_root, groups, reuse, distance)
            if isinstance(result, str):
                reuse.refusals.append((node.name, f"overlap over {value.name!r}: {result}"))
            elif best is None or _saving(result, groups) > _saving(best, groups):
                best = result
        if best is not None:
            reuse.pairs.append(best)


def _saving(pair: OverlapPair, groups: dict[str, Group]) -> int:
    """Bytes an overlap saves at its step: in + out - max(out, distance + in)."""
    size_in, size_out = groups[pair.input].size, groups[pair.output].size
    return size_in + size_out - max(size_out, pair.distance + size_in)


def _pair_for(node: Node, step: int, value: Value, out_root: str, groups: dict[str, Group],
              reuse: ReuseSet, distance_of: DistanceFunction) -> OverlapPair | str:
    root = reuse.root(value.name)[0]
    group = groups.get(root)
    if group is None:
        return "input is not in the arena"
    if root == out_root:
        return "input and output already share bytes"
    if reuse.crosses(root, out_root):
        return "input and output are in different arenas"
    if not group.plain and not (root == value.name and group.size == value.nbytes):
        # a group of slices may still be overlapped as a whole: the node reads its base,
        # which spans every member (an in-place concat's output, a tiled region's input)
        return "input shares bytes with a concat"
    if group.last_step != step:
        return "input-dies-here: the input is read again later"
    if group.holds_output:
        return "not-graph-output: the input is a graph output"
    distance = distance_of(node, value)
    if isinstance(distance, str):
        return distance
    if distance >= groups[out_root].size:
        return f"access order needs the output {distance} bytes below the input: no overlap"
    return OverlapPair(out_root, root, distance, node.name,
                       "in-place" if distance == 0 else "overlap")
