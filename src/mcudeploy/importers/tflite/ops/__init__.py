"""One converter per TFLite builtin op, grouped by op family. Importing this package fills
:data:`mcudeploy.importers.tflite.common.CONVERTERS`."""
from . import conv, elementwise, math_and_logic, matmul, pool, quant, reduce, resize, shape, strided_slice  # noqa: F401
