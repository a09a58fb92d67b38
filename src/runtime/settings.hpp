// Settings read from the environment: a value that cannot be used stops the call with a message naming the
// variable, its value and what was expected.
#pragma once

#include <string_view>

namespace ggufmm::runtime {

[[noreturn]] void bad_setting(std::string_view variable, const char* value, std::string_view expected);

}  // namespace ggufmm::runtime
