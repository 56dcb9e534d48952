"""User-facing error classes and their process exit codes.

Every error a user can cause (bad file, unsupported op, dynamic shape, a path that
escapes the model folder, ...) is raised as a subclass of :class:`McuDeployError`.
The CLI prints ``str(error)`` as one message, without a traceback, and exits with the
class's ``exit_code``; anything else is a bug and keeps its traceback.

Messages follow one rule: say *what* (the file, node, option), *where*, *by how much*,
and *what to do about it*.
"""
from __future__ import annotations

import difflib
from typing import Iterable


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``known`` (difflib ratio >= 0.6), else
    ``""``: the hint every "unknown name" message appends. Of the closest candidates, one with
    the same letters wins (a transposition: ``stm32h734`` -> ``stm32h743``, not ``stm32h747``,
    which difflib rates the same)."""
    close = difflib.get_close_matches(word, list(known), n=3, cutoff=0.6)
    if not close:
        return ""
    same_letters = [name for name in close if sorted(name) == sorted(word)]
    return f"; did you mean {(same_letters or close)[0]!r}?"


class McuDeployError(Exception):
    """Base class of every error caused by user input. Exit code 1."""

    exit_code = 1


class UsageError(McuDeployError):
    """A command-line option or argument is wrong (bad value, missing file)."""

    exit_code = 2


class ModelFormatError(McuDeployError):
    """The model file is not a readable model: empty, truncated, random bytes, wrong identifier."""

    exit_code = 3


class UnsupportedError(McuDeployError):
    """The model is well-formed but uses something mcudeploy does not support
    (an op, an attribute value, control flow, a dynamic shape)."""

    exit_code = 4


class UnsafePathError(McuDeployError):
    """A path inside the model (e.g. ONNX external data) points outside the model's folder."""

    exit_code = 5


class GraphError(McuDeployError):
    """The graph is inconsistent: a cycle, a dangling value, a shape or dtype that does
    not match its op. Raised by the IR verifier and by importers on malformed graphs."""

    exit_code = 6


class DataError(McuDeployError):
    """Input data for running or calibrating a model is wrong: NaN/Inf, wrong shape or dtype."""

    exit_code = 7


class DoesNotFitError(McuDeployError):
    """The buffers cannot be placed within the memory capacity: either the bytes alive at
    one step already exceed it, or the best packing found is too fragmented to fit."""

    exit_code = 8


class ValidationFailed(McuDeployError):
    """``mcudeploy validate``: the quantized model missed an acceptance threshold
    (cosine, top-1 / top-5 agreement, accuracy drop). The report says which and by how much.
    ``figures`` / ``details``: what was measured, so a failed deploy stage still records and
    shows them (its results row said "top-1 agreement -; cosine -")."""

    exit_code = 9

    def __init__(self, message: str, figures: dict | None = None, details: dict | None = None) -> None:
        super().__init__(message)
        self.figures = dict(figures or {})
        self.details = dict(details or {})


class BoardLinkError(McuDeployError):
    """``validate --on serial:PORT``: the port cannot be opened (missing, busy), the board does
    not answer in time, a frame arrives corrupted, or the board resets during the session."""

    exit_code = 10
