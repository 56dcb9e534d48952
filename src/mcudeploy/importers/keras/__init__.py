"""Keras importer: ``.h5`` (tf.keras 2.x / Keras 3 HDF5) and ``.keras`` (Keras 3 zip) files
-> IR graphs, read with h5py (no TensorFlow). See :mod:`.importer`."""
from .importer import import_keras

__all__ = ["import_keras"]
