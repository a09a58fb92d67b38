#include "ggufmm/gguf.hpp"

#include <cstdlib>

// Placeholder until the reader is implemented.
namespace ggufmm::gguf {
std::string_view value_type_name(ValueType) { std::abort(); }
std::string Value::to_string(size_t) const { std::abort(); }
int64_t TensorInfo::elements() const { std::abort(); }
File File::open(const std::string&) { std::abort(); }
File File::parse(std::span<const uint8_t>, std::string) { std::abort(); }
const Value* File::find_metadata(std::string_view) const { std::abort(); }
const TensorInfo* File::find_tensor(std::string_view) const { std::abort(); }
const TensorInfo& File::tensor(std::string_view) const { std::abort(); }
Weight File::weight(std::string_view) const { std::abort(); }
std::vector<float> File::read_f32(std::string_view) const { std::abort(); }
void Writer::set(std::string, Value) { std::abort(); }
void Writer::add_tensor(std::string, Type, std::vector<int64_t>, std::span<const uint8_t>) { std::abort(); }
void Writer::write(const std::string&) const { std::abort(); }
}  // namespace ggufmm::gguf
