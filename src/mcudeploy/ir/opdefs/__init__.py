"""Op definitions, one module per op family. Importing this package registers them all."""
from . import activation, conv, elementwise, matmul, normalization, pool, quant, resize, shape  # noqa: F401
