#!/usr/bin/env python3
"""The accuracy and speed of ggufmm's kernel paths on the weights of a GGUF file.

For every weight tensor of the file (2-D, or the first expert of a 3-D one, of a weight type) and every row count,
random activations (seeded) go through gemv and tiled (the int8 paths) and dense (a cached bf16 or f32 copy,
multiplied by oneDNN). The table reports each product's NMSE against the exact one (the dequantized weights times
the activations, summed in double) and the median time of a call in milliseconds.

    PYTHONPATH=build/python python3 examples/nmse_table.py MODEL.gguf [--rows 1,8,64] [--threads N] [--limit N]

--limit N measures the first N weight tensors only: on a large model the exact products take a while.
"""
import argparse
import statistics
import time

import numpy as np

import ggufmm

PATHS = ["gemv", "tiled", "dense"]


def median_ms(call, min_seconds=0.01, min_calls=3, max_calls=100):
    """The median time of call() in ms, after one untimed call (which makes the dense path's copy)."""
    call()
    times = []
    start = time.perf_counter()
    while len(times) < min_calls or (time.perf_counter() - start < min_seconds and len(times) < max_calls):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def weight_tensors(f):
    for t in f.tensors:
        info = ggufmm.type_info(t.type)
        if info.is_weight and len(t.shape) in (2, 3) and t.shape[0] % info.block_size == 0:
            yield t


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a GGUF file")
    parser.add_argument("--rows", default="1,8,64", help="activation row counts, comma-separated (default 1,8,64)")
    parser.add_argument("--threads", type=int, default=0, help="threads per call (default 0: all cores)")
    parser.add_argument("--limit", type=int, default=0, help="measure the first N weight tensors only")
    args = parser.parse_args()
    rows = [int(r) for r in args.rows.split(",")]

    with ggufmm.open(args.model) as f:
        tensors = list(weight_tensors(f))
        if args.limit > 0:
            tensors = tensors[:args.limit]
        names = [t.name + ("[0]" if len(t.shape) == 3 else "") for t in tensors]
        width = max([len("tensor")] + [len(n) for n in names])
        header = f"{'tensor':<{width}}  {'type':<8} {'m':>6} {'k':>6} {'rows':>5}"
        header += "".join(f"  {p + ' nmse':>10} {p + ' ms':>9}" for p in PATHS)
        print(header)
        print("-" * len(header))
        rng = np.random.default_rng(0)
        for t, name in zip(tensors, names):
            w = f.weight(t.name)
            if w.experts > 1:
                # The first expert's blocks, viewed as a matrix of its own (no copy).
                w = ggufmm.Weight(w.blocks[0], w.type, w.k, w.m)
            for n in rows:
                x = rng.standard_normal((n, w.k), dtype=np.float32)
                exact = ggufmm.exact_matmul(w, x)
                line = f"{name:<{width}}  {w.type:<8} {w.m:>6} {w.k:>6} {n:>5}"
                for path in PATHS:
                    error = ggufmm.nmse(ggufmm.matmul(w, x, path=path, threads=args.threads), exact)
                    ms = median_ms(lambda: ggufmm.matmul(w, x, path=path, threads=args.threads))
                    line += f"  {error:>10.2e} {ms:>9.3f}"
                print(line, flush=True)


if __name__ == "__main__":
    main()
