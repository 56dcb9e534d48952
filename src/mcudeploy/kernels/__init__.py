"""Kernel variants of the C runtime and the choice of one per node (between mapping and plan).

:func:`choose_kernels` -> :class:`KernelSelection` (per node: variant, reason; scratch bytes
and overlap rules of the chosen variant). The catalogue of variants is data
(:mod:`.catalogue`, :mod:`.reference`).
"""
from . import overlap_accumulate  # noqa: F401  (registers the input-channel split's overlap proofs)
from .catalogue import VARIANTS, register, variants_for
from .choose import KernelChoice, KernelSelection, choose_kernels
from .reference import REFERENCE, reference_scratch_bytes
from .variant import KernelVariant

__all__ = ["REFERENCE", "VARIANTS", "KernelChoice", "KernelSelection", "KernelVariant", "choose_kernels",
           "reference_scratch_bytes", "register", "variants_for"]
