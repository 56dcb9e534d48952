"""The subcommands: name -> (module in :mod:`mcudeploy.cli`, one-line help).

The top-level parser lists these without importing them; a command's module (and the
pipeline stages it uses) is imported only when that command runs or shows its ``--help``,
so ``mcudeploy --help`` and each command start fast. A module registers its arguments and
run function with :func:`~.registry.command` under the same name.

``mcudeploy --help`` lists them in :data:`HELP_ORDER` (the order a newcomer uses them: the
project file and the one-command deployment first, then each stage in pipeline order, then
the tools around the runs), followed by :data:`START_HERE`.
"""
COMMANDS = {
    "analyze": ("cmd_analyze", "Summarise a model: I/O, MACC, parameters, weights, activations, per-layer table"),
    "data": ("cmd_data", "Check a calibration / validation data file against a model: keys, layout, dtype, "
                         "value range, clipping, assumed preprocessing"),
    "deploy": ("cmd_deploy", "Run the staged deployment of a project file (analyze, lint, feasibility, quantize, "
                             "validate, search, generate, verify, report), one recorded run per stage"),
    "doctor": ("cmd_doctor", "Explain a failure (cause, fix, the check) from a log file, a recorded run or an "
                             "error text"),
    "estimate": ("cmd_estimate", "Estimate latency, memory traffic and bandwidth per layer on a target, or "
                                 "calibrate the estimator to measured latencies"),
    "generate": ("cmd_generate", "Generate the C code of a full-integer model (network.c/.h, data, runtime, "
                                 "build files)"),
    "init": ("cmd_init", "Write a commented project file (mcudeploy.toml) for 'mcudeploy deploy'"),
    "lint": ("cmd_lint", "Find what will hurt a model on a target (NPU fallbacks, alignment, memory, ...)"),
    "plan": ("cmd_plan", "Plan static memory of a model on a target (ledger, arena, regions), or solve "
                         "one allocation problem"),
    "quantize": ("cmd_quantize", "Post-training int8 / 16x8 quantization with calibration data"),
    "report": ("cmd_report", "Write the self-contained HTML report of a recorded run"),
    "run": ("cmd_run", "Run a model on given inputs with a reference engine or the generated C code"),
    "runs": ("cmd_runs", "List, show, compare and export the recorded runs"),
    "search": ("cmd_search", "Search compile options (schedule, reuse, regions, split arena, kernels, ...) with a "
                             "trial log; verified what-if fixes when nothing fits"),
    "sweep": ("cmd_sweep", "Run a design-space sweep (models x targets x configurations) on this machine or a "
                           "Dask cluster; one recorded run per cell, resumable"),
    "targets": ("cmd_targets", "List the built-in hardware targets, or show one target's core, NPU and memory"),
    "validate": ("cmd_validate", "Compare a quantized model with its float original (PASS / FAIL), and its "
                                 "generated C code with the integer reference"),
}

# The order of the top-level --help: start here, the stages in pipeline order, then the tools.
HELP_ORDER = ("init", "deploy", "analyze", "data", "lint", "quantize", "validate", "plan", "estimate",
              "search", "generate", "run", "targets", "runs", "report", "doctor", "sweep")

START_HERE = """\
start here:
  mcudeploy init model.onnx --target stm32h743 --calib calib.npz --data val.npz
                                   write mcudeploy.toml (every option commented)
  mcudeploy deploy                 every stage: quantize, validate, plan, generate, verify, report

or one stage at a time:
  mcudeploy analyze model.onnx                                 shapes, MACC, memory per layer
  mcudeploy quantize model.onnx --calib calib.npz -o model_int8.onnx
  mcudeploy plan model_int8.onnx --target stm32h743            does it fit, and where
  mcudeploy generate model_int8.onnx --target stm32h743 -o firmware/network
  mcudeploy validate model.onnx --quantized model_int8.onnx --data val.npz --on qemu-m4 --target stm32h743

when something fails:
  mcudeploy doctor build.log       explain a vendor tool's or a board's error
  mcudeploy runs diff -2 last      what changed between the last two runs

'mcudeploy COMMAND --help' shows a command's options; 'mcudeploy targets' lists the boards."""
