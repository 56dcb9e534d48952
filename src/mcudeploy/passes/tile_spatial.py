"""Spatial tiling as a graph rewrite: a region of layers runs tile by tile (row stripes or
patches), each tile recomputing its receptive-field halo.

Input: an NHWC graph (batch 1) and :class:`~mcudeploy.options.TilingRegion` records (the
nodes on the paths from ``start`` to ``end``, ``rows`` x ``columns`` tiles of ``end``'s
output). Output: the same graph where each region became, per tile,

    Slice(region input, tile's rows [+ columns] incl. halo) -> the region's ops on the tile
        (pads kept only at the real image borders, :mod:`.tile_geometry`) -> tile output

and ``Concat(tiles, axis=H)`` (patches: ``Concat(axis=W)`` per band first) in place of
``end``'s output, under its name. The halos are found backwards from each output tile
through the region (the rows every consumer needs, their hull per tensor; a consumer that
needs fewer rows reads a crop ``Slice``). An inner tensor that is also read outside the
region (a U-Net level's skip tensor beside its pooled output) is a second output: tile k
gives its rows after tile k-1's up to the last one its receptive field reaches, and those
pieces are concatenated too.

Nothing else changes: the rewritten graph runs the same integer ops on sub-tensors, so the
integer reference, the planner and the code generator need no special case and the result is
bit-exact. In NHWC a row stripe is a contiguous byte range: the planner makes such Slices
views of their input and the H-Concat an in-place concat (:mod:`mcudeploy.plan.reuse`), and
the MACC of the rewritten graph counts the recomputed halos.

A user mistake (an unknown node, an end that does not depend on the start, a layer that
cannot be tiled, more tiles than rows) is a :class:`~mcudeploy.errors.UsageError` that
names the node and says which layers can be tiled.
"""
from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass, field
from typing import cast

from ..errors import UsageError
from ..ir import Graph, Node, Value, get_op
from ..options import TilingRegion
from .tile_geometry import TILABLE_TEXT, AxisWindow, Interval, axis_window, extent_on, resize_mismatch, tile_refusal

log = logging.getLogger(__name__)

Intervals = dict[int, Interval]   # axis -> [begin, end)


@dataclass
class TiledRegion:
    """What one region became: its nodes, tiles, and MACC before / after (halo recompute)."""
    region: TilingRegion
    nodes: list[str]
    tiles: list[dict[int, Interval]]
    macc_before: int
    macc_after: int
    added_nodes: list[str] = field(default_factory=list)
    concats: list[str] = field(default_factory=list)     # the Concat of each region output (last: the end)

    @property
    def overhead(self) -> float:
        return self.macc_after / self.macc_before - 1.0 if self.macc_before else 0.0


def node_by_name(graph: Graph, name: str, what: str) -> Node:
    """The node ``name``; :class:`UsageError` with the closest names when there is none."""
    for node in graph.nodes:
        if node.name == name:
            return node
    close = difflib.get_close_matches(name, [n.name for n in graph.nodes], n=3, cutoff=0.5)
    raise UsageError(f"{what}: no node {name!r} in the graph as deployed (activations, BatchNorms and "
                     "Pads are fused into the layer before them, so their names are gone)"
                     + (f"; did you mean {', '.join(map(repr, close))}?" if close else
                        "; `mcudeploy plan --json` lists the node names"))


def region_nodes(graph: Graph, region: TilingRegion) -> list[Node]:
    """The nodes on the paths from ``start`` to ``end`` (both included), in graph order."""
    what = f"tiling region {region.start}..{region.end}"
    start, end = node_by_name(graph, region.start, what), node_by_name(graph, region.end, what)
    below = {id(start)}
    for node in graph.nodes:
        if any(v is not None and v.producer is not None and id(v.producer) in below for v in node.inputs):
            below.add(id(node))
    above = {id(end)}
    for node in reversed(graph.nodes):
        if any(id(user) in above for value in node.outputs for user in value.users):
            above.add(id(node))
    nodes = [n for n in graph.nodes if id(n) in below and id(n) in above]
    if not nodes:
        raise UsageError(f"{what}: node {end.name!r} does not depend on {start.name!r}; give the first "
                         "and the last layer of a connected chain")
    return nodes


def check_region(graph: Graph, region: TilingRegion, nodes: list[Node]) -> list[Value]:
    """The region's outputs (``end``'s first, then every inner tensor read outside it);
    :class:`UsageError` for a layer that cannot be tiled or more tiles than rows."""
    what = f"tiling region {region.start}..{region.end}"
    inside = {id(n) for n in nodes}
    for node in nodes:
        reason = tile_refusal(node)
        if reason is not None:
            raise UsageError(f"{what}: node {node.name!r} ({node.op}) cannot be tiled: {reason}. Tilable "
                             f"layers: {TILABLE_TEXT}; end the region before it")
        for value in node.inputs:
            if value is not None and not value.is_constant and value.rank != 4 and extent_on(value, 1) > 1:
                raise UsageError(f"{what}: node {node.name!r} reads {value.display_name!r} "
                                 f"{value.type_str()}, not an NHWC tensor")
    end = nodes[-1].outputs[0]    # the end comes last: every region node is its ancestor
    extra = [n.outputs[0] for n in nodes[:-1]
             if any(id(u) not in inside for u in n.outputs[0].users) or any(n.outputs[0] is v for v in graph.outputs)]
    if end.shape[0] != 1:
        raise UsageError(f"{what}: batch {end.shape[0]}; tiling needs batch 1")
    for axis, count, word in ((1, region.rows, "rows"), (2, region.columns, "columns")):
        if count > end.shape[axis]:
            raise UsageError(f"{what}: {count} tiles along {word} but the output of {nodes[-1].name!r} "
                             f"{end.type_str()} has only {end.shape[axis]} {word}; use at most "
                             f"{end.shape[axis]}")
    return [end, *extra]


def partition(size: int, count: int) -> list[Interval]:
    """``count`` near-equal intervals covering ``[0, size)``."""
    bounds = [round(i * size / count) for i in range(count + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(count)]


def _hull(first: Interval | None, second: Interval) -> Interval:
    return second if first is None else (min(first[0], second[0]), max(first[1], second[1]))


def receptive_fields(nodes: list[Node], seeds: dict[str, Intervals]
                     ) -> tuple[dict[str, Intervals], dict[str, dict[int, AxisWindow]]]:
    """Backwards from the rows each region output must give (``seeds``): the rows (per axis)
    each tensor must hold, and each node's :class:`AxisWindow` per output axis."""
    need: dict[str, Intervals] = {name: dict(rows) for name, rows in seeds.items()}
    windows: dict[str, dict[int, AxisWindow]] = {}
    for node in reversed(nodes):
        out = node.outputs[0]
        windows[node.name] = {}
        for axis, needed in need.get(out.name, {}).items():
            window = axis_window(node, axis, needed)
            mismatch = resize_mismatch(node, axis, window, needed) if node.op == "Resize" else None
            if mismatch:
                raise UsageError(f"node {node.name!r} (Resize) cannot be tiled here: {mismatch}")
            windows[node.name][axis] = window
            value_axis = axis if window.input_axis is None else window.input_axis
            for value, reads in zip(node.inputs, window.inputs):
                if value is None or value.is_constant:
                    continue
                reads = reads or (0, extent_on(value, value_axis))
                rows = need.setdefault(value.name, {})
                rows[value_axis] = _hull(rows.get(value_axis), reads)
    return need, windows


class _TileBuilder:
    """Adds one tile's nodes before ``anchor`` and tracks each tensor's tile version."""

    def __init__(self, graph: Graph, anchor: Node, tag: str) -> None:
        self.graph, self.anchor, self.tag = graph, anchor, tag
        self.current: dict[str, tuple[Value, Intervals]] = {}
        self.added: list[str] = []

    def add(self, op: str, inputs: list, attrs: dict, name: str, like: Value) -> Value:
        node = self.graph.add_node(op, inputs, attrs, name=name, before=self.anchor)
        output = node.outputs[0]
        output.quant, output.layout, output.origin = like.quant, like.layout, like.display_name
        self.added.append(node.name)
        return output

    def crop(self, value: Value, have: Intervals, want: Intervals, like: Value, name: str) -> Value:
        """``value`` (holding rows ``have``) cut to ``want``: a Slice, or itself when equal."""
        axes = [axis for axis in sorted(want) if want[axis] != have.get(axis, (0, value.shape[axis]))]
        if not axes:
            return value
        base = {axis: have.get(axis, (0, value.shape[axis]))[0] for axis in axes}
        attrs = {"starts": [want[a][0] - base[a] for a in axes], "ends": [want[a][1] - base[a] for a in axes],
                 "axes": axes, "steps": [1] * len(axes)}
        return self.add("Slice", [value], attrs, name, like)


def _tile_attrs(node: Node, windows: dict[int, AxisWindow]) -> dict:
    attrs = dict(node.attrs)
    for axis, window in windows.items():
        if node.op in ("Conv", "MaxPool", "AveragePool"):
            pads = list(attrs["pads"])
            pads[axis - 1], pads[axis + 1] = window.pads
            attrs["pads"] = tuple(pads)
        elif node.op == "Pad":
            pads = list(attrs["pads"])
            pads[axis], pads[axis + 4] = window.pads
            attrs["pads"] = tuple(pads)
        elif node.op == "Resize":
            sizes = list(attrs["sizes"])
            sizes[axis] = window.computed[1] - window.computed[0]
            attrs["sizes"] = tuple(sizes)
    return attrs


def _tile_input(builder: _TileBuilder, node: Node, index: int, value: Value | None,
                windows: dict[int, AxisWindow]) -> Value | None:
    if value is None:
        return None
    want = {(axis if w.input_axis is None else w.input_axis): rows
            for axis, w in windows.items() if (rows := w.inputs[index]) is not None}
    if value.const is not None:
        cut = {a: r for a, r in want.items() if value.rank == 4 and r != (0, value.shape[a])}
        if not cut:
            return value
        index_tuple = tuple(slice(*cut[a]) if a in cut else slice(None) for a in range(4))
        return builder.graph.add_constant(f"{value.name}@{builder.tag}", value.const[index_tuple], quant=value.quant)
    tile_value, have = builder.current[value.name]
    full = {axis: (0, extent_on(value, axis)) for axis in have}
    return builder.crop(tile_value, have, {**full, **want}, value, f"{node.name}@{builder.tag}:in{index}")


def build_tile(graph: Graph, nodes: list[Node], seeds: dict[str, Intervals], anchor: Node,
               tag: str) -> tuple[dict[str, Value], list[str]]:
    """Add the nodes of one tile before ``anchor``; each region output's tile value (exactly
    the rows ``seeds`` asks of it)."""
    need, windows = receptive_fields(nodes, seeds)
    builder = _TileBuilder(graph, anchor, tag)
    produced = {n.outputs[0].name for n in nodes}
    for name, intervals in need.items():
        if name in produced:
            continue
        value = next(v for n in nodes for v in n.inputs if v is not None and v.name == name)
        full = {axis: (0, value.shape[axis]) for axis in intervals}
        sliced = builder.crop(value, full, intervals, value, f"{name}@{tag}")
        builder.current[name] = (sliced, intervals)
    for node in nodes:
        out = node.outputs[0]
        if out.name not in need:      # this tile needs nothing of it (a secondary output's edge)
            continue
        inputs = [_tile_input(builder, node, i, v, windows[node.name]) for i, v in enumerate(node.inputs)]
        value = builder.add(node.op, inputs, _tile_attrs(node, windows[node.name]), f"{node.name}@{tag}", out)
        computed = {axis: w.computed for axis, w in windows[node.name].items()}
        expected = tuple(computed[a][1] - computed[a][0] if a in computed else d for a, d in enumerate(out.shape))
        if value.shape != expected:   # a bug in tile_geometry, not a user mistake
            raise AssertionError(f"tile {tag} of {node.name}: shape {value.shape}, expected {expected}")
        builder.current[out.name] = (value, computed)
    outputs = {}
    for name, rows in seeds.items():
        tile_value, have = builder.current[name]
        like = next(n.outputs[0] for n in nodes if n.outputs[0].name == name)
        assert like.producer is not None  # a node's output
        outputs[name] = builder.crop(tile_value, have, rows, like, f"{like.producer.name}@{tag}:out")
    return outputs, builder.added


def secondary_rows(nodes: list[Node], primary: Value, value: Value, tiles: list[Interval], axis: int
                   ) -> list[Interval | None]:
    """A partition of ``value`` along ``axis`` that follows the primary output's tiles: tile k
    gives the rows after tile k-1's up to the last row its own receptive field reaches
    (None: nothing new), the last tile the rest."""
    pieces, done = [], 0
    for index, rows in enumerate(tiles):
        need, _ = receptive_fields(nodes, {primary.name: {axis: rows}})
        end = value.shape[axis] if index == len(tiles) - 1 else need.get(value.name, {}).get(axis, (0, done))[1]
        pieces.append((done, end) if end > done else None)
        done = max(done, end)
    return pieces


def tile_region(graph: Graph, region: TilingRegion) -> TiledRegion:
    """Rewrite one region of ``graph`` (module docstring); the record of what it became."""
    nodes = region_nodes(graph, region)
    outputs = check_region(graph, region, nodes)
    end, anchor = outputs[0], nodes[0]
    axes = {1: partition(end.shape[1], region.rows)}
    if region.columns > 1:
        axes[2] = partition(end.shape[2], region.columns)
    pieces = {value.name: {axis: secondary_rows(nodes, end, value, tiles, axis) if value is not end else tiles
                           for axis, tiles in axes.items()} for value in outputs}
    grid: dict[str, list[list[Value]]] = {value.name: [] for value in outputs}
    added: list[str] = []
    tiles: list[Intervals] = []
    for r in range(region.rows):
        for name in grid:
            grid[name].append([])
        for c in range(region.columns):
            index = {1: r, 2: c}
            # only the outputs with a piece on every axis (no None left)
            seeds = cast("dict[str, Intervals]",
                         {name: {axis: by_axis[axis][index[axis]] for axis in axes} for name, by_axis in pieces.items()
                          if all(by_axis[axis][index[axis]] is not None for axis in axes)})
            tag = f"tile{r}" if region.columns == 1 else f"tile{r}_{c}"
            values, names = build_tile(graph, nodes, seeds, anchor, tag)
            for name, value in values.items():
                grid[name][-1].append(value)
            tiles.append(seeds[end.name])
            added += names
    macc_before = sum(int(get_op(n.op).macc(n)) for n in nodes)
    concats = []
    for value in reversed(outputs):    # the end's Concat last: a cut after the region follows it
        final = _concat_tiles(graph, grid[value.name], value, anchor, added)
        graph.replace_all_uses(value, final)
        value.name, final.name = f"{value.name}@untiled", value.name
        assert final.producer is not None  # a Concat (or the single tile's last node)
        concats.append(final.producer.name)
    for node in reversed(nodes):
        graph.remove_node(node)
    graph.toposort()
    added_names = set(added)
    macc_after = sum(int(get_op(n.op).macc(n)) for n in graph.nodes if n.name in added_names)
    log.debug("tiled %s..%s into %d tiles: MACC %d -> %d", region.start, region.end, len(tiles),
              macc_before, macc_after)
    return TiledRegion(region, [n.name for n in nodes], tiles, macc_before, macc_after, added, concats)


def _concat_tiles(graph: Graph, bands: list[list[Value]], like: Value, anchor: Node, added: list[str]) -> Value:
    """``Concat(axis=W)`` of each band's pieces, then ``Concat(axis=H)`` of the bands."""
    builder = _TileBuilder(graph, anchor, "tiles")
    assert like.producer is not None  # a region output, made by a node of the region
    name = f"{like.producer.name}@tiles"
    bands = [band for band in bands if band]
    rows = [band[0] if len(band) == 1 else builder.add("Concat", band, {"axis": 2}, f"{name}:band{i}", like)
            for i, band in enumerate(bands)]
    final = rows[0] if len(rows) == 1 else builder.add("Concat", rows, {"axis": 1}, name, like)
    added += builder.added
    return final


class TileSpatial:
    """The pass: every region of ``regions``, in order (module docstring)."""
    name = "tile_spatial"
    requires = "an NHWC graph of batch 1; each region's layers are tilable (tile_geometry)"
    ensures = "each region runs tile by tile: Slices of its inputs, its layers per tile, a Concat of the tiles"

    def __init__(self, regions: tuple[TilingRegion, ...] | list[TilingRegion]) -> None:
        self.regions = tuple(regions)
        self.tiled: list[TiledRegion] = []

    def run(self, graph: Graph) -> bool:
        self.tiled = [tile_region(graph, region) for region in self.regions]
        return bool(self.tiled)

    def check_ensures(self, graph: Graph) -> str | None:
        names = {n.name for n in graph.nodes}
        left = [name for record in self.tiled for name in record.nodes if name in names]
        return f"region nodes left untiled: {', '.join(left[:5])}" if left else None


def total_macc(graph: Graph) -> int:
    return sum(int(get_op(n.op).macc(n)) for n in graph.nodes)
