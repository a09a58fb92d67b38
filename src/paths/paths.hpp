// The kernel paths behind ggufmm::matmul and ggufmm::mul_mat_id. Arguments arrive validated.
#pragma once

#include <cstdint>

#include "ggufmm/ggufmm.hpp"

namespace ggufmm::paths {

struct MatmulCall {
  const Weight& w;  // one matrix (experts == 1)
  const float* x;   // [rows, k]
  int64_t rows;
  float* y;               // [rows, m]
  const float* residual;  // [rows, m] or null
  int threads;
};

struct MulMatIdCall {
  const Weight& w;  // [experts, m, k]
  const float* act;  // [tokens, act_slots, k]
  int64_t tokens;
  int64_t act_slots;
  const int32_t* ids;  // [tokens, slots], each in [0, experts)
  int64_t slots;
  float* y;               // [tokens, slots, m]
  const float* residual;  // [tokens, slots, m] or null
  int threads;
};

// Reference: dequantizes a block at a time and accumulates in f32.
void ref_matmul(const MatmulCall& call);
void ref_mul_mat_id(const MulMatIdCall& call);

}  // namespace ggufmm::paths
