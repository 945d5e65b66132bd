#!/usr/bin/env python3
"""The reference for `cargo bench --bench tune_quality`: a 3x3 convolution (stride 1, padding 1,
batch 1, fp32, HWC input) done the way frameworks do on a CPU: im2col, then one GEMM through
numpy (OpenBLAS). Prints GFLOP/s.

The weights are OHWI, as `examples/conv.lift` and `conv_blocked.lift` take them, or HWIO with
`--hwio`, as `examples/conv_hwio.lift` takes them; either is one matrix for the GEMM (OpenBLAS
reads a transposed operand in place), so the layout changes nothing but the program compared.
With `--gemm-only` the im2col matrix is built once, before the clock, and only the GEMM is timed:
a stricter baseline than a framework's convolution.

    python3 scripts/numpy_conv.py H W C_IN C_OUT [--hwio] [--gemm-only]
"""

import sys
import time

import numpy as np


def im2col(inp):
    h, w, c = inp.shape
    padded = np.pad(inp, ((1, 1), (1, 1), (0, 0)))
    cols = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(0, 1))  # h, w, c, 3, 3
    return np.ascontiguousarray(cols.transpose(0, 1, 3, 4, 2)).reshape(h * w, 9 * c)


def conv_ohwi(inp, ks):
    h, w, c = inp.shape
    o = ks.shape[0]
    return (im2col(inp) @ ks.reshape(o, 9 * c).T).reshape(h, w, o)


def conv_hwio(inp, ks):
    h, w, c = inp.shape
    o = ks.shape[3]
    return (im2col(inp) @ ks.reshape(9 * c, o)).reshape(h, w, o)


def main():
    h, w, c, o = (int(x) for x in sys.argv[1:5])
    hwio = "--hwio" in sys.argv[5:]
    gemm_only = "--gemm-only" in sys.argv[5:]
    rng = np.random.default_rng(0)
    inp = rng.uniform(-1, 1, (h, w, c)).astype(np.float32)
    ks = rng.uniform(-1, 1, (o, 3, 3, c)).astype(np.float32)
    conv = conv_ohwi
    if hwio:
        ks, conv = np.ascontiguousarray(ks.transpose(1, 2, 3, 0)), conv_hwio
        assert np.allclose(conv_hwio(inp, ks), conv_ohwi(inp, ks.transpose(3, 0, 1, 2)), atol=1e-3)
    if gemm_only:
        cols, weights = im2col(inp), ks.reshape(9 * c, o) if hwio else ks.reshape(o, 9 * c).T

        def conv(_inp, _ks):
            return cols @ weights

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
