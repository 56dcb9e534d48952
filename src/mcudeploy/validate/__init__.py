"""Validation: run a model on data (engines), and compare a quantized model with its float
original (metrics, thresholds, layer-by-layer comparison, plots, reports).

Public entry points: :func:`~.compare.validate_models`, :data:`~.engines.ENGINES`,
:func:`~.data.load_samples`, :func:`~.data.random_samples`, :func:`~.data.load_labels`.
"""
from .compare import ValidationResult, validate_models
from .data import Samples, load_labels, load_samples, random_samples
from .engines import ENGINES, engine, get_engine
from .metrics import OutputMetrics, compare_output
from .thresholds import Check, Thresholds

__all__ = ["ENGINES", "Check", "OutputMetrics", "Samples", "Thresholds", "ValidationResult",
           "compare_output", "engine", "get_engine", "load_labels", "load_samples",
           "random_samples", "validate_models"]
