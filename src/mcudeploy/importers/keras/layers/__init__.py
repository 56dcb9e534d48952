"""One module per family of Keras layers; importing this package fills
:data:`mcudeploy.importers.keras.registry.CONVERTERS`."""
from . import activation, conv, core, keras_ops, merge, normalization, pooling, reshaping, temporal, tf_ops  # noqa: F401
