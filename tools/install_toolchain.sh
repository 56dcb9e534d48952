#!/usr/bin/env bash
# Install the cross toolchain the C runtime tests use: arm-none-eabi-gcc (Cortex-M4/M7/M55
# builds), newlib headers for it, qemu-system-arm (for running firmware on an emulator), and
# Chromium with its driver (the HTML report tests open the report in a headless browser).
# Idempotent: does nothing when every tool is already on PATH. Needs root (or sudo) and apt.
set -euo pipefail

missing=()
command -v arm-none-eabi-gcc >/dev/null 2>&1 || missing+=(gcc-arm-none-eabi)
[ -d /usr/lib/arm-none-eabi/include ] || [ -d /usr/arm-none-eabi/include ] \
    || missing+=(libnewlib-arm-none-eabi)
command -v qemu-system-arm >/dev/null 2>&1 || missing+=(qemu-system-arm)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)

if [ ${#missing[@]} -eq 0 ]; then
    echo "install_toolchain: arm-none-eabi-gcc, newlib, qemu-system-arm and chromium already installed"
    exit 0
fi

run_as_root=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "install_toolchain: need root or sudo to install ${missing[*]}" >&2; exit 1; }
    run_as_root=(sudo)
fi

echo "install_toolchain: installing ${missing[*]}"
"${run_as_root[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${run_as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
arm-none-eabi-gcc --version | head -n 1
