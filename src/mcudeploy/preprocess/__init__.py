"""Input preprocessing: a camera frame -> the model's quantized input, in Python (what
``quantize`` / ``validate`` use) and as generated C (``preprocess.c``), bit-exact with each other.

:mod:`.spec` reads ``[preprocess]``, :mod:`.image` and :mod:`.audio` are the integer
implementations, :mod:`.emit` writes the C, :mod:`.dataset` turns folders of files into samples,
:mod:`.c_check` builds and runs the C on the host or QEMU.
"""
from .audio import preprocess_clip, read_wav
from .image import preprocess_frame
from .spec import AudioPreprocess, ImagePreprocess, parse_preprocess, preprocess_from_file

__all__ = ["AudioPreprocess", "ImagePreprocess", "parse_preprocess", "preprocess_clip", "preprocess_frame",
           "preprocess_from_file", "read_wav"]
