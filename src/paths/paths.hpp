// The kernel paths behind ggufmm::matmul and ggufmm::mul_mat_id. Arguments arrive validated.
#pragma once

#include <cstdint>
#include <vector>

#include "ggufmm/ggufmm.hpp"
#include "kernels/kernels.hpp"

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

// Activation rows prepared for the kernels of one instruction-set level and one weight type: quantized for the
// integer kernels, used as they are by the float ones.
class ActivationBuffer {
 public:
  ActivationBuffer(const float* x, int rows, int64_t k, Type type, runtime::Isa isa);
  const kernels::Activations& view() const { return view_; }

 private:
  std::vector<int8_t> q_;
  std::vector<float> d_;
  std::vector<int16_t> qsum_;
  std::vector<float> sum_;
  kernels::Activations view_;
};

// Reference: dequantizes a block at a time and accumulates in f32.
void ref_matmul(const MatmulCall& call);
void ref_mul_mat_id(const MulMatIdCall& call);

// Decode: int8 activations, integer dot products on the blocks, for 1 to 7 rows (more are taken 7 at a time).
void gemv_matmul(const MatmulCall& call);

}  // namespace ggufmm::paths
