#!/usr/bin/env python3
"""Assembles PTX through the CUDA driver, as cubecl-cuda does at a kernel's first launch
(`cuLinkCreate` / `cuLinkAddData` / `cuLinkComplete`), and prints what the driver's assembler
says of it: registers, spills, and why it serialised warpgroup MMAs where it did
(`C75xx ... wgmma.mma_async instructions are serialized due to ...`). cubecl-cuda passes the
driver no info log, so this is the way to read it.

The driver's linker assembles relocatable code, as `ptxas -c` does, not a whole program, and
the two can build the same PTX differently (docs/hopper-kernel.md, "Reading the kernel without
the device"): the SASS that runs is the driver's. `offline_sass.py` comes near it without a GPU.
Writes the machine code the driver built next to each input (`.cubin`), for `cuobjdump -sass`.

    CUBECL_CUDA_DUMP_PTX=/tmp/ptx <a program that launches the kernel>
    python3 bench/scripts/jit_log.py /tmp/ptx/*.ptx            # as cubecl assembles it
    python3 bench/scripts/jit_log.py --line-info /tmp/ptx/*.ptx  # with the PTX's line table

Needs a CUDA device and its driver (libcuda); no toolkit.
"""

import argparse
import ctypes
import sys

# cuda.h
CU_JIT_INFO_LOG_BUFFER = 3
CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
CU_JIT_LOG_VERBOSE = 12
CU_JIT_GENERATE_LINE_INFO = 13
CU_JIT_INPUT_PTX = 1
LOG_BYTES = 1 << 20


def check(driver, result, what):
    if result != 0:
        name = ctypes.c_char_p()
        driver.cuGetErrorName(result, ctypes.byref(name))
        raise RuntimeError(f"{what} failed: {name.value.decode() if name.value else result}")


def assemble(driver, ptx, line_info):
    """`(info log, error log, cubin bytes or None)` of `ptx` (bytes)."""
    info = ctypes.create_string_buffer(LOG_BYTES)
    error = ctypes.create_string_buffer(LOG_BYTES)
    options = [CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
               CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE]
    # A size or flag option's value is the number itself, passed where a pointer would be.
    values = [ctypes.cast(info, ctypes.c_void_p), ctypes.c_void_p(LOG_BYTES),
              ctypes.cast(error, ctypes.c_void_p), ctypes.c_void_p(LOG_BYTES), ctypes.c_void_p(1)]
    if line_info:
        options.append(CU_JIT_GENERATE_LINE_INFO)
        values.append(ctypes.c_void_p(1))
    option_array = (ctypes.c_int * len(options))(*options)
    value_array = (ctypes.c_void_p * len(values))(*[v.value for v in values])
    state = ctypes.c_void_p()
    check(driver, driver.cuLinkCreate_v2(len(options), option_array, value_array,
                                         ctypes.byref(state)), "cuLinkCreate")
    try:
        data = ctypes.create_string_buffer(ptx + b"\0")
        result = driver.cuLinkAddData_v2(state, CU_JIT_INPUT_PTX, data, len(ptx) + 1,
                                         b"kernel", 0, None, None)
        cubin = None
        if result == 0:
            image = ctypes.c_void_p()
            size = ctypes.c_size_t()
            result = driver.cuLinkComplete(state, ctypes.byref(image), ctypes.byref(size))
            if result == 0:
                cubin = ctypes.string_at(image, size.value)
        return info.value.decode(errors="replace"), error.value.decode(errors="replace"), cubin
    finally:
        driver.cuLinkDestroy(state)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ptx", nargs="+", help="PTX files (as CUBECL_CUDA_DUMP_PTX writes them)")
    parser.add_argument("--line-info", action="store_true",
                        help="ask for the line table, as cubecl does for a kernel with debug info")
    args = parser.parse_args()
    driver = ctypes.CDLL("libcuda.so.1")
    c = ctypes
    signatures = {
        "cuInit": [c.c_uint],
        "cuDeviceGet": [c.POINTER(c.c_int), c.c_int],
        "cuDevicePrimaryCtxRetain": [c.POINTER(c.c_void_p), c.c_int],
        "cuCtxSetCurrent": [c.c_void_p],
        "cuGetErrorName": [c.c_int, c.POINTER(c.c_char_p)],
        "cuLinkCreate_v2": [c.c_uint, c.POINTER(c.c_int), c.POINTER(c.c_void_p), c.POINTER(c.c_void_p)],
        "cuLinkAddData_v2": [c.c_void_p, c.c_int, c.c_void_p, c.c_size_t, c.c_char_p, c.c_uint,
                             c.c_void_p, c.c_void_p],
        "cuLinkComplete": [c.c_void_p, c.POINTER(c.c_void_p), c.POINTER(c.c_size_t)],
        "cuLinkDestroy": [c.c_void_p],
    }
    for name, argtypes in signatures.items():
        function = getattr(driver, name)
        function.argtypes = argtypes
        function.restype = c.c_int
    check(driver, driver.cuInit(0), "cuInit")
    device = ctypes.c_int()
    check(driver, driver.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    context = ctypes.c_void_p()
    check(driver, driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), device.value),
          "cuDevicePrimaryCtxRetain")
    check(driver, driver.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    failed = False
    for path in args.ptx:
        with open(path, "rb") as f:
            ptx = f.read()
        info, error, cubin = assemble(driver, ptx, args.line_info)
        print(f"== {path}")
        if info.strip():
            print(info.strip())
        if error.strip():
            print(error.strip())
        if cubin is None:
            print("(the driver did not assemble it)")
            failed = True
        else:
            out = path.rsplit(".", 1)[0] + ".cubin"
            with open(out, "wb") as f:
                f.write(cubin)
            print(f"(machine code: {out}, {len(cubin)} bytes)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
