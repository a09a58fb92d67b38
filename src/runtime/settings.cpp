#include "runtime/settings.hpp"

#include <fmt/format.h>

#include "ggufmm/ggufmm.hpp"

namespace ggufmm::runtime {

void bad_setting(std::string_view variable, const char* value, std::string_view expected) {
  throw Error(Error::Kind::BadUsage, fmt::format("{}={}: expected {}", variable, value, expected));
}

}  // namespace ggufmm::runtime
