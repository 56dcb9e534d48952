"""Entry point of the TFLite importer (the implementation lives in :mod:`.tflite`)."""
from .tflite import import_tflite

__all__ = ["import_tflite"]
