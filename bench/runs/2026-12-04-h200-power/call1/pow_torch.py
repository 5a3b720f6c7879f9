"""cuBLASLt's fused bias+ReLU (torch._addmm_activation) in a sustained loop: prints TF/s per
phase with its start and end wall-clock time, for comparison with nvidia-smi's power log."""
import sys, time, torch
torch.backends.cuda.matmul.allow_tf32 = False
for spec in sys.argv[1:]:
    m, k, n, secs = spec.split(",")
    m, k, n, secs = int(m), int(k), int(n), float(secs)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    for _ in range(20):
        torch._addmm_activation(bias, a, w)
    torch.cuda.synchronize()
    # reps sized by a 50-launch probe, so each phase lasts about `secs`
    t = time.time()
    for _ in range(50):
        torch._addmm_activation(bias, a, w)
    torch.cuda.synchronize()
    reps = max(50, int(secs / ((time.time() - t) / 50)))
    start = time.time()
    for _ in range(reps):
        torch._addmm_activation(bias, a, w)
    torch.cuda.synchronize()
    end = time.time()
    ms = (end - start) * 1e3 / reps
    print(f"TORCH {m},{k},{n} reps={reps} ms={ms:.4f} tflops={2*m*k*n/ms/1e9:.1f} start={start:.3f} end={end:.3f}", flush=True)
    time.sleep(3)
