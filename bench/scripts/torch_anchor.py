"""Anchor figures on the GPU: PyTorch (cuBLAS / cuBLASLt / Triton) for out = relu(lhs @ rhs + bias).
Times forward and forward+backward with triton.testing.do_bench (median, ms) on fresh random data.

    OUT=results ANCHOR_COMPILE=0 python3 bench/scripts/torch_anchor.py
    ANCHOR_DTYPES=f16,bf16 ANCHOR_SHAPES="1,4096,4096,4096;8,1024,1024,1024" python3 ...  # a subset
    ANCHOR_LOOP=1 ...  # also cuBLASLt's fused call timed back to back, as fmar's benchmark times

Writes OUT/torch_anchor.json: one object per dtype (f32, tf32, f16, bf16) and shape (b, m, k, n)
with, in ms, `unfused_ms` (bmm + add + relu), `baddbmm_relu_ms` (the bias folded into the GEMM,
relu apart), `lt_relu_bias_ms` (cuBLASLt's fused bias + ReLU epilogue, `[n]` bias, batch 1 only),
`matmul_only_ms` and `fwd_bwd_ms` (forward + backward of relu(baddbmm)), and their TFLOP/s.
gpu-speed.sh runs it after the benchmark; render_benchmarks.py reads it (`--anchor`).
"""
import json, os, sys, torch
import torch.nn.functional as F
from triton.testing import do_bench

torch.manual_seed(0)
dev = "cuda"
SHAPES = [  # (batch, m, k, n)
    (1, 4096, 4096, 4096),
    (8, 1024, 1024, 1024),
    (64, 128, 128, 128),
    (1, 16384, 1024, 4096),
    (32, 512, 64, 512),
    # small m: a Linear layer at inference batch sizes
    (1, 1, 4096, 4096),
    (1, 16, 4096, 4096),
    (1, 128, 4096, 4096),
]
DTYPES = {"f32": torch.float32, "tf32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
# A subset, for a short run: ANCHOR_DTYPES (names above, comma-separated) and ANCHOR_SHAPES
# (`b,m,k,n` separated by `;`), each in the order given.
if os.environ.get("ANCHOR_DTYPES"):
    DTYPES = {name: DTYPES[name] for name in os.environ["ANCHOR_DTYPES"].split(",")}
if os.environ.get("ANCHOR_SHAPES"):
    SHAPES = [tuple(int(x) for x in shape.split(",")) for shape in os.environ["ANCHOR_SHAPES"].split(";")]
# ANCHOR_LOOP=1 adds `lt_relu_bias_loop_ms` (batch 1): cuBLASLt's fused call timed as fmar's
# benchmark times its own, back to back in batches between two events with every output kept
# alive until the batch ends (fresh output buffers, no cache flush, the device never idle),
# after ~100 ms of untimed calls; the median over batches of ~8 ms.
LOOP = os.environ.get("ANCHOR_LOOP") == "1"


def loop_ms(fn, batch_ms=8.0, batches=15):
    fn(); torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(); fn(); end.record(); torch.cuda.synchronize()
    per_batch = max(1, min(200, int(batch_ms / max(start.elapsed_time(end), 1e-3))))
    times = []
    for i in range(batches + 12):  # the first 12 batches (~100 ms) warm the device, untimed
        start.record()
        kept = [fn() for _ in range(per_batch)]
        end.record(); torch.cuda.synchronize()
        del kept
        if i >= 12:
            times.append(start.elapsed_time(end) / per_batch)
    return sorted(times)[len(times) // 2]


rows = []
for dname, dt in DTYPES.items():
    torch.backends.cuda.matmul.allow_tf32 = dname == "tf32"
    torch.backends.cudnn.allow_tf32 = dname == "tf32"
    for (b, m, k, n) in SHAPES:
        a = torch.randn(b, m, k, device=dev, dtype=dt)
        w = torch.randn(b, k, n, device=dev, dtype=dt) / k ** 0.5
        full_bias = torch.randn(b, m, n, device=dev, dtype=dt)
        vec_bias = torch.randn(n, device=dev, dtype=dt)
        flops = 2 * b * m * k * n
        r = {"dtype": dname, "shape": [b, m, k, n]}
        # unfused: bmm + add + relu (3 kernels)
        r["unfused_ms"] = do_bench(lambda: torch.relu(torch.bmm(a, w) + full_bias), return_mode="median")
        # baddbmm: bias folded into GEMM beta, relu separate
        r["baddbmm_relu_ms"] = do_bench(lambda: torch.relu(torch.baddbmm(full_bias, a, w)), return_mode="median")
        # cuBLASLt epilogue RELU_BIAS (2-D, vector bias) when batch == 1
        if b == 1:
            a2, w2 = a[0], w[0]
            r["lt_relu_bias_ms"] = do_bench(lambda: torch._addmm_activation(vec_bias, a2, w2), return_mode="median")
            if LOOP:
                r["lt_relu_bias_loop_ms"] = loop_ms(lambda: torch._addmm_activation(vec_bias, a2, w2))
        # matmul alone: the floor for any fused kernel
        r["matmul_only_ms"] = do_bench(lambda: torch.bmm(a, w), return_mode="median")
        # forward + backward of the unfused composition
        a_g = a.clone().requires_grad_(True); w_g = w.clone().requires_grad_(True); bias_g = full_bias.clone().requires_grad_(True)
        g = torch.randn(b, m, n, device=dev, dtype=dt)
        def fb():
            out = torch.relu(torch.baddbmm(bias_g, a_g, w_g))
            out.backward(g)
        r["fwd_bwd_ms"] = do_bench(fb, return_mode="median")
        r["tflops_best_fwd"] = flops / (min(v for kk, v in r.items() if kk.endswith("_ms") and kk not in ("fwd_bwd_ms", "matmul_only_ms", "lt_relu_bias_loop_ms")) * 1e-3) / 1e12
        r["tflops_matmul_only"] = flops / (r["matmul_only_ms"] * 1e-3) / 1e12
        rows.append(r)
        print(json.dumps(r), flush=True)
        del a, w, full_bias, vec_bias, a_g, w_g, bias_g, g
        torch.cuda.empty_cache()
# torch.compile (Triton inductor) on the square case, if it works offline (ANCHOR_COMPILE=0 skips it)
try:
    if os.environ.get("ANCHOR_COMPILE", "1") == "0":
        raise RuntimeError("skipped (ANCHOR_COMPILE=0)")
    torch.backends.cuda.matmul.allow_tf32 = False
    for dname in ["f16", "bf16", "f32"]:
        dt = DTYPES[dname]
        b, m, k, n = 1, 4096, 4096, 4096
        a = torch.randn(b, m, k, device=dev, dtype=dt); w = torch.randn(b, k, n, device=dev, dtype=dt); bias = torch.randn(b, m, n, device=dev, dtype=dt)
        f = torch.compile(lambda x, y, z: torch.relu(torch.bmm(x, y) + z), mode="max-autotune-no-cudagraphs")
        f(a, w, bias); torch.cuda.synchronize()
        ms = do_bench(lambda: f(a, w, bias), return_mode="median")
        r = {"dtype": dname, "shape": [b, m, k, n], "torch_compile_ms": ms, "tflops": 2*b*m*k*n/(ms*1e-3)/1e12}
        rows.append(r); print(json.dumps(r), flush=True)
except Exception as e:
    print("torch.compile failed:", repr(e)[:500])
out = os.environ.get("OUT", ".")
json.dump(rows, open(os.path.join(out, "torch_anchor.json"), "w"), indent=1)
# copy bandwidth ceiling
x = torch.empty(2 * 1024**3 // 4, device=dev); y = torch.empty_like(x)
ms = do_bench(lambda: y.copy_(x), return_mode="median")
print("d2d copy GB/s (read+write):", 2 * x.numel() * 4 / (ms * 1e-3) / 1e9)
