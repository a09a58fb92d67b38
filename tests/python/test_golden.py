"""The golden files ggml made (tests/data/golden/README.md): dequantization bit for bit, every path's products
against the exact ones and against numpy's, mul_mat_id, residuals and the quantizers' quality."""
import numpy as np
import pytest

import ggufmm
from conftest import GOLDEN_ROWS, MOE_FILES

WEIGHT_TYPES = [t.name for t in ggufmm.types() if t.is_weight]
FLOAT_TYPES = {"f32", "f16", "bf16"}
PATHS = ["auto"] + ggufmm.paths()


def tolerance(path, type_name):
    """The NMSE against the exact product that a path meets on one golden activation count, with margin over
    what it reaches (README.md, Accuracy; tests/golden_test.cpp, gemv_test.cpp and dense_test.cpp hold the same
    bounds, tighter). The int8 paths' only error is the activations' rounding to int8: up to 1.8e-4 on one count
    of one file."""
    if path == "ref":
        return 1e-10
    if path == "dense":
        return 5e-5  # a bf16 copy of the weights: up to 1.6e-5
    if type_name in FLOAT_TYPES:
        return 1e-10
    return 4e-4


def golden_product(f, n):
    """act.<n> and exact_out.<n> as (n, k) and (n, m): a file stores one row as a vector."""
    return f.read_f32(f"act.{n}").reshape(n, -1), f.read_f32(f"exact_out.{n}").reshape(n, -1)


def exact64(weight, x):
    """numpy's product of the dequantized weights and x, in float64."""
    return x.astype(np.float64) @ ggufmm.dequantize(weight).astype(np.float64).T


@pytest.mark.parametrize("type_name", WEIGHT_TYPES)
def test_dequantize_matches_ggml_bit_for_bit(golden, type_name):
    with ggufmm.open(golden(f"{type_name}.gguf")) as f:
        w = f.weight("weight")
        assert w.type == type_name
        got = ggufmm.dequantize(w)
        want = f.read_f32("dequant")
    assert got.dtype == np.float32 and got.shape == want.shape == w.shape
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("type_name", WEIGHT_TYPES)
def test_matmul_matches_exact(golden, type_name, path):
    with ggufmm.open(golden(f"{type_name}.gguf")) as f:
        w = f.weight("weight")
        for n in GOLDEN_ROWS:
            x, exact = golden_product(f, n)
            y = ggufmm.matmul(w, x, path=path)
            assert y.dtype == np.float32 and y.shape == exact.shape == (n, w.m)
            assert ggufmm.nmse(y, exact) <= tolerance(path, type_name), f"n={n}"
            assert ggufmm.nmse(y, exact64(w, x)) <= tolerance(path, type_name), f"n={n}"


@pytest.mark.parametrize("type_name", WEIGHT_TYPES)
def test_exact_matmul_is_the_exact_product(golden, type_name):
    with ggufmm.open(golden(f"{type_name}.gguf")) as f:
        w = f.weight("weight")
        for n in GOLDEN_ROWS:
            x, exact = golden_product(f, n)
            got = ggufmm.exact_matmul(w, x)
            assert got.dtype == np.float64 and got.shape == (n, w.m)
            # exact_out is stored as f32: only its rounding is left.
            assert ggufmm.nmse(exact, got) <= 1e-13
            np.testing.assert_allclose(got, exact64(w, x), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("path", ["ref", "gemv", "tiled", "dense"])
def test_residual_is_added(golden, path):
    with ggufmm.open(golden("q4_K.gguf")) as f:
        w = f.weight("weight")
        x, exact = golden_product(f, 8)
    residual = np.random.default_rng(1).standard_normal(exact.shape).astype(np.float32)
    y = ggufmm.matmul(w, x, residual=residual, path=path)
    assert ggufmm.nmse(y, exact.astype(np.float64) + residual) <= tolerance(path, "q4_K")
    # The residual is added to the product the path computes without one.
    np.testing.assert_allclose(y, ggufmm.matmul(w, x, path=path) + residual, rtol=1e-5, atol=1e-5)


def test_one_activation_row_is_a_vector(golden):
    with ggufmm.open(golden("q8_0.gguf")) as f:
        w = f.weight("weight")
        x = f.read_f32("act.3")
    for path in ggufmm.paths():
        y = ggufmm.matmul(w, x[1], path=path)
        assert y.shape == (w.m,)
        np.testing.assert_array_equal(y, ggufmm.matmul(w, x[1:2], path=path)[0])
    assert ggufmm.exact_matmul(w, x[1]).shape == (w.m,)


@pytest.mark.parametrize("path", ["auto", "ref", "gemv", "tiled"])
@pytest.mark.parametrize("file", MOE_FILES)
def test_mul_mat_id_matches_exact(golden, file, path):
    with ggufmm.open(golden(f"{file}.gguf")) as f:
        w = f.weight("weight")
        act = f.read_f32("act")
        ids = f.read_i32("ids")
        exact = f.read_f32("exact_out")
        assert w.experts == 8 and w.shape == (8, w.m, w.k)
        assert act.shape[1] == (1 if file.endswith("shared") else ids.shape[1])
        y = ggufmm.mul_mat_id(w, act, ids, path=path)
        assert y.dtype == np.float32 and y.shape == exact.shape == (ids.shape[0], ids.shape[1], w.m)
        # The expert paths' activations are rounded to int8 as for matmul: up to 8.3e-5 on these files.
        assert ggufmm.nmse(y, exact) <= (1e-10 if path == "ref" else 2e-4)

        residual = np.random.default_rng(2).standard_normal(exact.shape).astype(np.float32)
        y2 = ggufmm.mul_mat_id(w, act, ids, residual=residual, path=path)
        np.testing.assert_allclose(y2, y + residual, rtol=1e-5, atol=1e-5)


def test_mul_mat_id_rows_are_their_experts_products(golden):
    with ggufmm.open(golden("moe-q4_K-perslot.gguf")) as f:
        w = f.weight("weight")
        act = f.read_f32("act")
        ids = f.read_i32("ids")
    y = ggufmm.mul_mat_id(w, act, ids, path="ref")
    dequant = ggufmm.dequantize(w).astype(np.float64)
    for t in range(ids.shape[0]):
        for s in range(ids.shape[1]):
            want = dequant[ids[t, s]] @ act[t, s].astype(np.float64)
            np.testing.assert_allclose(y[t, s], want, rtol=1e-4, atol=1e-4)


QUANTIZABLE = [t.name for t in ggufmm.types() if t.is_weight and t.can_quantize]


@pytest.mark.parametrize("type_name", QUANTIZABLE)
def test_quantize_is_no_worse_than_ggml(golden, type_name):
    with ggufmm.open(golden(f"{type_name}.gguf")) as f:
        source = f.read_f32("source")
        ggml = f.read_f32("dequant")
        golden_weight = f.weight("weight")
    w = ggufmm.quantize(source, type_name)
    assert (w.type, w.shape, w.nbytes) == (type_name, source.shape, golden_weight.nbytes)
    ours = ggufmm.dequantize(w)
    assert ggufmm.nmse(ours, source) <= 1.02 * ggufmm.nmse(ggml, source)
    # Rows are quantized one by one: as experts, the same blocks.
    experts = ggufmm.quantize(source.reshape(2, -1, source.shape[1]), type_name)
    assert experts.shape == (2, source.shape[0] // 2, source.shape[1])
    np.testing.assert_array_equal(experts.blocks.reshape(w.blocks.shape), w.blocks)


def test_types_without_a_quantizer_refuse():
    source = np.zeros((2, 256), np.float32)
    for t in ggufmm.types():
        if t.is_weight and not t.can_quantize:
            with pytest.raises(ggufmm.Error, match=f"cannot quantize to {t.name}"):
                ggufmm.quantize(source, t.name)
