#!/usr/bin/env python3
"""The reference for `cargo bench --bench tune_quality`: a 3x3 convolution (stride 1, padding 1,
batch 1, fp32, HWC input and OHWI weights as mapsat's conv programs take them) done the way
frameworks do on a CPU: im2col, then one GEMM through numpy (OpenBLAS). Prints GFLOP/s.

    python3 scripts/numpy_conv.py H W C_IN C_OUT
"""

import sys
import time

import numpy as np


def conv(inp, ks):
    h, w, c = inp.shape
    o = ks.shape[0]
    padded = np.pad(inp, ((1, 1), (1, 1), (0, 0)))
    cols = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(0, 1))  # h, w, c, 3, 3
    cols = np.ascontiguousarray(cols.transpose(0, 1, 3, 4, 2)).reshape(h * w, 9 * c)
    return (cols @ ks.reshape(o, 9 * c).T).reshape(h, w, o)


def main():
    h, w, c, o = (int(x) for x in sys.argv[1:5])
    rng = np.random.default_rng(0)
    inp = rng.uniform(-1, 1, (h, w, c)).astype(np.float32)
    ks = rng.uniform(-1, 1, (o, 3, 3, c)).astype(np.float32)
    for _ in range(3):
        conv(inp, ks)
    times = []
    for _ in range(20):
        t = time.perf_counter()
        conv(inp, ks)
        times.append(time.perf_counter() - t)
    times.sort()
    flops = 2.0 * h * w * o * c * 9
    print(f"{flops / times[len(times) // 2] / 1e9:.2f}")


if __name__ == "__main__":
    main()
