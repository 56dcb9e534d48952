"""Model exporters: IR graph -> a file format. Like the importers, the only places that
import a format library (here ``onnx``).

* :func:`export_onnx_qdq` — a quantized (or float) IR graph as an ONNX QDQ model.
"""
from .onnx_qdq import export_onnx_qdq, to_onnx_model

__all__ = ["export_onnx_qdq", "to_onnx_model"]
