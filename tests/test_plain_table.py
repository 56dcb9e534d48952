"""The plain-text tables of ``mcudeploy plan`` are byte for byte what the rich console prints
to a pipe, and plain_text declines whatever rich would lay out differently."""
from __future__ import annotations

import io
import random

from mcudeploy.report.console import PIPED_WIDTH, make_console
from mcudeploy.report.plain_table import TableText, plain_text
from mcudeploy.report.plan_render import rich_table

WORDS = ["a", "DTCM", "FLASH", "0", "65536", "weights", "in the arena", "live-set bound 49728, reuse rate 73%",
         "x" * 40, "-", "[bold]", "model/conv_1/Relu;x"]


def _rich(tables: list[TableText], lines: list[str]) -> str:
    out = io.StringIO()
    console = make_console(file=out, width=PIPED_WIDTH)
    for table in tables:
        console.print(rich_table(table))
    for line in lines:
        console.print(line, markup=False)
    return out.getvalue()


def _random_table(generator: random.Random) -> TableText:
    columns = [(generator.choice(WORDS[:8]), generator.choice(["left", "right"]))
               for _ in range(generator.randint(1, 5))]
    table = TableText(generator.choice(["regions", "memory ledger: resnet8_int8.tflite", "t"]), columns)
    for _ in range(generator.randint(1, 6)):
        table.rows.append([generator.choice(WORDS) for _ in columns])
    return table


def test_plain_text_is_what_rich_prints(monkeypatch):
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    generator, plain = random.Random(0), 0
    for _ in range(150):
        tables = [_random_table(generator) for _ in range(generator.randint(1, 3))]
        lines = [" ".join(generator.choice(WORDS) for _ in range(generator.randint(1, 8))) for _ in range(3)]
        text = plain_text(tables, lines, PIPED_WIDTH)
        if text is not None:    # None: rich prints it (a title wider than its table, ...)
            assert text == _rich(tables, lines)
            plain += 1
    assert plain > 100


def test_plain_text_declines_what_rich_lays_out_differently(monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    table = TableText("t", [("a", "left")], [["1"]])
    assert plain_text([table], ["fine"], PIPED_WIDTH) is not None
    assert plain_text([table], ["x" * (PIPED_WIDTH + 1)], PIPED_WIDTH) is None     # rich wraps it
    assert plain_text([TableText("t", [("a", "left")], [["é"]])], [], PIPED_WIDTH) is None
    assert plain_text([TableText("t", [("a", "left")], [])], [], PIPED_WIDTH) is None
    assert plain_text([TableText("a long title", [("a", "left")], [["1"]])], [], PIPED_WIDTH) is None
    assert plain_text([table], ["tab\there"], PIPED_WIDTH) is None
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert plain_text([table], ["fine"], PIPED_WIDTH) is None
