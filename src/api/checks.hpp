// The checks the products make before any work, shared by the CPU's entry points and the devices', so that a
// call is refused alike (same kind, same message) wherever it runs.
#pragma once

#include <cstdint>
#include <string>

#include "ggufmm/types.hpp"

namespace ggufmm::api {

// The path a call asked for, or where it leaves the choice to Auto, the one the environment variable GGUFMM_PATH
// forces (for testing; read once); Auto when neither.
Path requested_path(Path requested);
// "tensor NAME", or "weight" for an unnamed one: how messages name a weight.
std::string label(const Weight& w);
// A weight of a known weight format, of a non-empty shape whose rows are whole blocks, with data.
void check_weight(const Weight& w);
void check_matmul(const Weight& w, int64_t rows, bool null_buffers);
void check_mul_mat_id(const Weight& w, int64_t tokens, int64_t act_slots, int64_t slots, bool null_buffers);
// Every id names one of w's experts (ids in host memory: tokens x slots).
void check_expert_ids(const Weight& w, const int32_t* ids, int64_t tokens, int64_t slots);

}  // namespace ggufmm::api
