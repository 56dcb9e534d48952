"""The table of Keras layer converters (one per layer class or family) and the Keras
activation functions (the ``activation`` option of Conv2D / Dense / Activation, ...).

A converter takes a :class:`~.context.LayerContext` and returns the layer's output values.
Adding a layer kind touches one place: a function decorated with ``@converter("Class")``.

Activations (``keras.activations``) as IR ops, ``x`` the input::

    linear       x                         relu         Relu (a fused clamp [0, inf) when it
    relu6        Clip(0, 6)                              follows a Conv / Dense / pool)
    sigmoid      Sigmoid                   tanh         Tanh
    softmax      Softmax(axis=-1)          swish, silu  x * Sigmoid(x) (as TFLite writes it)
    hard_sigmoid max(0, min(1, a x + 1/2)), a = 0.2 (tf.keras 2) or 1/6 (Keras 3)
    hard_swish, hard_silu  HardSwish: x * relu6(x + 3) / 6
    elu, selu, softplus, softsign, exponential: Elu, Selu, Softplus, Softsign, Exp
    gelu         Gelu (erf form, the default of both Keras versions' ``activations.gelu``)
"""
from __future__ import annotations

from typing import Any, Callable

from ...ir import Value
from .context import LayerContext

Converter = Callable[[LayerContext], list[Value]]
CONVERTERS: dict[str, Converter] = {}
# Keras 3's operation layers (module keras.src.ops.*; their class names, Add, Multiply,
# Reshape..., clash with the layers'), in a table of their own.
OPERATIONS: dict[str, Converter] = {}
OPERATION_MODULE = "keras.src.ops"

# Layers that are the identity at inference (noise and dropout are training-only).
PASS_THROUGH = ("Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D",
                "GaussianNoise", "GaussianDropout", "AlphaDropout", "ActivityRegularization",
                "Identity")

# The fused clamp [activation_min, activation_max] of activations an op can absorb.
CLAMPS: dict[str, tuple[float | None, float | None]] = {
    "linear": (None, None), "relu": (0.0, None), "relu6": (0.0, 6.0)}
SIMPLE_ACTIVATIONS = {"sigmoid": "Sigmoid", "tanh": "Tanh", "elu": "Elu", "selu": "Selu",
                      "softplus": "Softplus", "softsign": "Softsign", "exponential": "Exp",
                      "hard_swish": "HardSwish", "hard_silu": "HardSwish"}


def converter(*class_names: str) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of the Keras layer classes."""
    def register(function: Converter) -> Converter:
        for name in class_names:
            if name in CONVERTERS:
                raise RuntimeError(f"Keras layer {name} has two converters")
            CONVERTERS[name] = function
        return function
    return register


def operation(*class_names: str) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of Keras 3 operation classes."""
    def register(function: Converter) -> Converter:
        for name in class_names:
            if name in OPERATIONS:
                raise RuntimeError(f"Keras operation {name} has two converters")
            OPERATIONS[name] = function
        return function
    return register


def is_operation(class_name: str, module: str | None, config: dict[str, Any]) -> bool:
    """Whether a layer entry is a Keras 3 operation: its module says so, or (Keras 3's legacy
    ``.h5`` writes no module) its config lacks the ``trainable`` every layer config has."""
    if module:
        return module.startswith(OPERATION_MODULE)
    return class_name in OPERATIONS and "trainable" not in config


def converter_of(class_name: str, module: str | None, config: dict[str, Any]) -> Converter | None:
    """The converter of a layer entry: an operation's or a layer's."""
    if is_operation(class_name, module, config):
        return OPERATIONS.get(class_name)
    return CONVERTERS.get(class_name)


def activation_name(ctx: LayerContext, key: str = "activation") -> str:
    """The layer's activation function as a name (``None`` / a serialized dict too)."""
    value: Any = ctx.option(key, "linear")
    if value is None:
        return "linear"
    if isinstance(value, dict):   # {"class_name": "function", "config": "relu"} or a custom one
        inner = value.get("config")
        value = inner if isinstance(inner, str) else value.get("class_name", "?")
    return str(value)


def fused_clamp(ctx: LayerContext) -> dict[str, float | None]:
    """``activation_min`` / ``activation_max`` when the layer's activation is a clamp,
    else none (:func:`apply_activation` then adds its node)."""
    low, high = CLAMPS.get(activation_name(ctx), (None, None))
    return {"activation_min": low, "activation_max": high}


def apply_activation(ctx: LayerContext, value: Value, name: str | None = None,
                     *, fused: bool = True, own_node: bool = False) -> Value:
    """``value`` after activation ``name`` (default: the layer's ``activation`` option);
    with ``fused`` the clamps were already fused into the producer. The node is
    ``<layer>/<activation>``, or the layer itself with ``own_node`` (an Activation layer)."""
    name = activation_name(ctx) if name is None else name
    suffix = "" if own_node else name
    if name in CLAMPS:
        if fused or name == "linear":
            return value
        low, high = CLAMPS[name]
        return ctx.add("Relu", [value], suffix=suffix) if high is None else \
            ctx.add("Clip", [value], {"min": low, "max": high}, suffix=suffix)
    if name in SIMPLE_ACTIVATIONS:
        return ctx.add(SIMPLE_ACTIVATIONS[name], [value], suffix=suffix)
    if name == "softmax":
        return ctx.add("Softmax", [value], {"axis": -1}, suffix=suffix)
    if name in ("swish", "silu"):
        gate = ctx.add("Sigmoid", [value], suffix=f"{suffix}/sigmoid" if suffix else "sigmoid")
        return ctx.add("Mul", [value, gate], suffix=suffix)
    if name == "gelu":   # the string's default: exact erf form (tf.keras 2 and Keras 3 alike)
        return ctx.add("Gelu", [value], {"approximate": "none"}, suffix=suffix)
    if name == "hard_sigmoid":
        alpha = 0.2 if ctx.keras_major < 3 else 1.0 / 6.0
        return ctx.add("HardSigmoid", [value], {"alpha": alpha, "beta": 0.5}, suffix=suffix)
    supported = sorted([*CLAMPS, *SIMPLE_ACTIVATIONS, "softmax", "swish", "silu", "hard_sigmoid", "gelu"])
    raise ctx.unsupported(f"activation {name!r} is not supported (supported: "
                          f"{', '.join(supported)}); use a supported activation or export the "
                          "model to TFLite first")
