"""Input preprocessing: a camera frame -> the model's quantized input, in Python (what
``quantize`` / ``validate`` use) and as generated C (``preprocess.c``), bit-exact with each other.

:mod:`.spec` reads ``[preprocess]``, :mod:`.image` is the integer implementation,
:mod:`.emit` writes the C.
"""
from .image import preprocess_frame
from .spec import ImagePreprocess, parse_preprocess, preprocess_from_file

__all__ = ["ImagePreprocess", "parse_preprocess", "preprocess_frame", "preprocess_from_file"]
