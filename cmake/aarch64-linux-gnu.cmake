# Cross-compiling for 64-bit Arm Linux (Arm servers, Jetson boards) with
# Debian's crossbuild-essential-arm64 and the arm64 -dev packages installed
# beside the host's (multiarch): scripts/cross-arm64. Test binaries run
# under qemu-user.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# The guest's loader and libc both from the arm64 architecture's own
# packages (libc6:arm64, /lib/ld-linux-aarch64.so.1): with -L
# /usr/aarch64-linux-gnu the loader came from the cross toolchain's
# libc6-arm64-cross (glibc 2.36-8cross1) and libc.so.6 from libc6:arm64
# (2.36-9+deb12u*), two builds whose private interface differs, and no
# second thread or forked child of the guest ever ran.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /)
# Libraries and headers of the target only; programs (protoc, pkg-config)
# of the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
