"""Entry point of the Keras importer (the implementation lives in :mod:`.keras`)."""
from .keras import import_keras

__all__ = ["import_keras"]
