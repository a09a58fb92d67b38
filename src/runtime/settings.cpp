#include "runtime/settings.hpp"

#include <charconv>
#include <cstdlib>

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

std::string user_directory(const char* xdg_variable, std::string_view home_default) {
  if (const char* xdg = std::getenv(xdg_variable); xdg && *xdg) return fmt::format("{}/ggufmm", xdg);
  if (const char* home = std::getenv("HOME"); home && *home) return fmt::format("{}/{}/ggufmm", home, home_default);
  return {};
}

}  // namespace ggufmm::runtime
