// Loops that hand their index to a body as a compile-time constant (body.template operator()<I>()), so that the
// body's arrays of registers stay in registers: unroll<N> for I = 0..N-1, with_rows for a call's row count, and
// paired_rows for weight rows taken one or two at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "kernels/kernels.hpp"
#include "kernels/prefetch.hpp"

namespace ggufmm::kernels {

// Calls body.template operator()<I>() for I = 0..N-1, so that indices (chunks, groups, rows) fold into constants.
template <int N, class Body>
inline void unroll(Body&& body) {
  [&]<int... I>(std::integer_sequence<int, I...>) { (body.template operator()<I>(), ...); }(
      std::make_integer_sequence<int, N>{});
}

// Calls body.template operator()<NR>() with NR = rows (1 to kMaxRowTileRows) as a compile-time constant, so that
// kernels keep one accumulator per row in registers.
template <class Body>
inline void with_rows(int rows, Body&& body) {
  static_assert(kMaxRowTileRows == 8);
  switch (rows) {
    case 1: return body.template operator()<1>();
    case 2: return body.template operator()<2>();
    case 3: return body.template operator()<3>();
    case 4: return body.template operator()<4>();
    case 5: return body.template operator()<5>();
    case 6: return body.template operator()<6>();
    case 7: return body.template operator()<7>();
    default: return body.template operator()<8>();
  }
}

// Weight rows [m0, m1) through run.template operator()<W>(o) for rows o..o+W-1: in pairs (W = 2) where a kernel
// can take two rows side by side (kCanPair) and a row is long (kLongRowBytes), else one at a time: two short rows
// side by side stream worse from memory than one at a time, long ones better (docs/performance.md, gemv drivers).
template <bool kCanPair, class Run>
inline void paired_rows(int64_t m0, int64_t m1, size_t row_bytes, Run&& run) {
  int64_t o = m0;
  if constexpr (kCanPair) {
    if (row_bytes >= kLongRowBytes) {
      for (; o + 2 <= m1; o += 2) run.template operator()<2>(o);
    }
  }
  for (; o < m1; ++o) run.template operator()<1>(o);
}

}  // namespace ggufmm::kernels
