"""``mcudeploy doctor``: real error texts -> the matching cause and fix, with the numbers from the
text; vendor tools' lines as they print them, ours produced by running our CLI on bad input."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_model
from mcudeploy.cli.main import main
from mcudeploy.doctor import diagnose, load_knowledge
from mcudeploy.doctor.knowledge import fill
from mcudeploy.errors import DoesNotFitError, UsageError
from mcudeploy.runs import RunStore
from onnx_builders import single_op
from validate_pairs import tiny_pair

# (text as the tool prints it, entry id, words the explanation must quote from the text)
VENDOR_TEXTS = {
    "st_oauto": ("ERROR: Oauto did not find valid compile options. Try an explicit option set or other "
                 "memory pools (atonn 1.1.1)", "st-oauto-no-options", []),
    "st_e103": ("E103(CliRuntimeError): Error calling the Neural-ART compiler: atonn returned 1",
                "st-e103", ["Error calling the Neural-ART compiler"]),
    "ld_axiram": ("/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld: firmware.elf section "
                  "`.bss' will not fit in region `AXIRAM'\n/usr/lib/gcc/arm-none-eabi/12.2.1/../../../"
                  "arm-none-eabi/bin/ld: region `AXIRAM' overflowed by 116704 bytes",
                  "linker-region-overflow", ["AXIRAM", "116704 bytes (114.0 KiB)"]),
    "ld_ram_plain": ("collect2: ld: RAM overflowed by 2048 bytes", "linker-region-overflow",
                     ["RAM", "2048 bytes (2.0 KiB)"]),
    "tflm_hybrid": ("tensorflow/lite/micro/kernels/fully_connected.cc:94 Hybrid models are not supported on "
                    "TFLite Micro.", "tflm-hybrid", []),
    "tflm_op": ("Didn't find op for builtin opcode 'CONV_2D'\nFailed to get registration from op code CONV_2D",
                "tflm-op-not-registered", ["CONV_2D"]),
    "tflm_arena": ("Arena size is too small for all buffers. Needed 163840 but only 131072 was available.\n"
                   "AllocateTensors() failed", "tflm-arena-too-small", ["163840", "131072"]),
    "vela": ("Warning: TRANSPOSE_CONV 'model/conv2d_transpose/conv2d_transpose' is not supported on the NPU. "
             "Placing on CPU instead", "vela-cpu-fallback", ["TRANSPOSE_CONV", "model/conv2d_transpose"]),
    "zero_outputs": ("After flashing the board the network outputs are all zeros, for every image",
                     "outputs-all-zero", []),
    "mismatch": ("Predictions on the board do not match the PC: top-1 falls from 91% to 12%",
                 "pc-board-mismatch", []),
}


@pytest.mark.parametrize("case", VENDOR_TEXTS, ids=list(VENDOR_TEXTS))
def test_vendor_texts_get_their_cause_and_fix(case, capsys):
    text, expected, quoted = VENDOR_TEXTS[case]
    assert main(["doctor", text, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    first = report["diagnoses"][0]
    assert first["id"] == expected and report["known"]
    assert first["fix"] and first["check"].startswith("mcudeploy")
    for word in quoted:
        assert word in first["cause"] + first["fix"]
    assert "{" not in first["cause"] and "[[" not in first["cause"]


def _external_data(folder: Path) -> Path:
    from onnx import TensorProto
    model = single_op("MatMul", {"x": [1, 4]}, initializers={"w": np.ones((4, 2), np.float32)})
    tensor = model.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", "../../etc/passwd"
    return _save(folder / "ext.onnx", model)


def _save(path: Path, model) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


def _bad_validation(folder: Path) -> list[str]:
    float_path, bad_path = tiny_pair(folder, bad_scale=8.0)
    return ["validate", str(float_path), "--quantized", str(bad_path)]


def _determinant(folder: Path) -> list[str]:
    model = single_op("Det", {"x": [1, 3, 3]}, name="determinant")   # no MCU kernel computes Det
    return ["analyze", str(_save(folder / "det.onnx", model))]


def _allocation(folder: Path) -> list[str]:
    (folder / "buffers.csv").write_text("id,lower,upper,size\n0,0,2,100\n1,1,3,100\n")
    return ["plan", "--allocation-csv", str(folder / "buffers.csv"), "--capacity", "150"]


def _random_tflite(folder: Path) -> list[str]:
    (folder / "model.tflite").write_bytes(np.random.default_rng(1).bytes(2048))
    return ["analyze", str(folder / "model.tflite")]


# (command on bad input, its exit code, entry id, words the explanation must quote; "re:..."
# stands for what its group matches in the error message)
OUR_FAILURES = {
    "does_not_fit": (lambda d: ["plan", str(shared_model("mlperf_tiny/resnet8_int8.tflite")), "--target",
                                "stm32h743", "--sram-limit", "20K"], 8, "mcudeploy-does-not-fit",
                     [r"re:does not fit: (\w+) by", r"re:by (\d+) bytes \("]),
    "does_not_fit_allocation": (_allocation, 8, "mcudeploy-does-not-fit", ["50 bytes (0.0 KiB)"]),
    "unsupported_op": (_determinant, 4, "unsupported-operator", ["Det", "determinant"]),
    "dynamic_shape": (lambda d: ["analyze", str(_save(d / "dyn.onnx", single_op("Relu", {"img": [1, 3, "H", 8]})))],
                      4, "dynamic-shape", ["img"]),
    "validation_failed": (_bad_validation, 9, "mcudeploy-validation-failed", ["cosine", "needs >= 0.99"]),
    "model_format": (_random_tflite, 3, "mcudeploy-model-format", []),
    "unsafe_path": (lambda d: ["analyze", str(_external_data(d))], 5, "mcudeploy-unsafe-path", ["../../etc/passwd"]),
}


@pytest.mark.parametrize("case", OUR_FAILURES, ids=list(OUR_FAILURES))
def test_our_own_errors_from_the_cli_get_their_cause_and_fix(case, tmp_path, capsys):
    build, exit_code, expected, quoted = OUR_FAILURES[case]
    assert main(build(tmp_path)) == exit_code
    error = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mcudeploy: error:")]
    assert len(error) == 1
    assert main(["doctor", error[0], "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["diagnoses"][0]
    assert first["id"] == expected
    for word in quoted:
        if word.startswith("re:"):
            word = re.search(word[3:], error[0]).group(1)
        assert word in first["cause"]


def test_unknown_text_says_it_does_not_know(capsys):
    assert main(["doctor", "the coffee machine is out of beans"]) == 1
    out = capsys.readouterr().out
    assert "does not know" in out and "-v" in out
    assert diagnose("nothing to see here") == []


def test_a_log_file_gets_every_known_problem_in_order(tmp_path, capsys):
    log = tmp_path / "build.log"
    log.write_text("compiling...\n" + VENDOR_TEXTS["vela"][0] + "\nlinking\n" + VENDOR_TEXTS["ld_axiram"][0]
                   + "\n" + VENDOR_TEXTS["vela"][0].replace("TRANSPOSE_CONV", "SQUEEZE") + "\n")
    assert main(["doctor", str(log), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [d["id"] for d in report["diagnoses"]] == ["vela-cpu-fallback", "linker-region-overflow"]
    assert report["diagnoses"][0]["occurrences"] == 2 and report["diagnoses"][0]["line_number"] == 2
    assert report["evidence"] == f"log file {log}"


def test_a_recorded_run_is_explained_from_its_errors_or_its_exit_code(tmp_path, capsys):
    path = tmp_path / "runs.sqlite"
    with RunStore.open(path) as store:
        with pytest.raises(DoesNotFitError):
            with store.record("plan", ["plan", "m.tflite"]):
                raise DoesNotFitError("m.tflite: does not fit: SRAM1 by 4096 bytes (4.0 KiB) (20480 used)")
        with pytest.raises(DoesNotFitError):
            with store.record("plan", ["plan", "m.tflite"]):
                raise DoesNotFitError("something our knowledge base has never seen")
    assert main(["doctor", "1", "--runs", str(path), "--json"]) == 0
    by_text = json.loads(capsys.readouterr().out)
    assert by_text["run"] == 1 and by_text["diagnoses"][0]["values"] == {"region": "SRAM1", "bytes": "4096"}
    assert main(["doctor", "--runs", str(path), "--json"]) == 0          # no argument: the last run
    by_code = json.loads(capsys.readouterr().out)
    assert by_code["run"] == 2 and by_code["diagnoses"][0]["matched_by"] == "exit code"
    assert by_code["diagnoses"][0]["id"] == "mcudeploy-does-not-fit"


def test_knowledge_base_is_checked_and_templates_fill(tmp_path):
    entries = load_knowledge()
    assert len({e.id for e in entries}) == len(entries) >= 15
    assert {code for e in entries for code in e.exit_codes} >= {2, 3, 4, 5, 6, 7, 8, 9}
    assert fill("over[[ ({region})]][[ by {bytes} bytes ({bytes_kib} KiB)]].", {"bytes": "2048"}) == \
        "over by 2048 bytes (2.0 KiB)."
    broken = tmp_path / "k.toml"
    broken.write_text('[[entry]]\nid = "x"\ntitle = "t"\nsource = "s"\npatterns = ["a(?P<n>b)", "c"]\n'
                      'cause = "{n}"\nfix = "f"\ncheck = "mcudeploy x"\n')
    with pytest.raises(UsageError, match="entry 'x': cause uses n outside"):
        load_knowledge(broken)
    broken.write_text('[[entry]]\nid = "x"\ntitle = "t"\nsource = "s"\npatterns = ["(unclosed"]\n'
                      'cause = "c"\nfix = "f"\ncheck = "c"\n')
    with pytest.raises(UsageError, match="pattern does not compile"):
        load_knowledge(broken)


@pytest.mark.parametrize("text, expected, broader", [
    ("Didn't find op for builtin opcode 'FULLY_CONNECTED' version '12'. An older version of this builtin "
     "might be supported. Are you using an old TFLite binary with a newer model?", "tflm-op-version",
     "tflm-op-not-registered"),
    ("Warning: Unsupported TensorFlow Lite semantics for MEAN 'model/gap/Mean'. Placing on CPU instead",
     "vela-tflite-semantics", "vela-cpu-fallback"),
    ("E010(InvalidModelError): Unsupported layer types: Lambda, stopping.", "keras-lambda-layer",
     "unsupported-operator"),
])
def test_a_specific_entry_replaces_the_broader_one_on_its_line(text, expected, broader):
    """An op-version mismatch is no missing op, Vela's semantic check no NPU limit, ST's E010
    on a Lambda no unknown operator named 'Lambda, stopping'."""
    found = [d.entry.id for d in diagnose(text)]
    assert found == [expected], found
    assert broader not in found


def test_the_broader_entries_still_explain_their_own_lines():
    assert [d.entry.id for d in diagnose("Didn't find op for builtin opcode 'CONV_2D'")] == ["tflm-op-not-registered"]
    assert [d.entry.id for d in diagnose("Unsupported layer types: LayerNormalization")] == ["unsupported-operator"]
