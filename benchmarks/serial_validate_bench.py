"""validate --on serial against QEMU: for shared int8 models, the serial firmware (make serial)
under QEMU with UART0 on a TCP socket, driven over pyserial's socket:// URL, against the integer
reference; the cycles the board returns (SysTick) against the semihosting harness's
instructions on the same inputs, both measured in this run. Writes
benchmarks/results/serial_validate.md.

    python benchmarks/serial_validate_bench.py [--samples 3]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import platform
import socket
import subprocess
import sys
import time

from paths import RESULTS, SHARED_MODELS

sys.path.insert(0, str(RESULTS.parents[1] / "src"))
from mcudeploy.codegen.boards import BOARDS  # noqa: E402
from mcudeploy.driver import deploy  # noqa: E402
from mcudeploy.options import DeploymentOptions  # noqa: E402
from mcudeploy.validate.c_runner import generate_for_run, run_command, work_folder  # noqa: E402
from mcudeploy.validate.generated_code import check_generated_code, random_integer_feeds  # noqa: E402

CASES = [("mlperf_tiny/dscnn_kws_int8.tflite", "mps2-an386", "qemu-m4"),
         ("mlperf_tiny/resnet8_int8.tflite", "mps2-an386", "qemu-m4"),
         ("mlperf_tiny/mobilenetv1_vww_int8.tflite", "mps3-an547", "qemu-m55")]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def qemu(elf, board: str):
    port = _free_port()
    process = subprocess.Popen(["qemu-system-arm", "-M", board, "-semihosting", "-nographic", "-icount", "shift=0",
                                "-monitor", "none", "-serial", f"tcp:127.0.0.1:{port},server=on,wait=off",
                                "-kernel", str(elf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            time.sleep(0.05)
        yield port
    finally:
        process.kill()
        process.wait(timeout=10)


def measure(model: str, board: str, engine: str, samples: int) -> dict:
    deployment = deploy(SHARED_MODELS / model, DeploymentOptions(target=board))
    feeds = random_integer_feeds(deployment.graph, samples, 11)
    with work_folder() as folder:
        project = generate_for_run(deployment, folder / "project")
        run_command(["make", "-s", "serial", f"BOARD={board}"], project, "make serial")
        with qemu(project / "build" / board / "serial.elf", board) as port:
            started = time.monotonic()
            serial = check_generated_code(deployment, feeds, f"serial:socket://127.0.0.1:{port}")
            seconds = time.monotonic() - started
    semihosting = check_generated_code(deployment, feeds, engine)
    return {"model": model, "board": board, "serial": serial, "semihosting": semihosting, "seconds": seconds,
            "ns_per_tick": BOARDS[board].ns_per_tick}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()
    rows = [measure(model, board, engine, args.samples) for model, board, engine in CASES]
    import serial as pyserial
    qemu_version = subprocess.run(["qemu-system-arm", "--version"], capture_output=True,
                                  text=True).stdout.splitlines()[0]
    lines = ["# validate --on serial against QEMU", "",
             f"`python benchmarks/serial_validate_bench.py --samples {args.samples}` on {platform.machine()} "
             f"({os.cpu_count()} CPUs, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the start); pyserial "
             f"{pyserial.__version__}; {qemu_version}.", "",
             "Serial: the firmware of `make serial` under QEMU, UART0 on `-serial tcp:...,server`, the host over "
             "`socket://`; every output byte against the integer reference. Cycles: SysTick ticks of the core "
             "clock returned by the board, x ns_per_tick = instructions under `-icount shift=0`; semihosting: the "
             "`--on qemu-*` harness on the same inputs, measured in the same run.", "",
             "| model | board | serial | semihosting | serial cycles (mean) | x ns_per_tick | semihosting "
             "instructions (mean) | serial session |", "|---|---|:---:|:---:|---:|---:|---:|---:|"]
    for row in rows:
        serial, semi = row["serial"], row["semihosting"]
        cycles = sum(serial.cycles) / len(serial.cycles)
        lines.append(f"| {row['model']} | {row['board']} | {'bit-exact' if serial.bit_exact else '**MISMATCH**'} | "
                     f"{'bit-exact' if semi.bit_exact else '**MISMATCH**'} | {cycles:,.0f} | "
                     f"{cycles * row['ns_per_tick']:,.0f} | {sum(semi.instructions) / len(semi.instructions):,.0f} | "
                     f"{row['seconds']:.1f} s |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "serial_validate.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
