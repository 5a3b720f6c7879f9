"""cuBLASLt's fused bias+ReLU (torch._addmm_activation, bias [n], bf16) timed as fmar-bench times
fmar through Burn: batches of up to 200 back-to-back calls with every output kept until the batch
ends (fresh output buffers), after `warm` seconds of the same untimed; the median over 15 timed
batches. Prints the start and end wall-clock time of the timed batches."""
import statistics, sys, time, torch
for spec in sys.argv[1:]:
    m, k, n, warm = spec.split(",")
    m, k, n, warm = int(m), int(k), int(n), float(warm)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16) / k ** 0.5
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    batch = 200
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    until = time.time() + warm
    while time.time() < until:
        kept = [torch._addmm_activation(bias, a, w) for _ in range(batch)]
        torch.cuda.synchronize(); del kept
    times = []
    start = time.time()
    for _ in range(15):
        s.record(); kept = [torch._addmm_activation(bias, a, w) for _ in range(batch)]; e.record()
        torch.cuda.synchronize(); del kept
        times.append(s.elapsed_time(e) / batch)
    end = time.time()
    ms = statistics.median(times)
    print(f"LTKEEP {m},{k},{n} ms={ms:.4f} tflops={2*m*k*n/ms/1e9:.1f} start={start:.3f} end={end:.3f}", flush=True)
    del a, w, bias; torch.cuda.empty_cache(); time.sleep(3)
