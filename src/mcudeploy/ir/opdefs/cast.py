"""Cast: change the element type, same shape. One MACC per element."""
from __future__ import annotations

from ..dtypes import DType
from ..registry import Attr, TensorType, op
from ._common import macc_per_output


@op("Cast", "elementwise", inputs=("X",), macc=macc_per_output,
    attrs={"to": Attr("str", choices=tuple(d.value for d in DType))})
def cast(inputs, attrs):
    """``Y = X`` converted to dtype ``to`` (ONNX Cast / CastLike, TFLite CAST): float to
    integer truncates toward zero, to bool is ``X != 0``, from bool is 0 / 1, integer to
    narrower integer wraps, float to float16 rounds to nearest even. Out-of-range float to
    integer conversions are undefined, as in C. On quantized values the raw integers are
    converted (TFLite CAST)."""
    return [TensorType(DType(attrs["to"]), inputs[0].shape)]
