"""RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR -> Resize with full output ``sizes``.

Coordinate mapping (TFLite -> ONNX terms): ``align_corners`` -> ``align_corners``;
``half_pixel_centers`` -> ``half_pixel`` (bilinear) or ``tf_half_pixel_for_nn`` (nearest);
neither -> ``asymmetric``. Nearest rounds down (``floor``), except with ``align_corners``
where TFLite rounds half away from zero (``round_prefer_ceil`` for the non-negative
coordinates involved).
"""
from __future__ import annotations

from ..common import converter
from ..context import ConversionContext


@converter("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR")
def resize(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    if x.rank != 4:
        raise ctx.unsupported(f"input {x.type_str()} must be rank 4 (NHWC)")
    size = ctx.constant_ints(1, "size")
    if len(size) != 2:
        raise ctx.unsupported(f"size {size} must hold [height, width]")
    align = bool(ctx.options.get("align_corners", False))
    half_pixel = bool(ctx.options.get("half_pixel_centers", False))
    if align and half_pixel:
        raise ctx.unsupported("align_corners and half_pixel_centers together are not supported")
    nearest = ctx.operator.op_name == "RESIZE_NEAREST_NEIGHBOR"
    if align:
        mode = "align_corners"
    elif half_pixel:
        mode = "tf_half_pixel_for_nn" if nearest else "half_pixel"
    else:
        mode = "asymmetric"
    ctx.add_node("Resize", [x], {
        "sizes": (x.shape[0], size[0], size[1], x.shape[3]),
        "mode": "nearest" if nearest else "linear", "coordinate_transformation_mode": mode,
        "nearest_mode": "round_prefer_ceil" if align else "floor"})
