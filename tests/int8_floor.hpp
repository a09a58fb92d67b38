// The accuracy floor of int8 activations: the dequantized weights times the int8 activations themselves (d * q),
// summed in double. An exact integer kernel computes this; its distance from the exact product is the error of
// quantizing the activations and nothing else.
#pragma once

#include <vector>

#include "ggufmm/ggufmm.hpp"
#include "paths/activations.hpp"

namespace ggufmm::test {

inline std::vector<double> int8_floor(const Weight& w, const float* x, int rows) {
  const paths::ActivationBuffer acts(x, rows, w.k, w.type, runtime::Isa::Scalar);
  const kernels::Activations a = acts.view();
  std::vector<float> xq(static_cast<size_t>(rows * w.k));
  for (size_t i = 0; i < xq.size(); ++i) xq[i] = a.d[i / kernels::kGroup] * a.q[i];
  return exact_matmul(w, xq.data(), rows);
}

}  // namespace ggufmm::test
