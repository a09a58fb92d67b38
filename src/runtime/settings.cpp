#include "runtime/settings.hpp"

#include <charconv>

#include <fmt/format.h>

#include "ggufmm/types.hpp"

namespace ggufmm::runtime {

void bad_setting(std::string_view variable, const char* value, std::string_view expected) {
  throw Error(Error::Kind::BadUsage, fmt::format("{}={}: expected {}", variable, value, expected));
}

int64_t parse_count(std::string_view variable, const char* value, std::string_view expected) {
  const std::string_view text(value);
  int64_t count = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (error != std::errc() || end != text.data() + text.size() || count < 0) bad_setting(variable, value, expected);
  return count;
}

}  // namespace ggufmm::runtime
