"""Read and write allocation problems in MiniMalloc's CSV format.

Input  (one buffer a row):  ``id,lower,upper,size``         buffer alive over [lower, upper)
Output (the solved plan):   ``id,lower,upper,size,offset``
An optional ``alignment`` column is accepted on input (default 1). Rules checked on read,
each reported with the file and line: the header names the columns above, every value is
an integer (ids may be any text), lower < upper, size > 0, alignment > 0, ids are unique.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Iterator

from ..errors import DataError
from ..text_inputs import read_text
from .buffers import Buffer, Plan

REQUIRED_COLUMNS = ("id", "lower", "upper", "size")


def read_buffers(path: Path) -> list[Buffer]:
    """Buffers from a MiniMalloc CSV file (see the module docstring for the rules)."""
    path = Path(path)
    return parse_buffers(read_text(path, "--allocation-csv"), str(path))   # a regular file, bounded


def _rows(text: str, source: str) -> Iterator[list[str]]:
    """The CSV rows of ``text``; a malformed row (a field over the csv module's limit of
    ``csv.field_size_limit()`` characters, 128 KiB, a NUL) is one :class:`DataError`."""
    reader = csv.reader(io.StringIO(text))
    try:
        yield from reader
    except csv.Error as error:
        raise DataError(f"{source}:{reader.line_num}: not a readable CSV row ({error}; a field may hold at most "
                        f"{csv.field_size_limit():,} characters)") from None


def parse_buffers(text: str, source: str = "<text>") -> list[Buffer]:
    """Buffers from MiniMalloc CSV text; ``source`` names the file in error messages."""
    rows = _rows(text, source)
    header = [name.strip() for name in next(rows, [])]
    missing = [name for name in REQUIRED_COLUMNS if name not in header]
    if missing:
        raise DataError(f"{source}:1: header must name the columns id,lower,upper,size "
                        f"(missing {', '.join(missing)}); got {','.join(header) or 'an empty file'}")
    buffers: list[Buffer] = []
    seen: dict[str, int] = {}
    for line, row in enumerate(rows, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise DataError(f"{source}:{line}: expected {len(header)} values, got {len(row)}")
        record = dict(zip(header, (cell.strip() for cell in row)))
        buffer = _buffer_from(record, source, line)
        if record["id"] in seen:
            raise DataError(f"{source}:{line}: buffer id {record['id']!r} already used on line "
                            f"{seen[record['id']]}; ids must be unique")
        seen[record["id"]] = line
        buffers.append(buffer)
    return buffers


def _buffer_from(record: dict, source: str, line: int) -> Buffer:
    values = {}
    for name in ("lower", "upper", "size", "alignment"):
        text = record.get(name, "1" if name == "alignment" else "")
        try:
            values[name] = int(text)
        except ValueError:
            raise DataError(f"{source}:{line}: {name} must be an integer, got {text!r}") from None
    if values["lower"] >= values["upper"]:
        raise DataError(f"{source}:{line}: lower ({values['lower']}) must be less than upper "
                        f"({values['upper']}): a buffer lives over [lower, upper)")
    if values["size"] <= 0 or values["alignment"] <= 0:
        raise DataError(f"{source}:{line}: size and alignment must be positive, got size "
                        f"{values['size']}, alignment {values['alignment']}")
    identifier = int(record["id"]) if record["id"].lstrip("-").isdigit() else record["id"]
    return Buffer(identifier, values["size"], values["lower"], values["upper"],
                  values["alignment"])


def format_plan(buffers: list[Buffer], plan: Plan) -> str:
    """The solved plan as ``id,lower,upper,size,offset`` CSV text (input order)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*REQUIRED_COLUMNS, "offset"])
    for b in buffers:
        writer.writerow([b.id, b.start, b.end, b.size, plan.offsets[b.id]])
    return out.getvalue()


def format_buffers(buffers: list[Buffer]) -> str:
    """The problem as ``id,lower,upper,size`` CSV text (alignment column only when used)."""
    aligned = any(b.alignment != 1 for b in buffers)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*REQUIRED_COLUMNS, *(["alignment"] if aligned else [])])
    for b in buffers:
        writer.writerow([b.id, b.start, b.end, b.size, *([b.alignment] if aligned else [])])
    return out.getvalue()


def write_plan(path: Path, buffers: list[Buffer], plan: Plan) -> None:
    """Write the plan CSV to ``path`` (its folder must exist)."""
    from ..safe_io import write_text  # atomic: a failed write keeps the old file

    write_text(path, format_plan(buffers, plan), "-o")


def read_plan_offsets(path: Path) -> dict:
    """Offsets by id from an ``id,lower,upper,size,offset`` file (used to re-check plans)."""
    rows = list(csv.DictReader(io.StringIO(Path(path).read_text())))
    if not rows or "offset" not in rows[0]:
        raise DataError(f"{path}: not a plan CSV (needs an offset column)")
    return {(int(r["id"]) if r["id"].lstrip("-").isdigit() else r["id"]): int(r["offset"])
            for r in rows}
