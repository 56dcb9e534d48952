"""``mcudeploy search`` on the command line: the trial log, the written configuration that
``plan`` accepts, the exact critical limit checked by ``plan``, and bad input as one line with
the error class's exit code (the log written so far kept)."""
from __future__ import annotations

import json
import re

import pytest

from conftest import shared_model
from mcudeploy.cli.main import main

RESNET8 = "mlperf_tiny/resnet8_int8.tflite"


@pytest.mark.slow
def test_search_writes_a_log_and_a_config_that_plan_accepts(tmp_path, capsys):
    model = shared_model(RESNET8)
    log, best, result = tmp_path / "s.log", tmp_path / "best.toml", tmp_path / "s.json"
    code = main(["search", str(model), "--target", "stm32h743", "--budget", "10", "--log", str(log),
                 "-o", str(best), "--json", str(result)])
    assert code == 0
    out = capsys.readouterr().out
    assert "critical sram_limit" in out and "best (trial" in out
    assert log.read_text().splitlines()[1].startswith("Trial 0 [defaults]: config {")
    data = json.loads(result.read_text())
    limit = data["critical_sram_limit"]["passing"]
    assert data["critical_sram_limit"]["failing"] == limit - 1
    assert "[target]" in best.read_text() and f"critical sram_limit {limit}" in best.read_text()
    assert main(["plan", str(model), "--config", str(best), "--sram-limit", str(limit)]) == 0
    assert main(["plan", str(model), "--config", str(best), "--sram-limit", str(limit - 1)]) == 8
    assert main(["estimate", str(model), "--config", str(best)]) == 0


@pytest.mark.parametrize("arguments,message", [
    (["--budget", "0"], "at least one trial"),
    (["--objective", "speed"], "invalid choice"),
    (["--flash-limit", "lots"], "--flash-limit 'lots'"),
    (["-j", "0"], "at least one worker"),
    (["--time", "0"], "--time 0.0: give a positive number of seconds"),
    (["--time", "-5"], "--time -5.0: give a positive number of seconds"),
])
def test_bad_arguments_are_one_line_with_exit_code_2(arguments, message, capsys):
    code = main(["search", str(shared_model(RESNET8)), "--target", "stm32h743", *arguments])
    error = capsys.readouterr().err
    assert code == 2 and message in error and error.count("\n") == 1 and "Traceback" not in error


def test_unknown_option_or_knob_in_files_is_a_usage_error(tmp_path, capsys):
    model = str(shared_model(RESNET8))
    config = tmp_path / "c.toml"
    config.write_text("[memory]\nsram_limt = 1000\n")
    assert main(["search", model, "--target", "stm32h743", "--config", str(config)]) == 2
    assert "unknown key 'sram_limt'" in capsys.readouterr().err
    space = tmp_path / "space.toml"
    space.write_text('[space]\nweights = ["sram"]\n')
    assert main(["search", model, "--target", "stm32h743", "--space", str(space)]) == 2
    assert "knob 'weights'" in capsys.readouterr().err


@pytest.mark.slow
def test_nothing_fits_exits_8_after_the_fixes_and_keeps_the_log(tmp_path, capsys):
    log = tmp_path / "nofit.log"
    code = main(["search", str(shared_model(RESNET8)), "--target", "stm32f407", "--sram-limit", "16K",
                 "--on-chip-only", "--budget", "6", "--log", str(log), "-o", str(tmp_path / "none.toml")])
    captured = capsys.readouterr()
    assert code == 8 and "no configuration of" in captured.err
    assert re.search(r"fix \d+ \[sram_limit, verified\]", captured.out)
    assert "nothing written to" in captured.out and not (tmp_path / "none.toml").exists()
    assert "FAIL (RAM_NOFIT" in log.read_text() and (tmp_path / "nofit.log.jsonl").exists()


def test_a_target_without_memory_is_one_line(tmp_path, capsys):
    target = tmp_path / "rom.toml"
    target.write_text('name = "rom"\n[core]\nname = "Cortex-M0"\nclock_mhz = 48\n'
                      '[[regions]]\nname = "ROM"\nbase = 0\nsize = "64K"\nkind = "flash"\naccess = "r"\n')
    assert main(["search", str(shared_model(RESNET8)), "--target", str(target), "--budget", "2"]) == 2
    assert "no memory the activations may use" in capsys.readouterr().err


def _one_error_line(capsys) -> str:
    error = capsys.readouterr().err
    lines = [line for line in error.splitlines() if line.startswith("mcudeploy: error:")]
    assert len(lines) == 1 and "Traceback" not in error
    return lines[0]


def test_a_space_that_contradicts_the_target_is_one_line_and_the_log_is_kept(tmp_path, capsys):
    space, log = tmp_path / "space.toml", tmp_path / "s.log"
    space.write_text("[space]\nexternal_activations = [true, false]\n")
    code = main(["search", str(shared_model(RESNET8)), "--target", "stm32h743", "--budget", "3",
                 "--space", str(space), "--log", str(log)])
    line = _one_error_line(capsys)
    assert code == 2 and "knob 'external_activations' = on needs external RAM" in line and "'stm32h743'" in line
    assert log.read_text().startswith("# mcudeploy search ")            # the log so far, no trial run
    space.write_text('[space]\nactivation_region = ["auto", "SRAM9"]\n')
    assert main(["search", str(shared_model(RESNET8)), "--target", "stm32h743", "--budget", "3",
                 "--space", str(space)]) == 2
    assert "'SRAM9': target 'stm32h743' has no such region" in _one_error_line(capsys)


def test_a_tile_count_the_tensor_cannot_take_is_one_line_and_the_log_is_kept(tmp_path, capsys):
    from mcudeploy.driver import deployable_graph, load_graph
    names = [n.name for n in deployable_graph(load_graph(shared_model(RESNET8))).nodes]
    config, log = tmp_path / "c.toml", tmp_path / "s.log"
    config.write_text(f'[tiling]\nregions = [{{start = "{names[0]}", end = "{names[1]}", tiles = 100}}]\n')
    code = main(["search", str(shared_model(RESNET8)), "--target", "stm32h743", "--budget", "2",
                 "--config", str(config), "--log", str(log)])
    line = _one_error_line(capsys)
    assert code == 2 and "100 tiles along rows" in line and "use at most 32" in line
    assert log.read_text().startswith("# mcudeploy search ")


def test_fixes_not_started_within_the_time_say_so(tmp_path, capsys):
    """--time bounds the what-if phase too: a fix not started within it is listed as not
    tried, with the budget, instead of running past it or vanishing."""
    log = tmp_path / "t.log"
    code = main(["search", str(shared_model(RESNET8)), "--target", "stm32f407", "--sram-limit", "16K",
                 "--on-chip-only", "--time", "0.001", "--log", str(log)])
    out = capsys.readouterr().out
    assert code == 8
    assert "NOT verified]: not tried: the time budget (--time 0.001 s) was spent" in out
    assert "# fix [" in log.read_text() and "trial cost: " in log.read_text()


def test_front_writes_each_on_chip_front_point_and_never_a_file_of_the_users(tmp_path, capsys):
    """``-o BEST --front``: the memory objective writes its knee to BEST and every point of the
    on-chip front beside it, each a --config that plans with the figures its header states;
    a file of the user's named like one is refused before any trial."""
    from mcudeploy.driver import deploy
    from mcudeploy.options import load_options
    model, best = shared_model(RESNET8), tmp_path / "best.toml"
    mine = tmp_path / "best.trial3.toml"
    mine.write_text("my notes\n", encoding="utf-8")
    arguments = ["search", str(model), "--target", "stm32n6", "--budget", "4", "-o", str(best), "--front"]
    assert main(arguments) == 2 and mine.read_text(encoding="utf-8") == "my notes\n"
    assert "--front" in capsys.readouterr().err and not best.exists()
    mine.unlink()
    assert main(arguments) == 0
    out = capsys.readouterr().out
    written = sorted(tmp_path.glob("best.trial*.toml"))
    assert len(written) >= 2 and "on-chip front" in out
    figures = []
    for path in written:
        header = path.read_text(encoding="utf-8").splitlines()
        assert header[0].startswith("# found by: mcudeploy search") and "of the on-chip front" in "\n".join(header)
        deployment = deploy(model, load_options(path))
        on_chip = sum(r.used for r in deployment.ledger.regions if r.kind == "sram")
        assert f"on-chip RAM {on_chip} bytes" in "\n".join(header), path.name
        figures.append(on_chip)
    assert len(set(figures)) == len(figures)
    assert main(arguments) == 0                     # its own files are rewritten
    assert main(["search", str(model), "--target", "stm32n6", "--budget", "2", "--front"]) == 2
