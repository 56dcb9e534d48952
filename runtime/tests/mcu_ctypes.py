"""ctypes mirror of ``runtime/include/mcu_runtime.h`` for the bit-exact tests, and one C
call per IR op: :func:`run_node` takes a node, its prepared parameters (from the Python
integer kernels' ``prepare``) and its input arrays, fills the C structs and returns the
C kernel's output.

Test-only code: the runtime itself has no Python. :func:`build_library` compiles every
``runtime/src/*.c`` (plus ``tests/probe.c``, which exports the inline fixed-point
primitives) into one shared library with host gcc, optionally with ASan + UBSan.
"""
from __future__ import annotations

import ctypes
import subprocess
from ctypes import POINTER, Structure, byref, c_float, c_int32, c_void_p
from pathlib import Path

import numpy as np

RUNTIME = Path(__file__).resolve().parents[1]
FLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-ffp-contract=off", "-fPIC", "-shared"]
SANITIZE_FLAGS = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]


def build_library(output: Path, *, sanitize: bool = False, variants: bool = False) -> Path:
    """Compile the runtime and the probe into the shared library ``output``; ``variants``:
    with the optimised kernels of ``src/dsp`` and ``src/mve`` too (their portable C on the host)."""
    folders = ("src", "src/dsp", "src/mve") if variants else ("src",)
    sources = sorted(str(p) for folder in folders for p in (RUNTIME / folder).glob("*.c"))
    sources.append(str(RUNTIME / "tests" / "probe.c"))
    command = ["gcc", *FLAGS, *(SANITIZE_FLAGS if sanitize else ["-O2"]), f"-I{RUNTIME / 'include'}",
               f"-I{RUNTIME / 'src'}", *sources, "-o", str(output)]
    subprocess.run(command, check=True, capture_output=True, text=True)
    return output


def _struct(name: str, *fields: str, types: dict | None = None) -> type:
    types = types or {}
    return type(name, (Structure,), {"_fields_": [(f, types.get(f, c_int32)) for f in fields]})


Dims = _struct("Dims", "n", "h", "w", "c", "c_stride")   # c_stride 0 = dense (mcu_runtime.h)
Context = _struct("Context", "buffer", "size", types={"buffer": c_void_p})
Activation = _struct("Activation", "min", "max")
ConvParams = _struct("ConvParams", "stride_h", "stride_w", "pad_top", "pad_left", "dilation_h",
                     "dilation_w", "activation", types={"activation": Activation})
DepthwiseParams = _struct("DepthwiseParams", "stride_h", "stride_w", "pad_top", "pad_left", "dilation_h",
                          "dilation_w", "depth_multiplier", "activation", types={"activation": Activation})
ChannelQuant = _struct("ChannelQuant", "input_offset", "output_offset", "multiplier", "shift",
                       types={"multiplier": POINTER(c_int32), "shift": POINTER(c_int32)})
ActivationParams = _struct("ActivationParams", "activation", types={"activation": Activation})
FcQuant = _struct("FcQuant", "input_offset", "weights_offset", "output_offset", "multiplier", "shift",
                  types={"multiplier": POINTER(c_int32), "shift": POINTER(c_int32)})
AddQuant = _struct("AddQuant", "left_shift", "input1_offset", "input2_offset", "output_offset",
                   "input1_multiplier", "input1_shift", "input2_multiplier", "input2_shift",
                   "output_multiplier", "output_shift")
MulQuant = _struct("MulQuant", "input1_offset", "input2_offset", "output_offset", "output_multiplier",
                   "output_shift")
PoolParams = _struct("PoolParams", "stride_h", "stride_w", "pad_top", "pad_left", "kernel_h", "kernel_w",
                     "activation", types={"activation": Activation})
MeanParams = _struct("MeanParams", "axes")
MeanQuant = _struct("MeanQuant", "input_zero_point", "output_zero_point", "multiplier", "shift")
SoftmaxQuant = _struct("SoftmaxQuant", "input_multiplier", "input_left_shift", "diff_min")
SmoothStepQuant = _struct("SmoothStepQuant", "input_zero_point", "input_multiplier", "input_left_shift",
                          "input_range_radius")
SmoothStepS16Quant = _struct("SmoothStepS16Quant", "input_multiplier", "input_left_shift")
HardSwishQuant = _struct("HardSwishQuant", "input_zero_point", "output_zero_point",
                         "output_multiplier_fixedpoint_int16", "output_multiplier_exponent",
                         "reluish_multiplier_fixedpoint_int16", "reluish_multiplier_exponent")
LeakyReluQuant = _struct("LeakyReluQuant", "input_zero_point", "output_zero_point", "alpha_multiplier",
                         "alpha_shift", "identity_multiplier", "identity_shift")
RequantizeQuant = _struct("RequantizeQuant", "input_zero_point", "output_zero_point", "multiplier", "shift")
AffineQuant = _struct("AffineQuant", "scale", "zero_point", "round_half_even", types={"scale": c_float})
ConcatParams = _struct("ConcatParams", "axis", "count")
ConcatQuant = _struct("ConcatQuant", "requantize", "quant", types={"quant": RequantizeQuant})
PadParams = _struct("PadParams", "before", "mode", "pad_value", types={"before": c_int32 * 4})
TransposeParams = _struct("TransposeParams", "perm", types={"perm": c_int32 * 4})
SliceParams = _struct("SliceParams", "begin", "stride", types={"begin": c_int32 * 4, "stride": c_int32 * 4})
ResizeParams = _struct("ResizeParams", "align_corners", "half_pixel_centers")
ReduceParams = _struct("ReduceParams", "axes")
ArgParams = _struct("ArgParams", "axis", "select_last_index")
GatherParams = _struct("GatherParams", "axis")
TileParams = _struct("TileParams", "repeats", types={"repeats": c_int32 * 4})
AbsQuant = _struct("AbsQuant", "input_zero_point", "output_zero_point", "needs_rescale", "multiplier", "shift")
RsqrtQuant = _struct("RsqrtQuant", "input_zero_point", "output_zero_point", "multiplier", "shift")
AccumulateParams = _struct("AccumulateParams", "stride_h", "stride_w", "pad_top", "pad_left", "dilation_h",
                           "dilation_w", "channel_begin")
AccumulateQuant = _struct("AccumulateQuant", "input_offset")
LogSoftmaxQuant = _struct("LogSoftmaxQuant", "input_multiplier", "input_left_shift", "reverse_scaling_divisor",
                          "reverse_scaling_shift", "diff_min")

# The C struct names of mcu_runtime.h -> their ctypes mirror, for the structs of
# mcudeploy.codegen.kernel_table (the table the code generator prints as C initialisers).
CTYPES = {
    "mcu_activation": Activation, "mcu_conv_params": ConvParams, "mcu_depthwise_params": DepthwiseParams,
    "mcu_fc_params": ActivationParams, "mcu_elementwise_params": ActivationParams, "mcu_add_quant": AddQuant,
    "mcu_squared_difference_quant": AddQuant, "mcu_mul_quant": MulQuant, "mcu_pool_params": PoolParams,
    "mcu_mean_params": MeanParams, "mcu_mean_quant": MeanQuant, "mcu_softmax_quant": SoftmaxQuant,
    "mcu_smooth_step_quant": SmoothStepQuant, "mcu_smooth_step_s16_quant": SmoothStepS16Quant,
    "mcu_hard_swish_quant": HardSwishQuant, "mcu_leaky_relu_quant": LeakyReluQuant,
    "mcu_requantize_quant": RequantizeQuant, "mcu_affine_quant": AffineQuant, "mcu_concat_params": ConcatParams,
    "mcu_concat_quant": ConcatQuant, "mcu_pad_params": PadParams, "mcu_transpose_params": TransposeParams,
    "mcu_strided_slice_params": SliceParams, "mcu_resize_params": ResizeParams, "mcu_reduce_params": ReduceParams,
    "mcu_arg_params": ArgParams, "mcu_gather_params": GatherParams, "mcu_tile_params": TileParams,
    "mcu_abs_quant": AbsQuant, "mcu_rsqrt_quant": RsqrtQuant, "mcu_log_softmax_quant": LogSoftmaxQuant,
    "mcu_conv_accumulate_params": AccumulateParams, "mcu_accumulate_quant": AccumulateQuant,
    "mcu_accumulator_params": ActivationParams,
}
ENUMS = {"MCU_PAD_CONSTANT": 0, "MCU_PAD_REFLECT": 1, "MCU_PAD_EDGE": 2}


def from_table(struct) -> Structure:
    """The ctypes struct of a ``kernel_table.Struct`` (same fields, same order)."""
    def field(value):
        if hasattr(value, "ctype"):
            return from_table(value)
        return ENUMS[value] if isinstance(value, str) else value
    return CTYPES[struct.ctype](*[field(value) for value in struct.fields])


SUFFIX = {np.dtype(np.int8): "s8", np.dtype(np.int16): "s16", np.dtype(np.int32): "s32",
          np.dtype(np.float32): "f32"}
PAD_MODES = {"constant": 0, "reflect": 1, "edge": 2}


class CallError(AssertionError):
    """A C kernel returned a status other than MCU_OK."""


def dims(shape: tuple[int, ...]) -> Dims:
    """NHWC dims of a rank <= 4 shape (leading ones added)."""
    full = (1,) * (4 - len(shape)) + tuple(int(s) for s in shape)
    return Dims(*full)


def int_array(values) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.int32).reshape(-1))


def pointer(array: np.ndarray | None):
    return None if array is None else c_void_p(array.ctypes.data)


def int_pointer(array: np.ndarray):
    return array.ctypes.data_as(POINTER(c_int32))


def activation(params) -> Activation:
    return Activation(int(params.activation_min), int(params.activation_max))


class Runtime:
    """The loaded library; ``call(name, *args)`` converts arrays / structs and checks the status."""

    def __init__(self, path: Path) -> None:
        self.library = ctypes.CDLL(str(path))

    def call(self, name: str, *args) -> None:
        converted = []
        for arg in args:
            if isinstance(arg, np.ndarray):
                converted.append(pointer(arg))
            elif isinstance(arg, (Structure, ctypes.Array)):
                converted.append(byref(arg))
            else:
                converted.append(arg)
        function = getattr(self.library, name)
        function.restype = c_int32
        status = function(*converted)
        if status != 0:
            raise CallError(f"{name} returned status {status}")

    def status(self, name: str, *args) -> int:
        try:
            self.call(name, *args)
        except CallError as error:
            return int(str(error).rsplit(" ", 1)[1])
        return 0

    def probe(self, name: str, *arrays: np.ndarray) -> np.ndarray:
        """Run ``mcu_probe_<name>(inputs..., out, count)`` elementwise over int32 arrays."""
        inputs = [np.ascontiguousarray(a, dtype=np.int32) for a in np.broadcast_arrays(*arrays)]
        out = np.zeros(inputs[0].shape, dtype=np.int32)
        function = getattr(self.library, f"mcu_probe_{name}")
        function.restype = None
        function(*[pointer(a) for a in inputs], pointer(out), c_int32(out.size))
        return out

    def probe64(self, name: str, x: np.ndarray, *arrays: np.ndarray) -> np.ndarray:
        """Like :meth:`probe` with an int64 first operand."""
        x = np.ascontiguousarray(x, dtype=np.int64)
        rest = [np.ascontiguousarray(np.broadcast_to(a, x.shape), dtype=np.int32) for a in arrays]
        out = np.zeros(x.shape, dtype=np.int32)
        function = getattr(self.library, f"mcu_probe_{name}")
        function.restype = None
        function(pointer(x), *[pointer(a) for a in rest], pointer(out), c_int32(out.size))
        return out
