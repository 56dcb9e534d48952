# CMake toolchain file for bare-metal Arm (arm-none-eabi-gcc from tools/install_toolchain.sh).
# Use: cmake -S runtime -B build-m4 -DCMAKE_TOOLCHAIN_FILE=runtime/cmake/arm-none-eabi.cmake -DMCU_CPU=cortex-m4
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_AR arm-none-eabi-ar)
# no startup code / syscalls here: test the compiler by building a static library, not a program
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
