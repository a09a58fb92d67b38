// IQ2_S's codebook: format data, transcribed from ggml's table (see iq_tables.hpp for what it holds).
#include "format/iq_tables.hpp"

namespace ggufmm::format {

const uint64_t kIQ2SGrid[1024] = {
#include "format/tables/iq2_s_grid.inc"
};

}  // namespace ggufmm::format
