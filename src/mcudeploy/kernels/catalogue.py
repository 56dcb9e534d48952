"""Every kernel variant mcudeploy's C runtime has, by op (data, not code).

Optimised variants register here with :func:`register` beside the reference
(:mod:`.reference`): :mod:`.dsp` (cores with the DSP extension, rank 10) and :mod:`.mve`
(Helium, rank 20), :mod:`.s16` (their 16x8 counterparts); :func:`variants_for` lists the
candidates of one op, highest rank first.
The optimised variants share :mod:`.prepared` (offline weight / bias preparation, the node
checks and the scratch budget rule).
"""
from __future__ import annotations

from .reference import REFERENCE
from .variant import KernelVariant

VARIANTS: list[KernelVariant] = [REFERENCE]


def register(variant: KernelVariant) -> KernelVariant:
    if any(v.name == variant.name and set(v.ops) & set(variant.ops) for v in VARIANTS):
        raise ValueError(f"kernel variant {variant.name!r} registered twice for {variant.ops}")
    VARIANTS.append(variant)
    return variant


def variants_for(op: str) -> list[KernelVariant]:
    return sorted((v for v in VARIANTS if v.covers(op)), key=lambda v: -v.rank)


def variant_named(op: str, name: str) -> KernelVariant:
    for variant in variants_for(op):
        if variant.name == name:
            return variant
    raise KeyError(f"no kernel variant {name!r} for {op}")


# The optimised variants register themselves on import (they need register() above).
from . import dsp, mve, s16  # noqa: E402,F401
