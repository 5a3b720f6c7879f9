"""Mean SM clock and board power of each sustained phase of script.sh, from nvidia-smi's 100 ms
samples (logs.tgz: smi.csv, phases.txt, hb.log, torch.log), with the work per cycle per
multiprocessor and the energy per FLOP. Each window leaves out its first second (the clock
settling) and its last 0.3 s; fmar's window is the timed launches' span, ending when the
process did. Run in a folder where logs.tgz is unpacked."""
import csv
import datetime
import statistics

SMS = 132
REPS = {"4096": 65000, "16384": 60000, "8192": 8500}  # script.sh's --reps per shape
SHAPE_KEY = {"4096,4096,4096": "4096", "16384,1024,4096": "16384", "8192,8192,8192": "8192"}


def samples():
    out = []
    for row in list(csv.reader(open("smi.csv")))[1:]:
        stamp = datetime.datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f")
        t = stamp.replace(tzinfo=datetime.timezone.utc).timestamp()
        out.append((t, float(row[1]), float(row[3]), row[5].strip()))
    return out


def windows():
    results = iter(line.split() for line in open("hb.log") if line.startswith("RESULT"))
    for name, t in (line.split() for line in open("phases.txt")):
        if name.startswith("hb_") and name.endswith("_end"):
            shape = name.split("_")[1]
            fields = next(results)  # RESULT dtype shape lhs rhs variant ms TFLOP/s ...
            ms, tflops = float(fields[6]), float(fields[7])
            end = float(t)
            yield ("fmar", shape, end - ms * REPS[shape] / 1e3 + 1.0, end - 0.3, tflops)
    for line in open("torch.log"):
        if line.startswith("TORCH"):
            fields = dict(kv.split("=") for kv in line.split()[2:])
            shape = SHAPE_KEY[line.split()[1]]
            start, end = float(fields["start"]), float(fields["end"])
            yield ("cuBLASLt", shape, start + 1.0, end - 0.3, float(fields["tflops"]))


rows = samples()
print("| shape | kernel | TFLOP/s | SM MHz | board W | pJ per FLOP | FLOP per cycle per SM | throttle reasons |")
print("|---|---|---|---|---|---|---|---|")
for who, shape, a, b, tflops in sorted(windows(), key=lambda w: (w[1], w[0], w[2])):
    inside = [r for r in rows if a <= r[0] <= b]
    mhz = statistics.mean(r[1] for r in inside)
    watts = statistics.mean(r[2] for r in inside)
    per_cycle = tflops * 1e12 / (mhz * 1e6) / SMS
    reasons = ",".join(sorted({r[3] for r in inside}))
    print(f"| {shape} | {who} | {tflops:.1f} | {mhz:.0f} | {watts:.0f} | {watts / tflops:.3f} | {per_cycle:.0f} | {reasons} |")
