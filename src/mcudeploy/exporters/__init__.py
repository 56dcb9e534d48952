"""Model exporters: IR graph -> a file format. Like the importers, the only places that
import a format library. Import the module you need (each loads only its own library):

* :mod:`.onnx_qdq` — :func:`~.onnx_qdq.export_onnx_qdq`: a quantized (or float) IR graph as
  an ONNX QDQ model (``onnx``);
* :mod:`.tflm_offline` — :func:`~.tflm_offline.export_tflm_offline`: a ``.tflite`` copy
  carrying a memory plan as TFLite Micro's offline plan (the TFLite schema).
"""
