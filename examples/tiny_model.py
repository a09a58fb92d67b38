"""Writes a small GGUF model to try the examples on: one llama-style feed-forward block with llama.cpp's tensor
names, its weights quantized as a Q4_K_M file holds them (q4_K gate and up, q6_K down, an f32 norm).

    python3 examples/tiny_model.py OUT.gguf [--embd 512] [--ff 1536]
"""
import argparse

import numpy as np

import ggufmm


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--embd", type=int, default=512)
    parser.add_argument("--ff", type=int, default=1536)
    args = parser.parse_args()

    rng = np.random.default_rng(0)

    def weight(m, k):  # rows of k values with a spread of row scales and a few outliers, as trained weights have
        w = rng.standard_normal((m, k), dtype=np.float32) / np.sqrt(k)
        w *= rng.uniform(0.5, 2.0, (m, 1)).astype(np.float32)
        outliers = rng.random((m, k)) < 0.002
        w[outliers] *= 8
        return w

    ggufmm.write_gguf(
        args.out,
        {
            "blk.0.ffn_norm.weight": rng.uniform(0.8, 1.2, args.embd).astype(np.float32),
            "blk.0.ffn_gate.weight": ggufmm.quantize(weight(args.ff, args.embd), "q4_K"),
            "blk.0.ffn_up.weight": ggufmm.quantize(weight(args.ff, args.embd), "q4_K"),
            "blk.0.ffn_down.weight": ggufmm.quantize(weight(args.embd, args.ff), "q6_K"),
        },
        {
            "general.architecture": "llama",
            "general.name": "ggufmm tiny feed-forward block",
            "llama.block_count": 1,
            "llama.embedding_length": args.embd,
            "llama.feed_forward_length": args.ff,
        },
    )
    print(f"{args.out}: one feed-forward block, n_embd {args.embd}, n_ff {args.ff}")


if __name__ == "__main__":
    main()
