"""ctypes mirror of ``runtime/include/mcu_runtime*.h`` for the bit-exact tests, derived
from the header's parsed form (:mod:`mcudeploy.codegen.abi_structs`), never written by hand:
a struct a new kernel adds to a header appears here when abi_structs.py is regenerated.

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

from mcudeploy.codegen.abi import ordered
from mcudeploy.codegen.abi_structs import ALIASES, CONSTANTS, STRUCTS

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


C_SCALARS = {"int32_t": c_int32, "float": c_float, "void *": c_void_p, "const int32_t *": POINTER(c_int32)}


def _ctype(ctype: str, length: int, structs: dict[str, type]) -> type:
    """The ctypes type of one field of the header (a scalar, a pointer, a struct, an array)."""
    base = structs[ctype] if ctype in structs else C_SCALARS[ctype]
    return base * length if length else base


def class_name(ctype: str) -> str:
    """``mcu_conv_params`` -> ``ConvParams``: the Python name of a header struct."""
    return "".join(part.capitalize() for part in ctype.removeprefix("mcu_").split("_"))


def derive(structs: dict[str, tuple[tuple[str, str, int], ...]], aliases: dict[str, str]) -> dict[str, type]:
    """One ctypes Structure per header struct, fields in the header's order (abi_structs.py,
    parsed from runtime/include/mcu_runtime*.h: no struct is written twice)."""
    types: dict[str, type] = {}
    for name, fields in structs.items():   # declaration order: a nested struct comes first
        layout = [(field, _ctype(ctype, length, types)) for field, ctype, length in fields]
        types[name] = type(class_name(name), (Structure,), {"_fields_": layout})
    types.update({alias: types[target] for alias, target in aliases.items()})
    return types


# The C struct names of mcu_runtime*.h -> their ctypes mirror; each also as a module name
# (Dims, Context, ConvParams, ChannelQuant, ...: class_name of the C name).
CTYPES = derive(STRUCTS, ALIASES)
globals().update({class_name(name): ctype for name, ctype in CTYPES.items() if name in STRUCTS})
Dims, Context, Activation = CTYPES["mcu_dims"], CTYPES["mcu_context"], CTYPES["mcu_activation"]
ENUMS = CONSTANTS       # the #define MCU_* values of the header


def from_table(struct) -> Structure:
    """The ctypes struct of a ``kernel_table.Struct`` (its fields by name; a field the header
    does not declare, or one left out, is refused as the code generator refuses it)."""
    def field(value):
        if hasattr(value, "ctype"):
            return from_table(value)
        return ENUMS[value] if isinstance(value, str) else value
    return CTYPES[struct.ctype](**{name: field(value) for name, value in ordered(struct)})


SUFFIX = {np.dtype(np.int8): "s8", np.dtype(np.int16): "s16", np.dtype(np.int32): "s32",
          np.dtype(np.float32): "f32"}
PAD_MODES = {"constant": 0, "reflect": 1, "edge": 2}


class CallError(AssertionError):
    """A C kernel returned a status other than MCU_OK."""


def dims(shape: tuple[int, ...]) -> Dims:
    """NHWC dims of a rank <= 4 shape (leading ones added)."""
    n, h, w, c = (1,) * (4 - len(shape)) + tuple(int(s) for s in shape)
    return Dims(n=n, h=h, w=w, c=c)


def int_array(values) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.int32).reshape(-1))


def pointer(array: np.ndarray | None):
    return None if array is None else c_void_p(array.ctypes.data)


def int_pointer(array: np.ndarray):
    return array.ctypes.data_as(POINTER(c_int32))


def activation(params) -> Activation:
    return Activation(min=int(params.activation_min), max=int(params.activation_max))


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
