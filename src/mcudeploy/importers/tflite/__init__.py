"""The TFLite importer: a ``.tflite`` flatbuffer -> a verified IR graph (NHWC).

* :mod:`.reader`   flatbuffer -> plain records; every parsing failure becomes ModelFormatError
* :mod:`.tensors`  dtypes, quantization parameters, constant buffers
* :mod:`.context`  naming, input lookup, hybrid weights, node emission
* :mod:`.common`   the converter table, SAME / VALID padding, fused activations
* :mod:`.ops`      one converter per builtin op
* :mod:`.importer` the entry point :func:`import_tflite`
"""
from .importer import import_tflite

__all__ = ["import_tflite"]
