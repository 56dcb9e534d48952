"""``mcudeploy generate MODEL --target T -o DIR``: write the C project of a full-integer model.

Options: ``--test-vectors DATA`` (``.npz`` / ``.npy`` samples; float data for an integer
input is quantized with the input's scale and zero point, ``q = clamp(round_half_even(x /
scale) + zero_point)``; the expected outputs come from the integer reference executor),
``--trustzone`` (secure entry + non-secure header), ``--force`` (write into a folder holding
other files; they are kept), ``--size-report`` (Flash / RAM per module, built for
``--core``; needs arm-none-eabi-gcc). Exit codes: see :mod:`mcudeploy.errors`.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ..codegen import ProjectOptions, TestVectors, generate_files, plan_for_codegen, write_project
from ..errors import UsageError
from ..driver import load_for_deployment
from ..reference.float_kernels.quant import quantize
from ..reference.int_executor import prepare_graph, run_int
from ..report.console import make_console
from ..targets import load_target
from ..validate.data import _read_file, check_arrays   # _read_file: the .npz/.npy key matching
from ..validate.engines import precision
from .cmd_analyze import add_model_arguments, input_shapes_from
from .registry import command

CORES = ("cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55")


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--target", metavar="T", help="built-in target name or a .toml file "
                        "(memory regions of the weights and the arena); default: one generic arena")
    parser.add_argument("-o", "--output", required=True, type=Path, metavar="DIR", help="output folder")
    parser.add_argument("--test-vectors", type=Path, metavar="DATA",
                        help="samples (.npz keyed by input name, or .npy) exported with the reference "
                             "outputs as C arrays; main.c checks them")
    parser.add_argument("--trustzone", action="store_true",
                        help="add a TrustZone secure entry (secure/network_secure.c) and network_ns.h")
    parser.add_argument("--force", action="store_true",
                        help="write into a folder that holds files mcudeploy did not write (they are kept)")
    parser.add_argument("--size-report", action="store_true",
                        help="build for --core with arm-none-eabi-gcc -Os and report Flash / RAM per module")
    parser.add_argument("--core", choices=CORES, help="core of --size-report (default: the target's, "
                        "else cortex-m4)")


def _integer_graph(args: argparse.Namespace):
    graph = load_for_deployment(args.model, input_shapes=input_shapes_from(args))
    kind = precision(graph)
    if kind != "integer":
        raise UsageError(f"{args.model}: a {kind} model; C code is generated for full-integer models "
                         "only; quantize it with mcudeploy quantize first")
    return graph


def load_test_vectors(path: Path, graph) -> TestVectors:
    """Samples for every input (float data quantized) and the reference outputs."""
    arrays = _read_file(path, graph)
    for value in graph.inputs:
        array = np.asarray(arrays[value.name])
        if array.dtype.kind == "f" and value.dtype.is_integer and value.quant is not None:
            arrays[value.name] = quantize(array.astype(np.float32), value.quant, value.dtype.numpy)
    samples = check_arrays(graph, arrays, str(path))
    return TestVectors(samples.arrays, run_int(graph, samples.arrays, batch=True), str(path.name))


def _core(args: argparse.Namespace, target) -> str:
    if args.core:
        return args.core
    name = target.core.name.lower() if target is not None else ""
    return next((core for core in CORES if core.split("-")[1] in name), "cortex-m4")


def _print_sizes(project: Path, core: str) -> None:
    from ..validate.size_report import size_report

    report = size_report(project, core)
    console = make_console()
    console.print(f"sizes for {core} (-Os, linked with --gc-sections), bytes:")
    console.print(f"  {'module':<24}{'flash':>10}{'ram':>10}{'arena':>10}")
    for module in report.modules:
        console.print(f"  {module.name:<24}{module.flash:>10}{module.ram:>10}{module.arena:>10}")
    console.print(f"  runtime code (flash without weights) {report.runtime_code_bytes}; weights "
                  f"{report.total('flash') - report.runtime_code_bytes}; arena {report.arena_bytes}; "
                  f"stack {report.stack_bytes} ({' -> '.join(report.stack_path)}); RAM beyond the arena "
                  f"{report.ram_beyond_arena}")


@command("generate", "Generate the C code of a full-integer model (network.c/.h, data, runtime, build files)",
         _arguments)
def run(args: argparse.Namespace) -> int:
    target = load_target(args.target) if args.target else None
    graph = _integer_graph(args)
    vectors = load_test_vectors(args.test_vectors, graph) if args.test_vectors else None
    plan = plan_for_codegen(graph, target)
    options = ProjectOptions(model=args.model.name, target=target, test_vectors=vectors, trustzone=args.trustzone)
    files = generate_files(graph, plan, prepare_graph(graph), options)
    written = write_project(files, args.output, force=args.force)
    make_console().print(f"{args.output}: {len(written)} files; {len(plan.order)} layers, arena "
                         f"{plan.arena_bytes} bytes" + (f", {len(vectors.inputs[graph.inputs[0].name])} "
                                                        "test vector(s)" if vectors else ""))
    if args.size_report:
        _print_sizes(args.output, _core(args, target))
    return 0
