"""The integer kernel registry's op -> module table (MODULE_OF) names, for every registered
op, the module that registers it: importing that module alone (in a fresh process) registers
the op, and no op is left out of the table."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mcudeploy.reference.int_kernels import all_int_kernels
from mcudeploy.reference.int_kernels.registry import MODULE_OF


def test_every_registered_op_is_in_the_table():
    assert sorted(all_int_kernels()) == sorted(MODULE_OF)


@pytest.mark.parametrize("module", sorted(set(MODULE_OF.values())))
def test_the_module_alone_registers_its_ops(module):
    script = ("import importlib, json\n"
              "from mcudeploy.reference.int_kernels import registry\n"
              f"importlib.import_module('mcudeploy.reference.int_kernels.{module}')\n"
              "print(json.dumps(sorted(registry._KERNELS)))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    registered = set(json.loads(result.stdout))
    assert {op for op, name in MODULE_OF.items() if name == module} <= registered
