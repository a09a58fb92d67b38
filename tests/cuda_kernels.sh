#!/usr/bin/env bash
# The CUDA kernels as nvcc built them, checked without a GPU: ptxas's report (every kernel without a stack frame or
# spills, so that no array of a work-item's sums went to local memory) and the compute_90 PTX (the codebooks in
# global memory, not constant memory, which serializes a warp's different entries; read_bandwidth loading 16 bytes at
# a time; every quantized format's gemv loading its activation codes 16 bytes at a time, a load per row of its set).
#   tests/cuda_kernels.sh PTX PTXAS_LOG
set -euo pipefail
ptx=$1 log=$2
failed=0
fail() { echo "cuda_kernels: $*" >&2; failed=1; }

kernels=$(grep -c "Function properties for" "$log")
[ "$kernels" -gt 0 ] || fail "$log reports no kernel"
if grep "bytes stack frame" "$log" | grep -qv "^ *0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads$"; then
  fail "kernels with a stack frame or spills:"
  grep -B1 "bytes stack frame" "$log" | grep -B1 -v "^ *0 bytes stack frame, 0 bytes spill stores" | grep "for" >&2
fi

# The loads of each entry point: "name instruction count" lines.
loads=$(awk '/^\.visible \.entry / { name = $3; sub(/\(.*/, "", name) }
             /^}/ { name = "" }
             name != "" && match($0, /ld\.[a-z]+(\.[a-z0-9]+)*/) { count[name " " substr($0, RSTART, RLENGTH)]++ }
             END { for (k in count) print k, count[k] }' "$ptx")
grep -q "^\.const\|ld\.const" "$ptx" && fail "tables or loads in constant memory: $(grep -c 'ld\.const' "$ptx") loads"
grep -q "^read_bandwidth ld.global.v4.u32 " <<< "$loads" || fail "read_bandwidth: no 16-byte loads"
grep "^read_bandwidth ld\.global\." <<< "$loads" | grep -qv "v4" && fail "read_bandwidth: loads narrower than 16 bytes"
gemvs=$(grep -o "^gemv_[a-z0-9_K]*" <<< "$loads" | sort -u | grep -v "^gemv_\(f32\|f16\|bf16\)$")
[ -n "$gemvs" ] || fail "no quantized gemv kernel in $ptx"
for gemv in $gemvs; do
  wide=$(awk -v k="$gemv" '$1 == k && $2 == "ld.global.v4.u32" { print $3 }' <<< "$loads")
  [ "${wide:-0}" -ge 7 ] || fail "$gemv: ${wide:-0} 16-byte activation loads, not one per row of a set (7)"
done
[ "$failed" = 0 ] &&
  echo "cuda_kernels: $kernels kernels without stack or spills; codebooks in global memory; 16-byte loads"
exit "$failed"
