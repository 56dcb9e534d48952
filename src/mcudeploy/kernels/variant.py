"""A kernel variant: one implementation of an op family in the C runtime, and what it allows.

A :class:`KernelVariant` says which ops it implements, which cores can run it (a predicate
on :class:`~mcudeploy.targets.Core`), whether it accepts a given node (a reason when not),
how many scratch bytes it needs, and how it may share bytes with its input: the planner
asks the chosen variant, never the reference loop's order (an optimised kernel that
writes a 2x2 block of outputs before reading the next inputs is not safe to overlap the way
the reference loop is). Variants are data, registered in :mod:`.catalogue`.

``overlap``: ``"reference"`` (the reference kernel's access-order proofs of
:mod:`mcudeploy.kernels.overlap` hold for this variant too), ``"in-place"`` (only full in-place
reuse of elementwise kernels, distance 0), ``"proved"`` (the variant's own
``overlap_proof(node, value)``, from its access order, gives the distance) or ``"none"``.
``overlap_alternatives`` (with ``"proved"``): other proofs of the same kernel, each safe for
every node (e.g. exact for the path the kernel takes, where ``overlap_proof`` is a rule safe on
every path); the final plan may use any of them instead (:mod:`mcudeploy.plan.overlap_choice`
keeps, per node, the one with the smaller arena: the pair-aware allocator is not monotone in
the distances, so the most permissive one is not always the best packing). Everything else
that plans (the memory transformations' candidates) uses ``overlap_proof``. ``rank``: larger is faster; :mod:`.choose` takes the highest-ranked variant that the core
runs and that accepts the node.

Optimised variants may read their constants in another layout than the graph's:
``prepare_constants(node, params)`` returns the arrays the C function reads instead of the
node's constant inputs, by input index (re-ordered weights at 1, a bias with the input
offset folded in at 2, also when the node has none); the code generator emits those
instead. ``scratch_check(symbol)`` is the C expression ``network_init`` compares with the
planned scratch bytes (``symbol``: the layer's identifier, whose ``<symbol>_params``,
``_in0_dims``, ``_w_dims`` and ``_out_dims`` the emitters declare); ``headers`` are the
runtime headers (relative to ``runtime/``) the variant's calls and sources need.
``function_suffix_of(node)``, when given, replaces ``function_suffix`` for that node's call:
checks done at generation time choose the C entry point (the DSP fully connected layer's
``_dsp_simple`` when every unit's requantization is provably the short form).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from ..ir import Node, Value

OVERLAP_RULES = ("reference", "in-place", "proved", "none")


def no_scratch(node: Node) -> int:
    return 0


def accepts_all(node: Node) -> str | None:
    return None


def any_core(core) -> bool:
    return True


@dataclass(frozen=True)
class KernelVariant:
    """One kernel variant (reference, dsp, mve): the ops it covers, the cores it runs on, its rank."""
    name: str                                         # "reference", "dsp", "mve"
    ops: tuple[str, ...]                              # IR op names; () = every op
    description: str
    rank: int = 0
    runs_on: Callable[[object], bool] = any_core      # core -> bool
    core_requirement: str = ""                        # in words, for the reason
    accepts: Callable[[Node], str | None] = accepts_all
    scratch_bytes: Callable[[Node], int] = no_scratch
    overlap: str = "reference"
    function_suffix: str = ""                         # C function = reference name + suffix
    # the suffix per node, where the code generator proves a faster entry point valid for it
    function_suffix_of: Callable[[Node], str] | None = None
    sources: tuple[str, ...] = field(default=())      # extra runtime sources (runtime/src/...)
    headers: tuple[str, ...] = field(default=())      # extra runtime headers (runtime/...)
    prepare_constants: Callable[[Node, Any], dict[int, np.ndarray]] | None = None
    scratch_check: Callable[[str], str] | None = None  # layer symbol -> C scratch-size expression
    overlap_proof: Callable[[Node, Value], int | str] | None = None   # with overlap = "proved"
    overlap_alternatives: tuple[Callable[[Node, Value], int | str], ...] = ()   # other safe proofs

    def __post_init__(self) -> None:
        if self.overlap not in OVERLAP_RULES:
            raise ValueError(f"kernel variant {self.name}: overlap {self.overlap!r} is not one of {OVERLAP_RULES}")
        if (self.overlap == "proved") != (self.overlap_proof is not None):
            raise ValueError(f"kernel variant {self.name}: overlap 'proved' goes with an overlap_proof")
        if self.overlap_alternatives and self.overlap != "proved":
            raise ValueError(f"kernel variant {self.name}: overlap_alternatives go with overlap 'proved'")

    def with_alternative(self, index: int) -> KernelVariant:
        """This variant planned with ``overlap_alternatives[index]`` as its proof (same kernel)."""
        return replace(self, overlap_proof=self.overlap_alternatives[index], overlap_alternatives=())

    def covers(self, op: str) -> bool:
        return not self.ops or op in self.ops
