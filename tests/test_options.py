"""Deployment options as one typed record, read from a --config TOML file, printed back in
every report, and overridden by the command line."""
from __future__ import annotations

import json

import pytest

from conftest import shared_model
from mcudeploy.cli.main import main as cli_main
from mcudeploy.errors import UsageError
from mcudeploy.options import DeploymentOptions, load_options, options_toml, parse_options

MODEL = "mlperf_tiny/resnet8_int8.tflite"


def test_file_values_are_typed_and_sizes_parsed(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('[target]\nname = "stm32h743"\n[memory]\nsram_limit = "384K"\nreserve = 2048\n'
                      'reserve_regions = ["DTCM"]\n[schedule]\norder = "file"\nreuse = false\n'
                      '[weights]\nplacement = "ram"\n[mapping]\nforce_cpu = ["a", "b"]\n')
    options = load_options(config)
    assert options == DeploymentOptions(target="stm32h743", sram_limit=393216, reserve=2048,
                                        reserve_regions=("DTCM",), schedule="file", reuse=False,
                                        weights="ram", force_cpu=("a", "b"))


def test_round_trip_through_toml():
    options = DeploymentOptions(target="stm32n6", sram_limit=1 << 20, external_activations=False,
                                force_cpu=("x",), activation_region="npuRAM3")
    assert parse_options(__import__("tomllib").loads(options_toml(options)), "t") == options
    assert parse_options(__import__("tomllib").loads(options_toml(options, full=True)), "t") == options


@pytest.mark.parametrize("text,message", [
    ('[memory]\nsram_limt = "384K"\n', r"c.toml: \[memory\] unknown key 'sram_limt'; known keys are sram_limit"),
    ('[memory]\nsram_limit = true\n', r"c.toml: \[memory\] sram_limit: expected a size, got a boolean"),
    ('[memory]\nreserve = -5\n', r"c.toml: \[memory\] reserve: a size must not be negative"),
    ('[memory]\nalignment = 12\n', r"c.toml: \[memory\] alignment: must be a power of two"),
    ('[schedule]\norder = "fastest"\n', r"c.toml: \[schedule\] order: 'fastest' is not one of memory-aware, file"),
    ('[schedule]\ntime_limit = nan\n', r"c.toml: \[schedule\] time_limit: expected a finite number"),
    ('[weights]\nplacement = 3\n', r"c.toml: \[weights\] placement: expected non-empty text"),
    ('[mapping]\nforce_cpu = "conv1"\n', r"c.toml: \[mapping\] force_cpu: expected a list of names"),
    ('[memmory]\nreserve = 1\n', r"c.toml: unknown section \[memmory\]; known sections are \[target\]"),
    ('memory = 3\n', r"c.toml: \[memory\] must be a table of keys"),
    ('[memory\n', r"--config .*c.toml: not valid TOML"),
])
def test_bad_config_is_one_line_naming_file_and_key(tmp_path, capsys, text, message):
    config = tmp_path / "c.toml"
    config.write_text(text)
    with pytest.raises(UsageError, match=message):
        load_options(config)
    out = tmp_path / "p.json"
    assert cli_main(["plan", str(shared_model(MODEL)), "--config", str(config), "--json", str(out)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("mcudeploy: error:") and "c.toml" in error[0]
    assert not out.exists()


def test_missing_config_file_is_named(tmp_path, capsys):
    assert cli_main(["plan", str(shared_model(MODEL)), "--config", str(tmp_path / "nope.toml")]) == 2
    assert "nope.toml: no such file" in capsys.readouterr().err


def test_command_line_overrides_the_file_and_the_plan_prints_its_options(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('[target]\nname = "stm32h743"\n[memory]\nreserve = "1K"\n')
    out = tmp_path / "p.json"
    assert cli_main(["plan", str(shared_model(MODEL)), "--config", str(config), "--reserve", "2K",
                     "--json", str(out)]) == 0
    options = json.loads(out.read_text())["options"]
    assert options["target"] == "stm32h743" and options["reserve"] == 2048


def test_saved_config_reproduces_the_plan(tmp_path):
    first, second, saved = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "pinned.toml"
    model = str(shared_model(MODEL))
    assert cli_main(["plan", model, "--target", "stm32n6", "--sram-limit", "200K", "--schedule", "file",
                     "--json", str(first), "--save-config", str(saved)]) == 0
    assert cli_main(["plan", model, "--config", str(saved), "--json", str(second)]) == 0
    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    assert a["options"] == b["options"] and a["tensors"] == b["tensors"] and a["arena_region"] == b["arena_region"]
