"""The module's own behaviour: types, weights and their memory, files, writing, threads, and every argument it
refuses (always ggufmm.Error, naming the function and the argument)."""
import gc
import re
import sys

import numpy as np
import pytest

import ggufmm
from conftest import ticks_while


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


@pytest.fixture
def q4_0():
    return ggufmm.quantize(randn(48, 256), "q4_0")


def test_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", ggufmm.__version__)


def test_error_is_an_exception():
    assert issubclass(ggufmm.Error, Exception)


# Arguments no signature takes (pybind11's own TypeError underneath) are ggufmm.Error too, with its message.
@pytest.mark.parametrize("call", [
    lambda: ggufmm.open(None),
    lambda: ggufmm.open(),
    lambda: ggufmm.open("x.gguf", mode="r"),
    lambda: ggufmm.matmul("not a weight", np.zeros(256, np.float32)),
    lambda: ggufmm.quantize(np.zeros((2, 32), np.float32), None),
    lambda: ggufmm.type_info(["q4_0"]),
    lambda: ggufmm.Weight(None, "q4_0", 32, 1),
    lambda: ggufmm.File(3),
    lambda: ggufmm.upload(None),
])
def test_wrong_arguments_raise_error(call):
    with pytest.raises(ggufmm.Error, match="incompatible|must be|unknown|not"):
        call()


def test_wrong_arguments_to_methods_raise_error(q4_0, golden):
    with ggufmm.open(golden("q4_0.gguf")) as f:
        with pytest.raises(ggufmm.Error, match="incompatible function arguments"):
            f.weight(3)
    with pytest.raises(ggufmm.Error, match="incompatible function arguments"):
        ggufmm.upload(q4_0, "cpu").matmul()


def test_wrapped_functions_keep_their_names_and_docs():
    assert ggufmm.open.__name__ == "open"
    assert "Memory-maps and validates a GGUF file." in ggufmm.open.__doc__
    assert "open(path: os.PathLike) -> ggufmm.File" in ggufmm.open.__doc__
    assert "A tensor as a Weight" in ggufmm.File.weight.__doc__


def test_error_and_every_property_have_a_docstring():
    assert ggufmm.Error.__doc__ and "ggufmm" in ggufmm.Error.__doc__
    undocumented = [f"{cls.__name__}.{name}"
                    for cls in (ggufmm.TypeInfo, ggufmm.TensorInfo, ggufmm.Weight, ggufmm.DeviceInfo,
                                ggufmm.Resident, ggufmm.File)
                    for name, member in vars(cls).items()
                    if isinstance(member, property) and not (member.__doc__ or "").strip()]
    assert undocumented == []


# ---- Types ------------------------------------------------------------------------------------------------------


def test_type_info_by_name_and_id():
    t = ggufmm.type_info("q4_K")
    assert (t.name, t.id, t.block_size, t.block_bytes, t.is_weight, t.can_quantize) == ("q4_K", 12, 256, 144, True,
                                                                                        True)
    assert ggufmm.type_info("Q4_k").name == "q4_K"
    assert ggufmm.type_info(12).name == "q4_K"
    assert ggufmm.type_info("f32").block_size == 1
    assert not ggufmm.type_info("i32").is_weight
    assert not ggufmm.type_info("iq2_xxs").can_quantize
    assert "q4_K" in repr(t)


def test_types_lists_every_type_once():
    types = ggufmm.types()
    names = [t.name for t in types]
    assert len(set(names)) == len(names) == len({t.id for t in types})
    assert {"f32", "f16", "bf16", "q4_0", "q8_0", "q6_K", "iq4_xs", "mxfp4", "i32"} <= set(names)
    for t in types:
        assert ggufmm.type_info(t.id).name == ggufmm.type_info(t.name).name == t.name


@pytest.mark.parametrize("bad", ["q9_K", "", 99, -1, 2**40, 1.5, None])
def test_unknown_types_are_errors(bad):
    with pytest.raises(ggufmm.Error, match="type_info: "):
        ggufmm.type_info(bad)


def test_paths():
    assert {"ref", "gemv", "tiled"} <= set(ggufmm.paths())
    assert "auto" not in ggufmm.paths()


def test_auto_path_picks_a_concrete_path(q4_0):
    assert ggufmm.auto_path(q4_0, 1) == "gemv"
    assert ggufmm.auto_path(q4_0, 512) in ggufmm.paths()


# ---- Weights and their memory -----------------------------------------------------------------------------------


def test_weight_properties(q4_0):
    assert (q4_0.type, q4_0.k, q4_0.m, q4_0.experts, q4_0.shape) == ("q4_0", 256, 48, 1, (48, 256))
    assert q4_0.nbytes == 48 * 256 // 32 * 18
    assert q4_0.blocks.shape == (48, 256 // 32 * 18) and q4_0.blocks.dtype == np.uint8
    assert "q4_0" in repr(q4_0)
    experts = ggufmm.quantize(randn(3, 4, 64), "q8_0")
    assert (experts.experts, experts.m, experts.k, experts.shape) == (3, 4, 64, (3, 4, 64))
    assert experts.blocks.shape == (3, 4, 64 // 32 * 34)


def test_blocks_are_a_read_only_view(q4_0):
    a, b = q4_0.blocks, q4_0.blocks
    assert np.shares_memory(a, b)
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a[0, 0] = 1
    # The view keeps the weight's memory alive after the weight is gone.
    want = ggufmm.dequantize(q4_0)
    blocks = q4_0.blocks
    del q4_0, a, b
    gc.collect()
    np.testing.assert_array_equal(ggufmm.dequantize(ggufmm.Weight(blocks.copy(), "q4_0", 256, 48)), want)


def test_weight_from_an_array_references_it(q4_0):
    source = q4_0.blocks.copy()
    w = ggufmm.Weight(source, "q4_0", 256, 48)
    assert np.shares_memory(w.blocks, source)
    np.testing.assert_array_equal(ggufmm.dequantize(w), ggufmm.dequantize(q4_0))
    # Any shape of the right byte count; experts as given; the type by id too.
    flat = ggufmm.Weight(source.reshape(-1), ggufmm.type_info("q4_0").id, 256, 16, experts=3)
    assert flat.shape == (3, 16, 256)
    # The weight keeps the array alive.
    del source
    gc.collect()
    np.testing.assert_array_equal(ggufmm.dequantize(w), ggufmm.dequantize(q4_0))


def test_a_weight_lets_go_of_its_array(q4_0):
    source = q4_0.blocks.copy()
    before = sys.getrefcount(source)
    w = ggufmm.Weight(source, "q4_0", 256, 48)
    assert sys.getrefcount(source) == before + 1
    del w
    assert sys.getrefcount(source) == before


def test_a_weight_at_a_reused_address_is_not_taken_for_the_one_before():
    # The dense path caches a dense copy per weight address: a weight that goes must take its copy with it.
    x = randn(16, 256, seed=3)
    a = ggufmm.quantize(randn(64, 256, seed=1), "q8_0")
    b = ggufmm.quantize(randn(64, 256, seed=2), "q8_0")
    buffer = a.blocks.copy()
    first = ggufmm.Weight(buffer, "q8_0", 256, 64)
    assert ggufmm.nmse(ggufmm.matmul(first, x, path="dense"), ggufmm.exact_matmul(a, x)) <= 1e-4
    del first
    buffer[...] = b.blocks
    second = ggufmm.Weight(buffer, "q8_0", 256, 64)
    assert ggufmm.nmse(ggufmm.matmul(second, x, path="dense"), ggufmm.exact_matmul(b, x)) <= 1e-4


def test_quantize_round_trip():
    source = randn(32, 512)
    for type_name in ["q8_0", "q4_K", "q6_K", "f16", "bf16", "f32"]:
        w = ggufmm.quantize(source, type_name)
        assert w.shape == source.shape and w.type == type_name
        assert ggufmm.nmse(ggufmm.dequantize(w), source) <= 1e-2
    np.testing.assert_array_equal(ggufmm.dequantize(ggufmm.quantize(source, "f32")), source)


@pytest.mark.parametrize("path", ["auto", "ref", "gemv", "tiled", "dense"])
def test_matmul_of_random_weights(path):
    w = ggufmm.quantize(randn(96, 512, seed=4), "q5_K")
    x = randn(20, 512, seed=5)
    assert ggufmm.nmse(ggufmm.matmul(w, x, path=path, threads=1), ggufmm.exact_matmul(w, x)) <= 1e-3


def test_zero_rows(q4_0):
    y = ggufmm.matmul(q4_0, np.zeros((0, 256), np.float32))
    assert y.shape == (0, 48)


# ---- Files -----------------------------------------------------------------------------------------------------


def test_file(golden):
    path = golden("q4_K.gguf")
    with ggufmm.open(path) as f:
        assert f.path == path and f.version == 3 and f.alignment == 32
        assert f.metadata["golden.kind"] == "dense" and f.metadata["golden.type"] == "q4_K"
        tensors = {t.name: t for t in f.tensors}
        assert tensors["weight"].type == "q4_K" and tensors["weight"].shape == (768, 48)
        assert tensors["weight"].nbytes == f.weight("weight").nbytes == 48 * 3 * 144
        assert tensors["act.3"].shape == (768, 3) and f.read_f32("act.3").shape == (3, 768)
        w = f.weight("weight")
        assert (w.name, w.shape) == ("weight", (48, 768))
        assert "q4_K.gguf" in repr(f) and "weight" in repr(w)
    assert "closed" in repr(f)
    g = ggufmm.File(path)
    assert g.version == 3
    g.close()
    g.close()


def test_weights_outlive_their_closed_file(golden):
    with ggufmm.open(golden("q6_K.gguf")) as f:
        w = f.weight("weight")
        blocks = f.weight("weight").blocks
        want = f.read_f32("dequant")
        x = f.read_f32("act.8")
        y = ggufmm.matmul(w, x)
    del f
    gc.collect()
    np.testing.assert_array_equal(ggufmm.dequantize(w), want)
    np.testing.assert_array_equal(ggufmm.matmul(w, x), y)
    np.testing.assert_array_equal(ggufmm.dequantize(ggufmm.Weight(blocks.copy(), "q6_K", 768, 48)), want)


def test_expert_ids_outlive_their_closed_file(golden):
    with ggufmm.open(golden("moe-q4_0-shared.gguf")) as f:
        ids = f.read_i32("ids")
        copy = ids.copy()
    del f
    gc.collect()
    assert ids.dtype == np.int32 and ids.shape == (29, 4) and not ids.flags.writeable
    np.testing.assert_array_equal(ids, copy)


def test_a_closed_file_refuses_everything(golden):
    path = golden("q8_0.gguf")
    f = ggufmm.open(path)
    f.close()
    message = re.escape(f"{path}: the file is closed")
    for use in [lambda: f.version, lambda: f.alignment, lambda: f.metadata, lambda: f.tensors,
                lambda: f.weight("weight"), lambda: f.read_f32("act.1"), lambda: f.read_i32("ids"),
                lambda: f.__enter__()]:
        with pytest.raises(ggufmm.Error, match=message):
            use()


def test_unknown_and_unreadable_tensors(golden):
    path = golden("q4_0.gguf")
    with ggufmm.open(path) as f:
        with pytest.raises(ggufmm.Error, match=re.escape(f"{path}: no tensor named nope")):
            f.weight("nope")
        with pytest.raises(ggufmm.Error, match="nope"):
            f.read_f32("nope")
        with pytest.raises(ggufmm.Error, match="q4_0"):
            f.read_f32("weight")
        with pytest.raises(ggufmm.Error, match="not i32"):
            f.read_i32("act.1")


def test_missing_and_corrupt_files_are_named(tmp_path, golden):
    missing = str(tmp_path / "missing.gguf")
    with pytest.raises(ggufmm.Error, match=re.escape(missing)):
        ggufmm.open(missing)
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"not a gguf file at all" * 10)
    with pytest.raises(ggufmm.Error, match=re.escape(str(garbage))):
        ggufmm.open(garbage)
    truncated = tmp_path / "truncated.gguf"
    with open(golden("q4_K.gguf"), "rb") as source:
        truncated.write_bytes(source.read()[:5000])
    with pytest.raises(ggufmm.Error, match=re.escape(str(truncated))):
        ggufmm.File(str(truncated))


def test_write_gguf_round_trip(tmp_path):
    q = ggufmm.quantize(randn(8, 256), "q4_K")
    experts = ggufmm.quantize(randn(3, 4, 64), "q8_0")
    dense = randn(5, 7)
    metadata = {
        "general.name": "tiny", "small": -5, "big": 2**40, "half": 1.5, "yes": True,
        "ints": [1, 2, 3], "wide": [1, 2**40], "names": ["a", "\u00e9", "\udcff"], "floats": [0.5, 2.0],
        "flags": [True, False],
    }
    path = tmp_path / "out.gguf"
    ggufmm.write_gguf(path, {"q": q, "experts": experts, "dense": dense}, metadata)
    with ggufmm.open(path) as f:
        assert f.version == 3
        assert list(f.metadata.items()) == list(metadata.items())
        assert [(t.name, t.type, t.shape) for t in f.tensors] == [
            ("q", "q4_K", (256, 8)), ("experts", "q8_0", (64, 4, 3)), ("dense", "f32", (7, 5))]
        np.testing.assert_array_equal(f.weight("q").blocks, q.blocks)
        np.testing.assert_array_equal(f.weight("experts").blocks, experts.blocks)
        assert f.weight("experts").shape == (3, 4, 64)
        np.testing.assert_array_equal(f.read_f32("dense"), dense)
        # What was read writes back the same.
        again = tmp_path / "again.gguf"
        ggufmm.write_gguf(str(again), {"q": f.weight("q")}, f.metadata)
    with ggufmm.open(again) as g:
        assert list(g.metadata.items()) == list(metadata.items())


def test_write_gguf_alignment(tmp_path):
    path = tmp_path / "aligned.gguf"
    ggufmm.write_gguf(path, {"x": randn(3, 32)}, {"general.alignment": 64})
    with ggufmm.open(path) as f:
        assert f.alignment == 64


@pytest.mark.parametrize("metadata, what", [
    ({"k": [[1]]}, "list of lists"),
    ({"k": []}, "empty list"),
    ({"k": [1, "a"]}, "mixes item types"),
    ({"k": {"a": 1}}, "got dict"),
    ({"k": 2**70}, "does not fit 64 bits"),
    ({1: 1}, "keys must be str"),
    ([("k", 1)], "metadata must be a dict"),
])
def test_write_gguf_refuses_bad_metadata(tmp_path, metadata, what):
    path = tmp_path / "bad.gguf"
    with pytest.raises(ggufmm.Error, match=f"write_gguf: .*{what}"):
        ggufmm.write_gguf(path, {"x": randn(2, 32)}, metadata)
    assert not path.exists()


@pytest.mark.parametrize("tensors, what", [
    ({"x": randn(2, 32).astype(np.float64)}, "tensor x must be float32, got float64"),
    ({"x": randn(4, 32)[:, ::2]}, "tensor x must be C-contiguous"),
    ({"x": [1.0, 2.0]}, "tensor x must be a Weight or a float32 array, got list"),
    ({"x": np.ones((), np.float32)}, "tensor x must have 1 to 4 dimensions"),
    ([], "tensors must be a dict"),
])
def test_write_gguf_refuses_bad_tensors(tmp_path, tensors, what):
    with pytest.raises(ggufmm.Error, match="write_gguf: " + re.escape(what)):
        ggufmm.write_gguf(tmp_path / "bad.gguf", tensors)


def test_write_gguf_failure_names_the_file(tmp_path):
    path = str(tmp_path / "no" / "such" / "dir.gguf")
    with pytest.raises(ggufmm.Error, match=re.escape(path)):
        ggufmm.write_gguf(path, {"x": randn(2, 32)})


# ---- Bad arguments ---------------------------------------------------------------------------------------------


def test_matmul_refuses_bad_activations(q4_0):
    x = randn(4, 256)
    cases = [
        (x.astype(np.float64), "matmul: x must be float32, got float64"),
        (x.astype(np.float16), "matmul: x must be float32, got float16"),
        (x.astype(">f4"), "matmul: x must be float32, got >f4"),
        (randn(4, 512)[:, ::2], "matmul: x must be C-contiguous"),
        (np.asfortranarray(randn(4, 256)), "matmul: x must be C-contiguous"),
        (randn(4, 128), "matmul: x must have shape (rows, 256) or (256,), got (4, 128)"),
        (randn(2, 4, 256), "matmul: x must have shape (rows, 256) or (256,), got (2, 4, 256)"),
        (np.float32(1.0), "matmul: x must be a numpy array, got numpy.float32"),
        (x.tolist(), "matmul: x must be a numpy array, got list"),
    ]
    for bad, message in cases:
        with pytest.raises(ggufmm.Error, match=re.escape(message)):
            ggufmm.matmul(q4_0, bad)
    unaligned = np.zeros(4 * 256 * 4 + 1, np.uint8)[1:].view(np.float32).reshape(4, 256)
    assert unaligned.flags.c_contiguous and not unaligned.flags.aligned
    with pytest.raises(ggufmm.Error, match="matmul: x must be aligned"):
        ggufmm.matmul(q4_0, unaligned)


def test_matmul_refuses_bad_residuals_paths_and_threads(q4_0):
    x = randn(4, 256)
    with pytest.raises(ggufmm.Error, match=re.escape("matmul: residual must have shape (4, 48), got (4, 47)")):
        ggufmm.matmul(q4_0, x, residual=randn(4, 47))
    with pytest.raises(ggufmm.Error, match="matmul: residual must be float32, got float64"):
        ggufmm.matmul(q4_0, x, residual=np.zeros((4, 48)))
    with pytest.raises(ggufmm.Error, match="matmul: residual must be C-contiguous"):
        ggufmm.matmul(q4_0, x, residual=randn(48, 4).T)
    with pytest.raises(ggufmm.Error, match="matmul: unknown path 'fast'"):
        ggufmm.matmul(q4_0, x, path="fast")
    with pytest.raises(ggufmm.Error, match="matmul: threads must be 0"):
        ggufmm.matmul(q4_0, x, threads=-1)


def test_matmul_refuses_experts():
    experts = ggufmm.quantize(randn(2, 8, 64), "q8_0")
    with pytest.raises(ggufmm.Error, match="matmul: the weight holds 2 experts; use mul_mat_id"):
        ggufmm.matmul(experts, randn(1, 64))
    with pytest.raises(ggufmm.Error, match="exact_matmul: the weight holds 2 experts"):
        ggufmm.exact_matmul(experts, randn(1, 64))


def test_mul_mat_id_refuses_bad_arguments():
    w = ggufmm.quantize(randn(4, 8, 64), "q8_0")
    act = randn(3, 2, 64)
    ids = np.array([[0, 1], [2, 3], [3, 0]], np.int32)
    assert ggufmm.mul_mat_id(w, act, ids).shape == (3, 2, 8)
    assert ggufmm.mul_mat_id(w, act[:, :1].copy(), ids).shape == (3, 2, 8)
    cases = [
        (act, ids.astype(np.int64), "mul_mat_id: ids must be int32, got int64"),
        (act, np.asfortranarray(ids), "mul_mat_id: ids must be C-contiguous"),
        (act, ids.reshape(-1), "mul_mat_id: ids must have shape (tokens, slots), got (6,)"),
        (act.astype(np.float64), ids, "mul_mat_id: act must be float32, got float64"),
        (randn(3, 3, 64), ids, "mul_mat_id: act must have shape (3, 1 or 2, 64)"),
        (randn(2, 2, 64), ids, "mul_mat_id: act must have shape (3, 1 or 2, 64)"),
        (randn(3, 2, 32), ids, "mul_mat_id: act must have shape (3, 1 or 2, 64)"),
        (randn(6, 64), ids, "mul_mat_id: act must have shape (3, 1 or 2, 64)"),
    ]
    for a, i, message in cases:
        with pytest.raises(ggufmm.Error, match=re.escape(message)):
            ggufmm.mul_mat_id(w, a, i)
    with pytest.raises(ggufmm.Error, match=re.escape("expert id 4 (token 1, slot 1) is outside [0, 4)")):
        ggufmm.mul_mat_id(w, act, np.array([[0, 1], [2, 4], [3, 0]], np.int32))
    with pytest.raises(ggufmm.Error, match="expert id -1"):
        ggufmm.mul_mat_id(w, act, np.array([[0, 1], [2, 3], [-1, 0]], np.int32))
    with pytest.raises(ggufmm.Error, match=re.escape("mul_mat_id: residual must have shape (3, 2, 8)")):
        ggufmm.mul_mat_id(w, act, ids, residual=randn(3, 8))
    with pytest.raises(ggufmm.Error, match="mul_mat_id: unknown path 'x'"):
        ggufmm.mul_mat_id(w, act, ids, path="x")


def test_weight_refuses_bad_blocks(q4_0):
    blocks = q4_0.blocks.copy()
    cases = [
        (lambda: ggufmm.Weight(blocks, "q4_0", 256, 47), "Weight: blocks hold 6912 bytes, but 1 x 47 x 256 q4_0"),
        (lambda: ggufmm.Weight(blocks, "q4_0", 100, 48), "Weight: k = 100 is not a multiple of the q4_0 block size"),
        (lambda: ggufmm.Weight(blocks, "q4_0", 256, 0), "Weight: k, m and experts must be positive"),
        (lambda: ggufmm.Weight(blocks, "q4_0", 256, 48, experts=-1), "Weight: k, m and experts must be positive"),
        (lambda: ggufmm.Weight(blocks, "q4_0", 2**62, 2**62), "more than 2^64"),
        (lambda: ggufmm.Weight(blocks, "i32", 256, 48), "Weight: type i32 is not a weight type"),
        (lambda: ggufmm.Weight(blocks, "q9_0", 256, 48), "Weight: unknown type 'q9_0'"),
        (lambda: ggufmm.Weight(blocks.view(np.int8), "q4_0", 256, 48), "Weight: blocks must be uint8, got int8"),
        (lambda: ggufmm.Weight(blocks[:, ::2], "q4_0", 128, 48), "Weight: blocks must be C-contiguous"),
        (lambda: ggufmm.Weight(bytes(blocks), "q4_0", 256, 48), "Weight: blocks must be a numpy array, got bytes"),
    ]
    for make, message in cases:
        with pytest.raises(ggufmm.Error, match=re.escape(message)):
            make()


def test_quantize_refuses_bad_arrays():
    with pytest.raises(ggufmm.Error, match="quantize: unknown type 'q9_0'"):
        ggufmm.quantize(randn(2, 32), "q9_0")
    with pytest.raises(ggufmm.Error, match="quantize: array must be float32, got float64"):
        ggufmm.quantize(np.zeros((2, 32)), "q8_0")
    with pytest.raises(ggufmm.Error, match="quantize: array must be C-contiguous"):
        ggufmm.quantize(randn(32, 2).T, "q8_0")
    with pytest.raises(ggufmm.Error, match=re.escape("quantize: array must have shape (m, k) or (experts, m, k)")):
        ggufmm.quantize(randn(32), "q8_0")
    with pytest.raises(ggufmm.Error, match="quantize: array is empty"):
        ggufmm.quantize(randn(0, 32), "q8_0")
    with pytest.raises(ggufmm.Error, match="need a multiple of 32"):
        ggufmm.quantize(randn(2, 48), "q8_0")
    with pytest.raises(ggufmm.Error, match="cannot quantize to i32"):
        ggufmm.quantize(randn(2, 32), "i32")


def test_nmse():
    got = np.array([1, 2, 3], np.float32)
    assert ggufmm.nmse(got, got) == 0.0
    assert ggufmm.nmse(got, np.array([1, 2, 4], np.float64)) == pytest.approx(1 / 21)
    with pytest.raises(ggufmm.Error, match=re.escape("nmse: reference must have shape (3,), got (4,)")):
        ggufmm.nmse(got, np.zeros(4, np.float32))
    with pytest.raises(ggufmm.Error, match="nmse: got must be float32, got float64"):
        ggufmm.nmse(got.astype(np.float64), got)


# ---- Threads ---------------------------------------------------------------------------------------------------


def test_matmul_lets_other_threads_run():
    w = ggufmm.quantize(randn(512, 2048), "q4_0")
    x = randn(32, 2048)
    assert ticks_while(lambda: ggufmm.matmul(w, x, path="ref", threads=1)) > 0
