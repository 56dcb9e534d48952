"""``mcudeploy generate MODEL --target T -o DIR``: write the C project of a full-integer model.

Options: ``--test-vectors DATA`` (``.npz`` / ``.npy`` samples; float data for an integer
input is quantized with the input's scale and zero point, ``q = clamp(round_half_even(x /
scale) + zero_point)``; the expected outputs come from the integer reference executor),
``--trustzone`` (secure entry, secure and non-secure images for ``make BOARD=mps3-an547
TRUSTZONE=1``: :mod:`mcudeploy.codegen.trustzone`), ``--api st-ai|legacy`` and ``--name``
(ST's client APIs over the network: :mod:`mcudeploy.codegen.client_api`), ``[preprocess]`` in the ``--config`` file (``preprocess.c/.h``: :mod:`mcudeploy.preprocess`), ``--force`` (write into a folder holding
other files; they are kept), ``--size-report`` (Flash / RAM per module, built for
``--core``; needs arm-none-eabi-gcc). Exit codes: see :mod:`mcudeploy.errors`.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..codegen import ProjectOptions, TestVectors, generate_files, write_project
from ..codegen.client_api import api_entry_files, check_api_options
from ..codegen.output_dir import check_output_folder
from ..codegen.vendor_npu import SCRIPT, check_vendor_target, handoff_files
from ..driver import deploy, partition_deployment
from ..errors import UsageError
from ..estimate.render import latency_lines
from ..mapping import CPU, NPU
from ..pipeline import generate, test_vectors
from ..preprocess.spec import preprocess_from_file
from ..progress import phase
from ..reference.float_kernels.quant import quantize
from ..report.console import make_console
from ..runs.capture import note_deployment, note_estimate, note_generation
from ..validate.data import _read_file, check_arrays  # _read_file: the .npz/.npy key matching
from ..validate.size_report import SIZE_BOARD, size_core, size_report
from .cmd_analyze import add_model_arguments, input_shapes_from
from .deployment_args import add_deployment_arguments, deployment_options
from .registry import command

if TYPE_CHECKING:
    from ..deployment import Deployment
    from ..targets import Target


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    add_deployment_arguments(parser)
    parser.add_argument("-o", "--output", required=True, type=Path, metavar="DIR", help="output folder")
    parser.add_argument("--test-vectors", type=Path, metavar="DATA",
                        help="samples (.npz keyed by input name, or .npy) exported with the reference "
                             "outputs as C arrays; main.c checks them")
    parser.add_argument("--trustzone", action="store_true",
                        help="add the TrustZone secure entry (secure/network_secure.c), network_ns.h and the secure / "
                             "non-secure images of mps3-an547 (make BOARD=mps3-an547 TRUSTZONE=1)")
    parser.add_argument("--api", default="mcudeploy", metavar="API",
                        help="the C API the application calls: mcudeploy (network.h, default), st-ai (ST Edge AI: "
                             "stai.h, <name>.h) or legacy (X-CUBE-AI: ai_platform.h, <name>.h, <name>_data.h); "
                             "docs/st-api.md")
    parser.add_argument("--name", default="network", metavar="NAME",
                        help="the network's C name in the --api st-ai / legacy functions and macros "
                             "(stai_NAME_run, AI_NAME_IN_1_SIZE; default network)")
    parser.add_argument("--force", action="store_true",
                        help="write into a folder that holds files mcudeploy did not write (they are kept)")
    parser.add_argument("--size-report", action="store_true",
                        help="build for --core with arm-none-eabi-gcc -Os and report Flash / RAM per module")
    parser.add_argument("--core", choices=tuple(SIZE_BOARD), help="core of --size-report (default: the target's, "
                        "else cortex-m4)")


def load_test_vectors(path: Path, graph) -> TestVectors:
    """Samples for every input (float data quantized) and the reference outputs."""
    arrays = _read_file(path, graph)
    for value in graph.inputs:
        array = np.asarray(arrays[value.name])
        if array.dtype.kind == "f" and value.dtype.is_integer and value.quant is not None:
            arrays[value.name] = quantize(array.astype(np.float32), value.quant, value.dtype.numpy)
    samples = check_arrays(graph, arrays, str(path))
    return test_vectors(graph, samples.arrays, str(path.name))


def _core(args: argparse.Namespace, target: Target | None) -> str:
    return args.core or size_core(target.core if target is not None else None)


def _print_sizes(report, core: str) -> None:
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
    check_api_options(args.api, args.name, args.trustzone)
    if args.size_report and args.api != "mcudeploy":
        raise UsageError(f"--size-report --api {args.api}: the size report builds mcudeploy's own Makefile; "
                         "run it with --api mcudeploy (the network's code is the same)")
    check_output_folder(args.output, force=args.force)
    options = deployment_options(args)
    with phase(f"planning {args.model.name}" + (f" on {options.target}" if options.target else "")):
        deployment = deploy(args.model, options, input_shapes=input_shapes_from(args))
    note_deployment(deployment)
    if deployment.executor == "vendor-npu":
        return _handoff(args, deployment)
    graph, plan = deployment.graph, deployment.plan
    vectors = None
    if args.test_vectors:
        with phase("test vectors (the integer reference)"):
            vectors = load_test_vectors(args.test_vectors, graph)
    with phase(f"writing the C code into {args.output}"):
        written = generate(deployment, ProjectOptions(test_vectors=vectors, trustzone=args.trustzone, api=args.api,
                                                      name=args.name),
                           preprocess=preprocess_from_file(args.config) if args.config else None,
                           folder=args.output, force=args.force).written
    note_generation(written)
    console = make_console()
    console.print(f"{args.output}: {len(written)} files; {len(plan.order)} layers, arena "
                  f"{plan.arena_bytes} bytes in {plan.placement.arena_region}"
                  + (f", {len(vectors.inputs[graph.inputs[0].name])} test vector(s)" if vectors else ""))
    console.print(deployment.ledger.verdict())
    if args.api != "mcudeploy":
        console.print(f"--api {args.api}: {', '.join(api_entry_files(args.api, args.name))} over mcudeploy/network.c; "
                      "the application gives the activation buffers; build with mcudeploy.mk (docs/st-api.md)",
                      markup=False)
    for line in [deployment.executor_line(), *latency_lines(deployment, note_estimate)]:
        if line:
            console.print(line, markup=False)
    if args.size_report:
        with phase("size report (cross-compiling with arm-none-eabi-gcc)"):
            core = _core(args, deployment.target)
            report = size_report(args.output, core)
        _print_sizes(report, core)
    return 0


def _handoff(args: argparse.Namespace, deployment: Deployment) -> int:
    """``--executor vendor-npu``: the hand-off for ST Edge AI (:mod:`mcudeploy.codegen.vendor_npu`)
    instead of C kernels for the NPU nodes; each CPU partition as mcudeploy's C project."""
    given = [flag for flag, value in (("--test-vectors", args.test_vectors), ("--trustzone", args.trustzone),
                                      ("--size-report", args.size_report)) if value]
    if given:
        raise UsageError(f"{', '.join(given)} with --executor vendor-npu: the NPU code is the vendor's; give "
                         f"{given[0]} with --executor mcudeploy, or check the vendor's project with its tools")
    check_vendor_target(deployment)
    deployment.require_fit("no hand-off written")
    partitions = deployment.partitions()
    projects = {p.index: generate_files(partition_deployment(deployment, p)) for p in partitions if p.device == CPU}
    written = write_project(handoff_files(deployment, projects), args.output, force=args.force)
    note_generation(written)
    npu = [p for p in partitions if p.device == NPU]
    console = make_console()
    console.print(f"{args.output}: {len(written)} files: hand-off for ST Edge AI, {len(npu)} NPU partition(s) "
                  f"({sum(len(p.nodes) for p in npu)} nodes) as TFLite models, {len(projects)} CPU partition(s) as "
                  f"mcudeploy C projects; compile them with {args.output / SCRIPT}", markup=False)
    console.print(deployment.ledger.verdict(), markup=False)
    for line in [deployment.executor_line(), *latency_lines(deployment, note_estimate)]:
        if line:
            console.print(line, markup=False)
    return 0
