"""``mcudeploy generate --size-report``: real Flash and RAM of the generated code for one core.

Steps: ``make CORE=<core> objects`` compiles every network and runtime source with
``arm-none-eabi-gcc -Os -ffunction-sections -fdata-sections -fstack-usage
-fcallgraph-info=su``; the example ``main.c`` and the board start-up code are linked with
them (``--gc-sections``, so unused kernels drop out) and the linker map gives the bytes each
module keeps, by input section: ``.text*`` code, ``.rodata*`` constants (the weights are
``.rodata.mcu_weights.*``), ``.data*``, ``.bss*`` (the arena is ``.bss.mcu_arena.*``).
``arm-none-eabi-size`` of the linked image is the cross-check of the totals.

* Flash = text + rodata (+ the load image of data); RAM = data + bss.
* Stack: the deepest call chain from ``network_run`` in the ``-fcallgraph-info`` graph, with
  each function's ``-fstack-usage`` frame (libc's ``memcpy`` / ``memset`` counted as 0).
* runtime code = Flash of every module except ``network_data`` (the weights) and
  ``test_vectors``;
  RAM beyond the arena = data + bss - arena + stack.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..codegen.boards import BOARDS, CORE_FLAGS
from ..errors import UsageError
from ..targets import Core
from ..targets.model import core_key
from .c_runner import run_command

SIZE_BOARD = {"cortex-m4": "mps2-an386", "cortex-m7": "mps2-an386", "cortex-m33": "mps3-an547",
              "cortex-m55": "mps3-an547"}   # whose linker script the size link uses
ARCHITECTURE_BUILDS = {"armv7em": "cortex-m4", "armv8m.base": "cortex-m33", "armv8m.main": "cortex-m33",
                       "armv8.1m.main": "cortex-m55"}   # a core without a build of its own: its architecture's
MAP_ENTRY = re.compile(r"^ (\.[^\s]+|COMMON)\s+0x[0-9a-fA-F]+\s+0x([0-9a-fA-F]+)\s+(\S+\.o)\s*$", re.M)
DATA_MODULES = ("network_data", "test_vectors")
CI_NODE = re.compile(r'node: \{ title: "([^"]+)" label: "[^"]*?(?:\\n(\d+) bytes \([^)]*\))?"')
CI_EDGE = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"')


@dataclass
class ModuleSize:
    name: str
    text: int = 0
    rodata: int = 0
    data: int = 0
    bss: int = 0
    arena: int = 0        # part of bss that is the activation arena

    @property
    def flash(self) -> int:
        return self.text + self.rodata + self.data

    @property
    def ram(self) -> int:
        return self.data + self.bss


@dataclass
class SizeReport:
    core: str
    modules: list[ModuleSize] = field(default_factory=list)
    stack_bytes: int = 0
    stack_path: list[str] = field(default_factory=list)

    def total(self, attribute: str, *, weights: bool = True) -> int:
        """Sum over modules; ``weights=False`` leaves out the data modules (weights, test vectors)."""
        return sum(getattr(m, attribute) for m in self.modules if weights or m.name not in DATA_MODULES)

    @property
    def arena_bytes(self) -> int:
        return self.total("arena")

    @property
    def runtime_code_bytes(self) -> int:
        """Flash without the weights (network_data) and the test vectors."""
        return self.total("flash", weights=False)

    @property
    def ram_beyond_arena(self) -> int:
        return self.total("ram") - self.arena_bytes + self.stack_bytes


def _section_kind(section: str) -> str:
    for prefix, kind in ((".text", "text"), (".rodata", "rodata"), (".data", "data"), (".bss", "bss"),
                         ("COMMON", "bss")):
        if section.startswith(prefix):
            return kind
    return ""


def module_sizes(map_text: str, object_dir: Path) -> list[ModuleSize]:
    """Bytes each object of ``object_dir`` keeps in the linked image, from the linker map."""
    body = map_text.split("Linker script and memory map", 1)[-1]
    modules: dict[str, ModuleSize] = {}
    for section, size, path in MAP_ENTRY.findall(body):
        if Path(path).parent.name != object_dir.name:
            continue
        kind = _section_kind(section)
        if not kind:
            continue
        module = modules.setdefault(Path(path).stem, ModuleSize(Path(path).stem))
        setattr(module, kind, getattr(module, kind) + int(size, 16))
        if section.startswith(".bss.mcu_arena"):
            module.arena += int(size, 16)
    return sorted(modules.values(), key=lambda m: m.name)


def worst_stack(ci_texts: list[str], root: str = "network_run") -> tuple[int, list[str]]:
    """Deepest stack from ``root`` over the merged call graphs: (bytes, call chain)."""
    frames: dict[str, int] = {}
    calls: dict[str, set[str]] = {}
    for text in ci_texts:
        for title, size in CI_NODE.findall(text):
            if size:
                frames[title] = int(size)
        for source, target in CI_EDGE.findall(text):
            calls.setdefault(source, set()).add(target)
    memo: dict[str, tuple[int, list[str]]] = {}

    def deepest(name: str, path: tuple[str, ...]) -> tuple[int, list[str]]:
        if name in path:   # recursion: not bounded statically
            raise UsageError(f"the generated code calls {name} recursively; its stack is unbounded")
        if name not in memo:
            best = max((deepest(callee, path + (name,)) for callee in sorted(calls.get(name, ()))),
                       default=(0, []), key=lambda item: item[0])
            memo[name] = (frames.get(name, 0) + best[0], [name] + best[1])
        return memo[name]
    return deepest(root, ())


def size_core(core: Core | None) -> str:
    """The build (``--core``) the size report uses for ``core``: its own when the Makefile has
    one (``-mcpu`` is the core itself, so :func:`~mcudeploy.targets.model.core_key` of its name),
    else the build of its architecture (``Core.arch``), else ``cortex-m4``."""
    if core is None:
        return "cortex-m4"
    key = core_key(core.name)
    return key if key in SIZE_BOARD else ARCHITECTURE_BUILDS.get(core.arch, "cortex-m4")


def size_report(project: Path, core: str) -> SizeReport:
    """Build ``project`` for ``core`` at ``-Os`` and measure it (module docstring)."""
    if core not in SIZE_BOARD:
        raise UsageError(f"--core {core}: choose one of {', '.join(SIZE_BOARD)}")
    run_command(["make", "-s", f"CORE={core}", "objects"], project, f"compiling the generated code for {core}")
    object_dir = project / "build" / f"objects-{core}"
    board = BOARDS[SIZE_BOARD[core]]
    flags = CORE_FLAGS[core].split() + ["-std=c99", "-Os", "-ffunction-sections", "-fdata-sections", "-I.",
                                        "-Iruntime/include"]
    link_dir = project / "build" / f"size-{core}"
    link_dir.mkdir(parents=True, exist_ok=True)
    extra = []
    for source in ("main.c", "boards/startup_cortex_m.c"):
        target = link_dir / (Path(source).stem + ".o")
        run_command(["arm-none-eabi-gcc", *flags, "-c", source, "-o", str(target)], project, f"compiling {source}")
        extra.append(str(target))
    elf, map_file = link_dir / "example.elf", link_dir / "example.map"
    objects = sorted(str(p) for p in object_dir.glob("*.o"))
    run_command(["arm-none-eabi-gcc", *CORE_FLAGS[core].split(), *objects, *extra, "--specs=rdimon.specs",
                 "-nostartfiles", f"-Tboards/{board.name}.ld", "-Wl,--gc-sections", f"-Wl,-Map={map_file}",
                 "-o", str(elf)], project, f"linking the generated code for {core}")
    report = SizeReport(core, module_sizes(map_file.read_text(), object_dir))
    ci_texts = [path.read_text() for path in sorted(object_dir.glob("*.ci"))]
    report.stack_bytes, report.stack_path = worst_stack(ci_texts)
    return report


def elf_totals(elf: Path) -> tuple[int, int, int]:
    """``arm-none-eabi-size`` text, data, bss of a linked image."""
    output = subprocess.run(["arm-none-eabi-size", str(elf)], capture_output=True, text=True, check=True).stdout
    text, data, bss = output.splitlines()[1].split()[:3]
    return int(text), int(data), int(bss)
