#!/usr/bin/python3
"""Sums a Chrome trace from `poslab bench --profile FILE` by op: self time (the op's own time, nested ops
subtracted), its share, total time (nested ops included: poslab's own scopes such as poslab::optimizer_step),
calls. Only the main thread's ops (and autograd's device threads' with Kineto) are recorded: with run.batch_split > 1
the other slices run unprofiled. A trace from a GPU (Kineto, LibTorch 2.x) also holds every kernel the GPU ran: a
second table sums them by kernel, with their time on the device and its share of all kernels' time.
Usage: scripts/profile_table.py FILE [ROWS]"""
import collections
import json
import sys

GPU_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}  # Kineto's events on the device's streams
# the profiler's own span; annotations mirrored on the GPU's timeline; the CUDA API's calls on the host (a launch
# counts in the op that launched it, and the wait for the GPU at the end of the timed steps in no op); Kineto's own
# overhead (its buffer requests)
NOT_OPS = {"Trace", "gpu_user_annotation", "cuda_runtime", "cuda_driver", "overhead"}

if len(sys.argv) < 2:
    sys.exit("usage: scripts/profile_table.py TRACE.json [ROWS]")
try:
    trace = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(f"error: {sys.argv[1]}: {e}\nhint: pass the file written by poslab bench --profile")
events = trace["traceEvents"] if isinstance(trace, dict) else trace
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 25
spans = collections.defaultdict(list)  # thread -> [(start, end, name)]
gpu_us, gpu_calls = collections.Counter(), collections.Counter()
for e in events:
    if e.get("ph") != "X" or "dur" not in e or e.get("cat") in NOT_OPS:
        continue
    if e.get("cat") in GPU_CATEGORIES:
        gpu_us[e["name"]] += float(e["dur"])
        gpu_calls[e["name"]] += 1
    else:
        spans[(e.get("pid"), e.get("tid"))].append((float(e["ts"]), float(e["ts"]) + float(e["dur"]), e["name"]))
self_us, total_us, calls = collections.Counter(), collections.Counter(), collections.Counter()
for tid, items in spans.items():
    items.sort(key=lambda s: (s[0], -s[1]))
    stack = []  # [start, end, name, child time]
    def close(until):
        while stack and stack[-1][1] <= until:
            s, e, n, child = stack.pop()
            self_us[n] += (e - s) - child
            total_us[n] += e - s
            if stack:
                stack[-1][3] += e - s
    for s, e, n in items:
        close(s)
        calls[n] += 1
        stack.append([s, e, n, 0.0])
    close(float("inf"))
total = sum(self_us.values())
print(f"{'op':<60} {'self ms':>9} {'share':>6} {'total ms':>9} {'calls':>6}")
for name, us in self_us.most_common(rows):
    print(f"{name[:60]:<60} {us / 1000:>9.1f} {100 * us / total:>5.1f}% {total_us[name] / 1000:>9.1f} {calls[name]:>6}")
print(f"{'total':<60} {total / 1000:>9.1f}")
if gpu_us:
    busy = sum(gpu_us.values())  # kernels on several streams at once each count
    print()
    # a kernel's name is its C++ signature: what tells two apart (the functor of an elementwise kernel, a GEMM's
    # tile shape) comes after the common prefixes, which are cut
    def short(name):
        for cut in ("void ", "at::native::", "at::", "(anonymous namespace)::"):
            name = name.replace(cut, "")
        return name[:100]
    print(f"{'GPU kernel':<100} {'ms':>9} {'share':>6} {'calls':>6}")
    for name, us in gpu_us.most_common(rows):
        print(f"{short(name):<100} {us / 1000:>9.2f} {100 * us / busy:>5.1f}% {gpu_calls[name]:>6}")
    print(f"{'total kernel time':<100} {busy / 1000:>9.2f}")
