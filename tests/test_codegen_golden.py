"""The generated C of a small graph that uses every kernel family, compared byte for byte
with golden files (tests/golden/zoo_c, made by tools/make_golden_c.py), generated in a fresh
Python process: the output must not depend on hash seeds, dict order of a previous run or
anything else but the deployment. A refactor that changes the code shows up here; when
the change is intended, regenerate the golden files and commit them with it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden" / "zoo_c"
SCRIPT = ("import json, sys; sys.path.insert(0, 'tools'); from make_golden_c import zoo_files; "
          "print(json.dumps(zoo_files()))")


@pytest.mark.parametrize("hash_seed", ["0", "12345"])
def test_generated_code_equals_the_golden_files_in_a_fresh_process(hash_seed):
    environment = {**os.environ, "PYTHONHASHSEED": hash_seed}
    result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, env=environment,
                            capture_output=True, text=True, check=True)
    files = json.loads(result.stdout)
    assert set(files) == {p.name for p in GOLDEN.iterdir() if p.name != "STAMP"}
    for name, text in files.items():
        golden = (GOLDEN / name).read_text(encoding="utf-8")
        assert text == golden, (f"{name} differs from tests/golden/zoo_c/{name}: if the change is "
                                "intended, run python tools/make_golden_c.py and commit the files")
