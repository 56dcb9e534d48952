"""The integer arithmetic of TFLite's quantization spec (requantization multipliers and
shifts, rounding, saturation, gemmlowp fixed point), below both :mod:`mcudeploy.quantize`
and :mod:`mcudeploy.reference`; the C runtime mirrors it bit for bit
(``runtime/include/mcu_fixed_point.h``). Depends only on numpy and :mod:`mcudeploy.errors`."""
