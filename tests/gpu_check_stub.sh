#!/usr/bin/env bash
# scripts/gpu-check against the stub driver (tests/cuda_stub), as the first run on a GPU machine would go from a
# build made here: packed, then run from the pack. The stub runs no kernel, so the timings are nothing and most device
# tests fail; the script must still run to its end and write every table, in order, as markdown and as JSON, and
# name the failures.
#   tests/gpu_check_stub.sh BUILD_DIR STUB_DIR
set -euo pipefail
build=$1 stub=$2
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "gpu_check_stub: $*" >&2
  exit 1
}

"$root/scripts/gpu-check" --build "$build" --pack "$work/pack" --out "$work/out-pack"
tar -tJf "$work/pack/gpu-check-pack.tar.xz" > "$work/packed" || fail "--pack left no pack"
for file in ./ggufmm ./ggufmm_tests ./lib/libdnnl.so.2 ./lib/libfmt.so.9; do
  grep -qx "$file" "$work/packed" || fail "the pack holds no $file"
done
! grep -q "/lib/lib\(c\|cuda\)\.so" "$work/packed" || fail "the pack holds the C library or the CUDA driver"
# A few groups of tests: one that passes on the stub, one that fails there.
status=0
LD_LIBRARY_PATH=$stub GPU_CHECK_TESTS='Devices.*:DeviceActivations.*' \
  "$root/scripts/gpu-check" --prebuilt "$work/pack" --out "$work/out" > "$work/stdout" || status=$?
out=$work/out
[ "$status" = 1 ] || fail "exit status $status, not 1 for the failed tests"
for file in gpu-check.md gpu-check.json devices.txt decode.json tiled.json dense.json experts.json tests.tsv; do
  [ -s "$out/$file" ] || fail "no $file"
done
cmp -s "$work/stdout" "$out/gpu-check.md" || fail "what it printed is not gpu-check.md"
md=$out/gpu-check.md
# The sections in order, each with its rows.
order=$(grep -n '^## ' "$md" | cut -d: -f2- | paste -sd '|' -)
sections="## Device|## Device tests|## Decode: m = 4096, k = 14336, one row, cold"
sections+="|## Tiles and the dense path: m = 4096, k = 14336, 512 rows|## Experts: 128 of top-8, m = 768, k = 2048"
[ "$order" = "$sections" ] || fail "sections: $order"
grep -q "^cuda:0: ggufmm test stub (no GPU), compute capability 9.0, CUDA driver 13.0; 132 compute units" "$md" ||
  fail "no device line"
grep -q "^Read bandwidth [0-9.]* GB/s .* copy: [0-9.]* GB/s read and written). int8 peak [0-9.]* TOPS" "$md" ||
  fail "no measured bandwidth and peak"
grep -q "^| cuda:0 | Devices\.\* | passed | [1-9][0-9]* | 0 |" "$md" || fail "no passing group"
failing="DeviceActivations.QuantizedBitForBitAsTheCpuQuantizesThem"
grep -q "^| cuda:0 | DeviceActivations\.\* | failed | 0 | 1 | $failing |" "$md" || fail "the failing group not named"
for type in q4_0 q8_0 q4_K q5_K q6_K iq4_xs iq2_xs iq3_xxs; do
  grep -q "^| $type | [0-9.]* | [0-9.]* | [0-9.]* | 0\.\(50\|75\)\( (short)\)\{0,1\} |$" "$md" ||
    fail "no decode row for $type"
  grep -q "^| $type | tiled | " "$md" || fail "no tiled row for $type"
done
grep -q "^| q4_K | dense | .* | [0-9.]*\( (short of 0.9)\)\{0,1\} |$" "$md" || fail "no dense row beside cuBLAS"
grep -q "^| q4_K | gemm | " "$md" || fail "no bare cuBLAS row"
for routing in uniform skewed; do
  for n in 1 32 512; do
    for type in q4_K iq2_xs; do
      grep -q "^| $type | $routing | $n | " "$md" || fail "no experts row for $type, $routing, $n tokens"
    done
  done
done
python3 -m json.tool "$out/gpu-check.json" > /dev/null || fail "gpu-check.json is not JSON"
echo "gpu_check_stub: ran to its end in $(sed -n 's/.* \([0-9]*\) s in all\./\1/p' "$md") s; every table written"
