// Settings read from the environment: a value that cannot be used stops the call with a message naming the
// variable, its value and what was expected.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ggufmm::runtime {

[[noreturn]] void bad_setting(std::string_view variable, const char* value, std::string_view expected);

// A whole number of 0 or more that is the variable's entire value; anything else is a bad setting.
int64_t parse_count(std::string_view variable, const char* value, std::string_view expected);

// ggufmm's directory of a kind the XDG base directories name: $XDG_VARIABLE/ggufmm, else $HOME/HOME_DEFAULT/ggufmm
// ("XDG_CONFIG_HOME" and ".config", "XDG_CACHE_HOME" and ".cache"); empty where neither variable is set.
std::string user_directory(const char* xdg_variable, std::string_view home_default);

}  // namespace ggufmm::runtime
