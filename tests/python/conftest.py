"""What the Python tests share: where the golden files are, and whether a missing one skips or fails its test.

As for the C++ suite: $GGUFMM_TESTDATA names the directory of golden GGUF files, else $GGUFMM_GOLDEN_DIR (set by
ctest), else tests/data/golden beside this directory; GGUFMM_REQUIRE_GOLDEN set to anything but "" or "0" makes
a missing file a failure instead of a skip.
"""
import os
import pathlib
import sys
import threading

import pytest

# The formats of the mixture-of-experts golden files, moe-<type>-<shared|perslot>.gguf.
MOE_TYPES = ["q4_0", "q8_0", "q4_K", "q5_K", "q6_K", "iq2_xs", "iq3_xxs"]
MOE_FILES = [f"moe-{t}-{routing}" for t in MOE_TYPES for routing in ("shared", "perslot")]
# The activation row counts n of a dense golden file's act.<n> and exact_out.<n>.
GOLDEN_ROWS = [1, 3, 8, 37]


def golden_dir():
    for var in ("GGUFMM_TESTDATA", "GGUFMM_GOLDEN_DIR"):
        if os.environ.get(var):
            return pathlib.Path(os.environ[var])
    return pathlib.Path(__file__).resolve().parent.parent / "data" / "golden"


def golden_required():
    return os.environ.get("GGUFMM_REQUIRE_GOLDEN", "") not in ("", "0")


@pytest.fixture
def golden():
    """golden(file) -> the path of a golden file; skips the test where it is missing (fails under
    GGUFMM_REQUIRE_GOLDEN)."""

    def path_of(file):
        path = golden_dir() / file
        if path.exists():
            return str(path)
        if golden_required():
            pytest.fail(f"golden file {path} not found, and GGUFMM_REQUIRE_GOLDEN requires it")
        pytest.skip(f"golden file {path} not found (set GGUFMM_TESTDATA to the directory holding the golden GGUF "
                    "files)")

    return path_of


def ticks_while(call):
    """How many times the main thread counted while call() ran in another thread. Forced thread switches are off,
    so the worker gives up the GIL only where a call releases it: a count above 0 means call() let others run."""
    started, done = threading.Event(), threading.Event()

    def work():
        started.set()
        call()
        done.set()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1000)
    try:
        worker = threading.Thread(target=work)
        worker.start()
        started.wait()
        ticks = 0
        while not done.wait(0.001):
            ticks += 1
        worker.join()
    finally:
        sys.setswitchinterval(interval)
    return ticks

