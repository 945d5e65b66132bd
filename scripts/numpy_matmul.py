#!/usr/bin/env python3
"""The reference for `cargo bench --bench tune_quality`: an fp32 matrix product `a @ b` (row-major
M x K times K x N, as `examples/matmul*.lift` take them) through numpy (OpenBLAS's GEMM) on the
same machine. Prints GFLOP/s (the median of 30 timed products after 5 untimed ones).

    python3 scripts/numpy_matmul.py M K N
"""

import sys
import time

import numpy as np


def main():
    m, k, n = (int(x) for x in sys.argv[1:4])
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    for _ in range(5):
        a @ b
    times = []
    for _ in range(30):
        t = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t)
    times.sort()
    print(f"{2.0 * m * k * n / times[len(times) // 2] / 1e9:.2f}")


if __name__ == "__main__":
    main()
