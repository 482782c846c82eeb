#!/usr/bin/env python3
"""Writes the nccl-tests fixtures of tests/unit/test_cluster_fit.cpp.

The logs follow the layout nccl-tests prints (src/common.cu of NVIDIA/nccl-tests: the
'# nThread' header, the '# Using devices' block, the two-level column header, rows of
size/count/type/redop/root then out-of-place and in-place time/algbw/busbw/#wrong, the
'# Avg bus bandwidth' footer), with the column arithmetic of its doc/PERFORMANCE.md:
algbw = S/t, busbw = algbw x 2(n-1)/n (allreduce) or (n-1)/n (reduce-scatter, all-gather).
No GPU was available to this project, so the times are generated: the ring model
(intra) or the hierarchical model (two nodes) of known latency and bandwidth, times a
deterministic +-2.5% ripple, so that a fit cannot be exact and the test's tolerance means
something. The truth used is written on each file's first line, a '#' comment that the
parser skips like every '#' line it does not know.
Run from this directory: python3 make_fixtures.py
"""
import math

def ripple(i):
    return 1.0 + 0.025 * math.sin(1.7 * i + 0.3)

def tfmt(us):
    if us >= 10000: return f"{us:7.0f}"
    if us >= 100: return f"{us:7.1f}"
    return f"{us:7.2f}"

def write(path, op, hosts, per_node, time_of, mpi_prefix=False, header_op=True, info_lines=False, truth=""):
    n = len(hosts) * per_node
    ar = op == "all_reduce"
    factor = 2 * (n - 1) / n if ar else (n - 1) / n
    out = []
    out.append(f"# fixture truth: {truth}")
    out.append("# nccl-tests version 2.14.1 nccl-headers=22105 nccl-library=22105")
    if header_op:
        out.append(f"# Collective test starting: {op}_perf")
    out.append("# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0")
    out.append("#")
    out.append("# Using devices")
    r = 0
    for h in hosts:
        for d in range(per_node):
            out.append(f"#  Rank {r:2d} Group  0 Pid {41000 + r:6d} on {h:>10s} device {d:2d} [0x{0x18 + 16 * d:02x}] NVIDIA H100 80GB HBM3")
            r += 1
    out.append("#")
    out.append("#                                                              out-of-place                       in-place          ")
    out.append("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong")
    out.append("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ")
    sizes = [8 * 4 ** k for k in range(15)]  # 8 B .. 2 GiB
    bus_sum = 0.0
    for i, s in enumerate(sizes):
        if not ar and s < 4 * n:
            continue
        count = s // 4 if ar else s // 4 // n
        s = count * 4 * (1 if ar else n)
        t = time_of(s) * ripple(i)          # seconds
        t2 = t * ripple(i + 7)
        us, us2 = t * 1e6, t2 * 1e6
        alg, alg2 = s / t / 1e9, s / t2 / 1e9
        bus, bus2 = alg * factor, alg2 * factor
        bus_sum += bus
        redop = "sum" if op != "all_gather" else "none"
        out.append(f"{s:12d}  {count:12d}  {'float':>8s}  {redop:>6s}  {-1:6d}  {tfmt(us)}  {alg:6.2f}  {bus:6.2f}  {0:6d}  {tfmt(us2)}  {alg2:6.2f}  {bus2:6.2f}  {0:6d}")
        if info_lines and i == 3:
            out.append(f"{hosts[0]}:41000:41050 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM")
    out.append("# Out of bounds values : 0 OK")
    out.append(f"# Avg bus bandwidth    : {bus_sum / len(sizes):.4f} ")
    out.append("#")
    if mpi_prefix:
        out = [f"[1,0]<stdout>:{l}" for l in out]
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")

# Truth. intra: NVLink/NVSwitch ring of 8 H100s; inter: one 400 Gb/s NIC per GPU.
A_I, B_I = 1.6e-6, 360e9     # s per ring step, bytes/s (busbw)
A_E, B_E = 6.0e-6, 46e9
G = 8

def ring_ar(n, a, b):
    return lambda s: 2 * (n - 1) * a + 2 * (n - 1) / n * s / b

def ring_rs(n, a, b):
    return lambda s: (n - 1) * a + (n - 1) / n * s / b

def hier_ar(m, g):
    def f(s):
        intra = 2 * (g - 1) * A_I + 2 * (g - 1) / g * s / B_I
        return intra + 2 * (m - 1) * A_E + 2 * (m - 1) / m * (s / g) / B_E
    return f

truth_i = f"intra latency {A_I*1e6} us/step, busbw {B_I/1e9} GB/s"
truth_e = f"inter latency {A_E*1e6} us/step, busbw {B_E/1e9} GB/s (hierarchical: intra phases + ring of nodes on S/g)"
write("h100-1node-all_reduce.txt", "all_reduce", ["dgx-a01"], G, ring_ar(G, A_I, B_I), truth=truth_i)
write("h100-1node-reduce_scatter.txt", "reduce_scatter", ["dgx-a01"], G, ring_rs(G, A_I, B_I), header_op=False, truth=truth_i)
write("h100-2node-all_reduce.txt", "all_reduce", ["dgx-a01", "dgx-a02"], G, hier_ar(2, G), mpi_prefix=True,
      header_op=False, info_lines=True, truth=truth_e)
write("h100-2node-1gpu-all_reduce.txt", "all_reduce", ["dgx-a01", "dgx-a02"], 1, ring_ar(2, A_E, B_E), truth=f"inter ring: {truth_e}")
