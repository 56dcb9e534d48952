"""One converter per TFLite builtin op, grouped by op family. Importing this package fills
:data:`mcudeploy.importers.tflite.common.CONVERTERS`."""
from . import conv, elementwise, elementwise_more, matmul, pool, quant, reduce, resize, shape, shape_more, strided_slice  # noqa: F401
