"""ONNX -> IR import, one concern per module.

========================  =================================================================
module                    role
========================  =================================================================
``parse``                 bytes -> ``ModelProto``; node names; opset upgrade; checker
``external_data``         read external tensor data, refusing paths outside the model folder
``toposort``              order nodes, report cycles by node name
``input_shapes``          static input shapes (dynamic batch -> 1, overrides), shape inference
``context``               the ONNX-name -> IR-value map and helpers converters share
``folding``               evaluate nodes whose inputs are all constant at import time
``converters/``           one converter per ONNX op, registered in a table
``importer``              :func:`import_onnx`, the straight-line pipeline over the above
========================  =================================================================
"""
from .importer import import_onnx

__all__ = ["import_onnx"]
