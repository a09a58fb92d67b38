"""Devices and resident weights, on every device ggufmm.devices() lists (the CPU included): dequantization bit for
bit and products against the golden files, what a resident weight keeps alive, and the arguments it refuses."""
import gc
import re
import sys
import time

import numpy as np
import pytest

import ggufmm
from conftest import MOE_FILES, ticks_while

DEVICES = [d.name for d in ggufmm.devices()]
WEIGHT_TYPES = [t.name for t in ggufmm.types() if t.is_weight]
# The int8 paths' bound against the exact product (test_golden.py): a device quantizes the activations as they do.
TOLERANCE = 4e-4
# The expert paths' bound (test_golden.py): up to 8.3e-5 on the mixture-of-experts files.
MOE_TOLERANCE = 2e-4


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def golden_product(f, n):
    """act.<n> and exact_out.<n> as (n, k) and (n, m): a file stores one row as a vector."""
    return f.read_f32(f"act.{n}").reshape(n, -1), f.read_f32(f"exact_out.{n}").reshape(n, -1)


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


# ---- Devices ---------------------------------------------------------------------------------------------------


def test_devices_list_the_cpu_first():
    devices = ggufmm.devices()
    assert devices[0].name == "cpu"
    assert len({d.name for d in devices}) == len(devices)
    for d in devices:
        assert isinstance(d.description, str) and d.description
        assert isinstance(d.memory_bytes, int) and isinstance(d.max_allocation, int)
        assert isinstance(d.capabilities, list) and all(isinstance(c, str) for c in d.capabilities)
        assert repr(d).startswith(f"<ggufmm.DeviceInfo {d.name}: {d.description}")


def test_upload_names_its_device(device):
    w = ggufmm.quantize(randn(8, 64), "q8_0")
    r = ggufmm.upload(w, device)
    assert r.device == device
    assert r.weight is w
    assert repr(r) == f"<ggufmm.Resident q8_0 m=8 k=64 on {device}>"


def test_upload_takes_the_device_from_the_environment(monkeypatch):
    w = ggufmm.quantize(randn(8, 64), "q8_0")
    monkeypatch.delenv("GGUFMM_DEVICE", raising=False)
    assert ggufmm.upload(w).device == "cpu"
    for name in DEVICES:
        monkeypatch.setenv("GGUFMM_DEVICE", name)
        assert ggufmm.upload(w).device == name
    monkeypatch.setenv("GGUFMM_DEVICE", "nosuch:3")
    with pytest.raises(ggufmm.Error, match="device nosuch:3: no such device"):
        ggufmm.upload(w)
    # A name given overrides the environment.
    assert ggufmm.upload(w, "cpu").device == "cpu"


# ---- Against the golden files ----------------------------------------------------------------------------------


@pytest.mark.parametrize("type_name", WEIGHT_TYPES)
def test_dequantize_matches_ggml_bit_for_bit(golden, device, type_name):
    with ggufmm.open(golden(f"{type_name}.gguf")) as f:
        w = f.weight("weight")
        want = f.read_f32("dequant")
    got = ggufmm.upload(w, device).dequantize()
    assert got.dtype == np.float32 and got.shape == want.shape == w.shape
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("type_name", WEIGHT_TYPES)
def test_matmul_matches_exact(golden, device, type_name):
    with ggufmm.open(golden(f"{type_name}.gguf")) as f:
        w = f.weight("weight")
        r = ggufmm.upload(w, device)
        # 8 rows take two sets of the device's rows.
        for n in (1, 3, 8):
            x, exact = golden_product(f, n)
            y = r.matmul(x)
            assert y.dtype == np.float32 and y.shape == exact.shape == (n, w.m)
            assert ggufmm.nmse(y, exact) <= TOLERANCE, f"n={n}"


@pytest.mark.parametrize("path", ["gemv", "tiled", "dense"])
def test_every_path_a_device_offers_matches_exact(golden, device, path):
    with ggufmm.open(golden("q6_K.gguf")) as f:
        w = f.weight("weight")
        r = ggufmm.upload(w, device)
        x, exact = golden_product(f, 37)
        # A device's dense copy (f32, or f16 on CUDA) times the f32 activations: far within the int8 paths' bound
        # (the CPU's dense copy is bf16).
        dense_bound = TOLERANCE if device == "cpu" else 1e-6
        assert ggufmm.nmse(r.matmul(x, path=path), exact) <= (dense_bound if path == "dense" else TOLERANCE)
    act = np.stack([x[:4], x[4:8]], axis=1)
    ids = np.array([[0, 0]] * 4, np.int32)
    assert r.mul_mat_id(act, ids, path=path).shape == (4, 2, w.m)


def test_ref_is_the_cpus_alone(device):
    r = ggufmm.upload(ggufmm.quantize(randn(8, 64), "q8_0"), device)
    x = randn(8, 64, seed=2)
    if device == "cpu":
        assert r.matmul(x, path="ref").shape == (8, 8)
    else:
        with pytest.raises(ggufmm.Error, match="not offered on devices"):
            r.matmul(x, path="ref")
    with pytest.raises(ggufmm.Error, match="unknown path 'fast'"):
        r.matmul(x, path="fast")


def test_one_activation_row_is_a_vector(golden, device):
    with ggufmm.open(golden("q8_0.gguf")) as f:
        w = f.weight("weight")
        x, exact = golden_product(f, 3)
    r = ggufmm.upload(w, device)
    y = r.matmul(x[1])
    assert y.shape == (w.m,)
    assert ggufmm.nmse(y, exact[1]) <= TOLERANCE


def test_residual_is_added(golden, device):
    with ggufmm.open(golden("q4_K.gguf")) as f:
        w = f.weight("weight")
        x, exact = golden_product(f, 8)
    r = ggufmm.upload(w, device)
    residual = randn(*exact.shape, seed=1)
    y = r.matmul(x, residual=residual)
    assert ggufmm.nmse(y, exact.astype(np.float64) + residual) <= TOLERANCE
    np.testing.assert_allclose(y, r.matmul(x) + residual, rtol=1e-5, atol=1e-5)


def test_zero_rows(device):
    r = ggufmm.upload(ggufmm.quantize(randn(8, 64), "q8_0"), device)
    assert r.matmul(np.zeros((0, 64), np.float32)).shape == (0, 8)
    assert r.mul_mat_id(np.zeros((0, 1, 64), np.float32), np.zeros((0, 2), np.int32)).shape == (0, 2, 8)


@pytest.mark.parametrize("file", MOE_FILES)
def test_mul_mat_id_matches_exact(golden, device, file):
    with ggufmm.open(golden(f"{file}.gguf")) as f:
        w = f.weight("weight")
        act = f.read_f32("act")
        ids = f.read_i32("ids")
        exact = f.read_f32("exact_out")
    r = ggufmm.upload(w, device)
    y = r.mul_mat_id(act, ids)
    assert y.dtype == np.float32 and y.shape == exact.shape == (ids.shape[0], ids.shape[1], w.m)
    assert ggufmm.nmse(y, exact) <= MOE_TOLERANCE

    residual = randn(*exact.shape, seed=2)
    np.testing.assert_allclose(r.mul_mat_id(act, ids, residual=residual), y + residual, rtol=1e-5, atol=1e-5)


# ---- Memory ----------------------------------------------------------------------------------------------------


def test_a_resident_outlives_its_file_and_weight(golden, device):
    f = ggufmm.open(golden("q4_K.gguf"))
    w = f.weight("weight")
    want = f.read_f32("dequant")
    x, exact = golden_product(f, 3)
    r = ggufmm.upload(w, device)
    f.close()
    del f, w
    gc.collect()
    assert r.weight.type == "q4_K" and r.weight.shape == want.shape
    np.testing.assert_array_equal(r.dequantize(), want)
    assert ggufmm.nmse(r.matmul(x), exact) <= TOLERANCE


def test_a_resident_outlives_the_array_of_its_weight(device):
    source = ggufmm.quantize(randn(48, 256), "q4_0")
    want = ggufmm.dequantize(source)
    blocks = source.blocks.copy()
    r = ggufmm.upload(ggufmm.Weight(blocks, "q4_0", 256, 48), device)
    del blocks
    gc.collect()
    np.testing.assert_array_equal(r.dequantize(), want)


def test_a_resident_lets_go_of_its_weight(device):
    w = ggufmm.quantize(randn(8, 64), "q8_0")
    before = sys.getrefcount(w)
    r = ggufmm.upload(w, device)
    assert sys.getrefcount(w) == before + 1
    del r
    assert sys.getrefcount(w) == before


# ---- Bad arguments ---------------------------------------------------------------------------------------------


def test_upload_refuses_unknown_devices_and_bad_arguments():
    w = ggufmm.quantize(randn(8, 64), "q8_0")
    with pytest.raises(ggufmm.Error, match=re.escape("device nosuch:7: no such device")) as raised:
        ggufmm.upload(w, "nosuch:7")
    assert "cpu" in str(raised.value)  # the devices there are
    with pytest.raises(ggufmm.Error, match="upload: weight must be a ggufmm.Weight, got numpy.ndarray"):
        ggufmm.upload(w.blocks)
    with pytest.raises(ggufmm.Error, match="upload: device must be a device name or None, got int"):
        ggufmm.upload(w, 0)


def test_matmul_refuses_bad_arguments(device):
    r = ggufmm.upload(ggufmm.quantize(randn(48, 256), "q4_0"), device)
    x = randn(4, 256)
    cases = [
        (x.astype(np.float64), None, "Resident.matmul: x must be float32, got float64"),
        (np.asfortranarray(x), None, "Resident.matmul: x must be C-contiguous"),
        (randn(4, 128), None, "Resident.matmul: x must have shape (rows, 256) or (256,), got (4, 128)"),
        (x.tolist(), None, "Resident.matmul: x must be a numpy array, got list"),
        (x, randn(4, 47), "Resident.matmul: residual must have shape (4, 48), got (4, 47)"),
        (x, np.zeros((4, 48)), "Resident.matmul: residual must be float32, got float64"),
    ]
    for bad_x, bad_residual, message in cases:
        with pytest.raises(ggufmm.Error, match=re.escape(message)):
            r.matmul(bad_x, residual=bad_residual)


def test_matmul_refuses_experts(device):
    r = ggufmm.upload(ggufmm.quantize(randn(2, 8, 64), "q8_0"), device)
    with pytest.raises(ggufmm.Error, match="Resident.matmul: the weight holds 2 experts; use mul_mat_id"):
        r.matmul(randn(1, 64))


def test_mul_mat_id_refuses_bad_arguments(device):
    r = ggufmm.upload(ggufmm.quantize(randn(4, 8, 64), "q8_0"), device)
    act = randn(3, 2, 64)
    ids = np.array([[0, 1], [2, 3], [3, 0]], np.int32)
    assert r.mul_mat_id(act, ids).shape == (3, 2, 8)
    cases = [
        (act, ids.astype(np.int64), None, "Resident.mul_mat_id: ids must be int32, got int64"),
        (act.astype(np.float64), ids, None, "Resident.mul_mat_id: act must be float32, got float64"),
        (randn(3, 3, 64), ids, None, "Resident.mul_mat_id: act must have shape (3, 1 or 2, 64)"),
        (act, ids, randn(3, 8), "Resident.mul_mat_id: residual must have shape (3, 2, 8)"),
    ]
    for a, i, residual, message in cases:
        with pytest.raises(ggufmm.Error, match=re.escape(message)):
            r.mul_mat_id(a, i, residual=residual)
    for bad in (4, -1):
        with pytest.raises(ggufmm.Error, match=re.escape(f"id {bad} (token 1, slot 1)")):
            r.mul_mat_id(act, np.array([[0, 1], [2, bad], [3, 0]], np.int32))


# ---- Threads ---------------------------------------------------------------------------------------------------


def test_a_resident_lets_other_threads_run(device):
    # As test_api.py's test for matmul: the main thread counts during the work only if it runs without the GIL.
    matrix = ggufmm.quantize(randn(512, 2048), "q4_0")
    experts = ggufmm.quantize(randn(4, 256, 2048, seed=1), "q4_0")
    x = randn(16, 2048)
    act = randn(16, 1, 2048)
    ids = np.tile(np.arange(4, dtype=np.int32), (16, 1))

    # Calls for a fifth of a second at least, however fast the device: the main thread counts once per 1 ms wait.
    def work():
        r = ggufmm.upload(matrix, device)
        moe = ggufmm.upload(experts, device)
        end = time.monotonic() + 0.2
        while time.monotonic() < end:
            r.matmul(x)
            moe.mul_mat_id(act, ids)
            r.dequantize()

    assert ticks_while(work) > 0
