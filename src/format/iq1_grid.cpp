// The IQ1_S and IQ1_M codebook: format data, transcribed from ggml's table (see iq_tables.hpp for what it
// holds).
#include "format/iq_tables.hpp"

namespace ggufmm::format {

const uint64_t kIQ1SGrid[2048] = {
#include "format/tables/iq1_s_grid.inc"
};

}  // namespace ggufmm::format
