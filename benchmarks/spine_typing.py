"""How visible the deployment spine is to the type checker, in one source tree or two (issue 28).

    python benchmarks/spine_typing.py [--before DIR]    # DIR: another checkout's root

Per tree: unannotated parameters named ``deployment`` / ``plan`` / ``target`` / ``kernels``,
``getattr(`` calls on a deployment, plan or target expression (``getattr(plan, ...)``,
``getattr(deployment.plan, ...)``, ...), ``.placement is not None`` / ``is None`` checks on a
plan, and the ``check_untyped_defs`` setting of pyproject.toml. Writes
benchmarks/results/spine_typing.md.
"""
from __future__ import annotations

import argparse
import ast
import datetime
import logging
import platform
import re
import sys
from pathlib import Path

from paths import REPO, RESULTS

SPINE = ("deployment", "plan", "target", "kernels")
SPINE_GETATTR = re.compile(r"getattr\((\w+\.)*(deployment|plan|target)\b")
PLACEMENT_CHECK = re.compile(r"plan\.placement is (not )?None")
logger = logging.getLogger("spine_typing")


def unannotated(source: Path) -> dict[str, int]:
    """Unannotated parameters of each spine name in ``source``/src/mcudeploy."""
    counts = dict.fromkeys(SPINE, 0)
    for path in sorted((source / "src" / "mcudeploy").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                for argument in arguments:
                    if argument.arg in counts and argument.annotation is None:
                        counts[argument.arg] += 1
    return counts


def figures(source: Path) -> dict[str, object]:
    texts = [path.read_text(encoding="utf-8") for path in (source / "src" / "mcudeploy").rglob("*.py")]
    settings = (source / "pyproject.toml").read_text(encoding="utf-8")
    untyped = re.search(r"check_untyped_defs\s*=\s*(\w+)", settings)
    return {**{f"unannotated `{name}`": count for name, count in unannotated(source).items()},
            "getattr on deployment / plan / target": sum(len(SPINE_GETATTR.findall(text)) for text in texts),
            "`plan.placement is (not) None` checks": sum(len(PLACEMENT_CHECK.findall(text)) for text in texts),
            "check_untyped_defs": untyped.group(1) if untyped else "unset"}


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="root of the tree to compare with (e.g. a git archive)")
    args = parser.parse_args()
    trees = {"before": args.before, "this tree": REPO} if args.before else {"this tree": REPO}
    table = {label: figures(path) for label, path in trees.items()}
    rows = list(next(iter(table.values())))
    lines = ["# The typed spine (issue 28)", "",
             f"Command: `python benchmarks/{Path(__file__).name}{' --before ' + str(args.before) if args.before else ''}`; "
             f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, Python {platform.python_version()} "
             "(static counts: machine load does not matter).", "",
             "| figure | " + " | ".join(table) + " |", "|---|" + "---|" * len(table)]
    lines += [f"| {row} | " + " | ".join(str(table[label][row]) for label in table) + " |" for row in rows]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "spine_typing.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    logger.info("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
