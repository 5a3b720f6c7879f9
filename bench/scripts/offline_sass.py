#!/usr/bin/env python3
"""Builds the Hopper kernels' dumped CUDA sources to machine code without a GPU, the way they
are built on the device, and reports what decides their speed: registers, spills, warpgroup MMAs
the assembler serialised (ptxas's C75xx notes), and in the SASS the `HGMMA`s, the waits after
them (`WARPGROUP.DEPBAR`), local loads and stores (`LDL`, `STL`) and calls (`CALL`). A kernel is
sound when it builds, spills nothing, touches no local memory, has no serialised MMA, and issues
`HGMMA` wherever its source uses `wgmma`.

On the device, cubecl-cuda compiles a kernel's CUDA C++ with NVRTC (for `sm_90a`, with
`-lineinfo`), then has the driver assemble the PTX through its linker (`cuLinkCreate`), which
assembles it as relocatable code. This script does both steps the same way: NVRTC, then
`ptxas -c` (relocatable). A whole-program `ptxas` (without `-c`) is not what runs: it inlines
the 64-bit division subroutine, where relocatable code calls it, and any call in a kernel makes
the assembler serialise every warpgroup MMA of that kernel (C7509, "serialized due to the
presence of Extern calls").

    FMAR_HOPPER_SOURCE_DIR=/tmp/src cargo test -p fmar-kernel --lib sources
    python3 -m venv /tmp/cu130 && /tmp/cu130/bin/pip install "nvidia-cuda-nvrtc==13.0.*" \\
        "nvidia-cuda-nvcc==13.0.*" "nvidia-cuda-cccl==13.0.*" nvidia-cuda-cuobjdump
    python3 bench/scripts/offline_sass.py \\
        --cuda /tmp/cu130/lib/python3*/site-packages/nvidia/cu13 /tmp/src/*.cu

`--cuda` is a folder with `lib/libnvrtc.so.*`, `include/` and `bin/ptxas`: the CUDA wheels'
`nvidia/cu13`, or a toolkit. Take NVRTC and `ptxas` of the device driver's CUDA version (13.0
for the H200's driver 580). `cuobjdump` comes from the same `bin/` or from `PATH`. No GPU is
needed: `.ci/run` runs exactly this.
`--quiet` prints only the kernels that are not sound, and a count. `--known FILE` names kernels
known to be unsound (`offline_known_unsound.txt` beside this script, one file name a line):
they are reported, and do not fail the check.
Exits with 1 if any other kernel is not sound.
"""

import argparse
import concurrent.futures
import ctypes
import glob
import os
import re
import subprocess
import sys
import tempfile


def load_nvrtc(cuda):
    """NVRTC from `cuda`'s `lib/`."""
    lib = os.path.join(cuda, "lib")
    # NVRTC opens its builtins library by name at the first compile; loaded first from beside
    # it, it is found without LD_LIBRARY_PATH.
    for builtins in glob.glob(os.path.join(lib, "libnvrtc-builtins.so.*")):
        if ".alt." not in builtins:
            ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
    return ctypes.CDLL(sorted(glob.glob(os.path.join(lib, "libnvrtc.so*")))[0])


def nvrtc_ptx(nvrtc, include, source):
    """PTX of `source` (a `.cu` file), compiled as cubecl-cuda compiles it."""
    program = ctypes.c_void_p()
    with open(source, "rb") as f:
        code = f.read()
    if nvrtc.nvrtcCreateProgram(ctypes.byref(program), code, b"kernel.cu", 0, None, None):
        raise RuntimeError("nvrtcCreateProgram failed")
    options = [b"--gpu-architecture=sm_90a", f"--include-path={include}".encode(),
               f"--include-path={include}/cccl".encode(), b"-lineinfo"]
    result = nvrtc.nvrtcCompileProgram(program, len(options),
                                       (ctypes.c_char_p * len(options))(*options))
    size = ctypes.c_size_t()
    if result:
        nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(program, log)
        raise RuntimeError("NVRTC: " + log.value.decode(errors="replace")[-2000:])
    nvrtc.nvrtcGetPTXSize(program, ctypes.byref(size))
    ptx = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetPTX(program, ptx)
    nvrtc.nvrtcDestroyProgram(ctypes.byref(program))
    return ptx.value


def tool(cuda, name):
    """`name` from `cuda`'s `bin/`, else from `PATH`."""
    path = os.path.join(cuda, "bin", name)
    return path if os.path.exists(path) else name


def report(cuda, nvrtc, source):
    """One line on `source`, and whether it is sound (no serialisation, spill or failure)."""
    name = os.path.basename(source)
    with tempfile.TemporaryDirectory() as scratch:
        ptx_path = os.path.join(scratch, "kernel.ptx")
        cubin = os.path.join(scratch, "kernel.cubin")
        try:
            ptx = nvrtc_ptx(nvrtc, os.path.join(cuda, "include"), source)
        except RuntimeError as error:
            return f"{name}: {error}", False
        with open(ptx_path, "wb") as f:
            f.write(ptx)
        # Relocatable, as the driver's linker assembles it.
        assembled = subprocess.run(
            [os.path.join(cuda, "bin", "ptxas"), "-arch=sm_90a", "-c", "-v", ptx_path, "-o", cubin],
            capture_output=True, text=True)
        log = assembled.stdout + assembled.stderr
        if assembled.returncode:
            return f"{name}: ptxas failed: {log[-2000:]}", False
        registers = re.search(r"Used (\d+) registers", log)
        spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
        notes = sorted(set(re.findall(r"\((C75\d\d)\)[^']*?serialized due to ([^']*?) (?:in|for) the function", log)))
        sass = subprocess.run([tool(cuda, "cuobjdump"), "-sass", cubin],
                              capture_output=True, text=True,
                              env={**os.environ, "PATH": os.path.join(cuda, "bin") + os.pathsep
                                   + os.environ.get("PATH", "")})
        if sass.returncode:
            return f"{name}: cuobjdump failed: {sass.stderr[-500:]}", False
        hgmma, depbar, ldl, stl, call = (
            len(re.findall(pattern, sass.stdout)) for pattern in
            (r"HGMMA", r"WARPGROUP\.DEPBAR", r"\bLDL", r"\bSTL", r"\bCALL"))
        spilled = spills is None or int(spills.group(1)) or int(spills.group(2))
        with open(source) as f:
            uses_wgmma = "wgmma.mma_async" in f.read()
        line = (f"{name}: {registers.group(1) if registers else '?'} registers, "
                f"spills {spills.group(1) + '/' + spills.group(2) if spills else '?'} bytes, "
                f"HGMMA {hgmma}, WARPGROUP.DEPBAR {depbar}, LDL {ldl}, STL {stl}, CALL {call}")
        for code, reason in notes:
            line += f"; {code} serialized due to {reason}"
        if uses_wgmma and not hgmma:
            line += "; wgmma in the source but no HGMMA in the SASS"
        sound = not notes and not spilled and not ldl and not stl and (hgmma or not uses_wgmma)
        return line, sound


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cuda", required=True, help="folder with lib/, include/ and bin/")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--quiet", action="store_true", help="print only unsound kernels")
    parser.add_argument("--known", help="a file naming kernels known to be unsound")
    parser.add_argument("sources", nargs="+", help="dumped .cu files")
    args = parser.parse_args()
    nvrtc = load_nvrtc(args.cuda)
    known = set()
    if args.known:
        with open(args.known) as f:
            known = {line.strip() for line in f if line.strip() and not line.startswith("#")}
    unsound = unknown = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for source, (line, ok) in zip(args.sources, pool.map(
                lambda s: report(args.cuda, nvrtc, s), args.sources)):
            is_known = os.path.basename(source) in known
            if not ok or not args.quiet or is_known:
                mark = "   " if ok else (" ~ " if is_known else "!! ")
                note = " (known unsound, now sound)" if ok and is_known else (
                    " (known)" if is_known else "")
                print(mark + line + note, flush=True)
            unsound += not ok
            unknown += not ok and not is_known
    print(f"{len(args.sources) - unsound} of {len(args.sources)} kernels sound, "
          f"{unsound - unknown} unsound and known, {unknown} unsound and not known", flush=True)
    sys.exit(1 if unknown else 0)


if __name__ == "__main__":
    main()
