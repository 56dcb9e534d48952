"""Post-training quantization: calibration observers, the TFLite-spec scheme, applying it to
a graph, mixed precision, the report (:func:`quantize_model`, :class:`QuantizationConfig`).
The integer arithmetic it relies on is :mod:`mcudeploy.arithmetic.fixed_point`."""
from .quantizer import QuantizationConfig, quantize_model

__all__ = ["QuantizationConfig", "quantize_model"]
