"""mcudeploy: deploy trained neural networks (ONNX, TFLite) onto microcontrollers.

The public API is curated here; everything else is internal and may change.
"""
__version__ = "0.1.0"

__all__ = ["__version__"]
