#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>
#include <numeric>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "format/registry.hpp"
#include "ggufmm/gguf.hpp"
#include "gguf/layout.hpp"

namespace ggufmm::gguf {
namespace {

// Arrays of arrays are legal; a bound keeps a file of nested empty arrays from exhausting the stack.
constexpr int kMaxArrayDepth = 8;
// A key (length), a value type and the smallest value.
constexpr uint64_t kMinMetadataBytes = sizeof(uint64_t) + sizeof(uint32_t) + 1;
// A name (length), a dimension count, a type and an offset: less than any tensor info, which has dimensions.
constexpr uint64_t kMinTensorInfoBytes = sizeof(uint64_t) + sizeof(uint32_t) + sizeof(uint32_t) + sizeof(uint64_t);

[[noreturn]] void bad_input(const std::string& message) { throw Error(Error::Kind::BadInput, message); }

// Reads little-endian fields from an image, checking every read against the bytes left. `what` names the
// part being read, for errors: "FILE: WHAT: PROBLEM".
class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, std::string_view file) : bytes_(bytes), file_(file) {}

  uint64_t offset() const { return pos_; }
  uint64_t left() const { return bytes_.size() - pos_; }

  template <class T>
  T read(std::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    std::memcpy(&value, take(sizeof(T), what), sizeof(T));
    return value;
  }

  std::string read_string(std::string_view what) {
    const auto length = read<uint64_t>(what);
    if (length > left()) {
      fail(what, fmt::format("a string of {} bytes at offset {} runs past the end of the file ({} bytes left)", length,
                             pos_, left()));
    }
    const auto* chars = reinterpret_cast<const char*>(take(length, what));
    return std::string(chars, length);
  }

  // Called before making room for `count` items, each of which takes at least `min_bytes` in the file, so
  // that a forged count fails here instead of in the allocator.
  void check_count(uint64_t count, uint64_t min_bytes, std::string_view what) const {
    if (count > left() / min_bytes) {
      fail(what, fmt::format("{} items of at least {} bytes each cannot fit in the {} bytes left at offset {}", count,
                             min_bytes, left(), pos_));
    }
  }

  // "FILE: WHAT", the start of an error message.
  std::string where(std::string_view what) const { return fmt::format("{}: {}", file_, what); }

  [[noreturn]] void fail(std::string_view what, std::string_view problem) const {
    bad_input(fmt::format("{}: {}", where(what), problem));
  }

 private:
  const uint8_t* take(uint64_t n, std::string_view what) {
    if (n > left()) {
      fail(what,
           fmt::format("truncated: {} bytes needed at offset {}, but the file ends at {}", n, pos_, bytes_.size()));
    }
    const uint8_t* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }

  std::span<const uint8_t> bytes_;
  std::string_view file_;
  uint64_t pos_ = 0;
};

uint32_t read_version(Cursor& in) {
  const auto magic = in.read<std::array<uint8_t, 4>>("header");
  if (!std::ranges::equal(magic, layout::kMagic)) {
    in.fail("header", fmt::format("not a GGUF file: it starts with bytes {:02x}, not 47 47 55 46 (\"GGUF\")",
                                  fmt::join(magic, " ")));
  }
  const auto version = in.read<uint32_t>("header");
  if (version == 2 || version == 3) return version;
  if (version == 1) in.fail("header", "GGUF version 1 is not supported (only versions 2 and 3)");
  if (const uint32_t swapped = __builtin_bswap32(version); swapped >= 1 && swapped <= 3) {
    in.fail("header", fmt::format("the header is byte-swapped (version {:#010x}): big-endian GGUF files are not "
                                  "supported",
                                  version));
  }
  in.fail("header", fmt::format("unknown GGUF version {} (only versions 2 and 3 are supported)", version));
}

ValueType read_value_type(Cursor& in, std::string_view what) {
  const auto id = in.read<uint32_t>(what);
  if (!layout::is_value_type(id)) in.fail(what, fmt::format("unknown value type {}", id));
  return static_cast<ValueType>(id);
}

// A stored number, widened the way Value keeps it.
template <class T>
Value read_number(Cursor& in, ValueType type, std::string_view what) {
  const T v = in.read<T>(what);
  if constexpr (std::is_floating_point_v<T>) {
    return {type, double{v}};
  } else if constexpr (std::is_signed_v<T>) {
    return {type, int64_t{v}};
  } else {
    return {type, uint64_t{v}};
  }
}

Value read_value(Cursor& in, ValueType type, std::string_view what, int depth) {
  switch (type) {
    case ValueType::U8:
      return read_number<uint8_t>(in, type, what);
    case ValueType::I8:
      return read_number<int8_t>(in, type, what);
    case ValueType::U16:
      return read_number<uint16_t>(in, type, what);
    case ValueType::I16:
      return read_number<int16_t>(in, type, what);
    case ValueType::U32:
      return read_number<uint32_t>(in, type, what);
    case ValueType::I32:
      return read_number<int32_t>(in, type, what);
    case ValueType::U64:
      return read_number<uint64_t>(in, type, what);
    case ValueType::I64:
      return read_number<int64_t>(in, type, what);
    case ValueType::F32:
      return read_number<float>(in, type, what);
    case ValueType::F64:
      return read_number<double>(in, type, what);
    case ValueType::Bool: {
      const auto b = in.read<uint8_t>(what);
      if (b > 1) in.fail(what, fmt::format("bool value {} at offset {} (must be 0 or 1)", b, in.offset() - 1));
      return Value::boolean(b == 1);
    }
    case ValueType::String:
      return Value::string(in.read_string(what));
    case ValueType::Array: {
      if (depth >= kMaxArrayDepth) in.fail(what, fmt::format("arrays nested more than {} deep", kMaxArrayDepth));
      Array array{read_value_type(in, what), {}};
      const auto count = in.read<uint64_t>(what);
      in.check_count(count, layout::min_size(array.type), what);
      array.items.reserve(count);
      for (uint64_t i = 0; i < count; ++i) array.items.push_back(read_value(in, array.type, what, depth + 1));
      return Value::array(std::move(array));
    }
  }
  in.fail(what, "unknown value type");  // read_value_type admits only the types above
}

std::vector<std::pair<std::string, Value>> read_metadata(Cursor& in, uint64_t count) {
  in.check_count(count, kMinMetadataBytes, "metadata");
  std::vector<std::pair<std::string, Value>> metadata;
  metadata.reserve(count);
  std::unordered_map<std::string, uint64_t> index;
  for (uint64_t i = 0; i < count; ++i) {
    std::string key = in.read_string(fmt::format("metadata key {}", i));
    const std::string what = fmt::format("metadata {}", key);
    if (key.empty()) in.fail(fmt::format("metadata key {}", i), "empty key");
    if (const auto [it, fresh] = index.try_emplace(key, i); !fresh) {
      in.fail(what, fmt::format("duplicate key (entries {} and {})", it->second, i));
    }
    const ValueType type = read_value_type(in, what);
    metadata.emplace_back(std::move(key), read_value(in, type, what, 0));
  }
  return metadata;
}

uint64_t alignment_of(const std::vector<std::pair<std::string, Value>>& metadata, const Cursor& in) {
  const auto it =
      std::ranges::find(metadata, layout::kAlignmentKey, [](const auto& kv) -> std::string_view { return kv.first; });
  if (it == metadata.end()) return layout::kDefaultAlignment;
  const std::string what = fmt::format("metadata {}", layout::kAlignmentKey);
  const Value& value = it->second;
  if (value.type != ValueType::U32) {
    in.fail(what, fmt::format("is a {}, must be a u32", value_type_name(value.type)));
  }
  const uint64_t alignment = std::get<uint64_t>(value.data);
  if (!std::has_single_bit(alignment)) in.fail(what, fmt::format("{} is not a power of two", alignment));
  return alignment;
}

std::vector<TensorInfo> read_tensor_infos(Cursor& in, uint64_t count) {
  in.check_count(count, kMinTensorInfoBytes, "tensor infos");
  std::vector<TensorInfo> tensors(count);
  std::unordered_set<std::string_view> names;  // views of the names in `tensors`, which does not reallocate
  for (uint64_t i = 0; i < count; ++i) {
    TensorInfo& t = tensors[i];
    t.name = in.read_string(fmt::format("tensor info {}", i));
    const std::string what = fmt::format("tensor {}", t.name);
    if (!names.insert(t.name).second) in.fail(what, "duplicate tensor name");
    const auto n_dims = in.read<uint32_t>(what);
    layout::check_rank(n_dims, Error::Kind::BadInput, in.where(what));
    t.shape.resize(n_dims);
    for (int64_t& dim : t.shape) dim = in.read<int64_t>(what);
    t.type = static_cast<Type>(in.read<uint32_t>(what));
    t.offset = in.read<uint64_t>(what);
    t.bytes = layout::tensor_bytes(t.type, t.shape, Error::Kind::BadInput, in.where(what));
  }
  return tensors;
}

std::string span_text(const TensorInfo& t) { return fmt::format("[offset {}, {} bytes]", t.offset, t.bytes); }

// Points each tensor into the data section at `data_start`, after checking that its bytes lie inside the
// file, at an aligned offset, and apart from every other tensor's.
void place_tensors(std::vector<TensorInfo>& tensors, std::span<const uint8_t> bytes, uint64_t data_start,
                   uint64_t alignment, const Cursor& in) {
  if (tensors.empty()) return;
  if (data_start > bytes.size()) {
    in.fail("data section",
            fmt::format("starts at offset {}, past the end of the file ({} bytes)", data_start, bytes.size()));
  }
  const uint64_t data_bytes = bytes.size() - data_start;
  for (TensorInfo& t : tensors) {
    const std::string what = fmt::format("tensor {}", t.name);
    if (t.offset % alignment != 0) {
      in.fail(what, fmt::format("data offset {} is not a multiple of the alignment {}", t.offset, alignment));
    }
    if (t.offset > data_bytes || t.bytes > data_bytes - t.offset) {
      in.fail(what, fmt::format("data {} runs past the end of the file (the data section at offset {} holds {} bytes)",
                                span_text(t), data_start, data_bytes));
    }
    t.data = bytes.data() + data_start + t.offset;
  }

  std::vector<const TensorInfo*> by_offset;
  for (const TensorInfo& t : tensors) {
    if (t.bytes > 0) by_offset.push_back(&t);
  }
  std::ranges::sort(by_offset, {}, &TensorInfo::offset);
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& before = *by_offset[i - 1];
    const TensorInfo& t = *by_offset[i];
    if (t.offset < before.offset + before.bytes) {
      in.fail(fmt::format("tensor {}", t.name),
              fmt::format("data {} overlaps tensor {} {}", span_text(t), before.name, span_text(before)));
    }
  }
}

// Closes a file descriptor on every way out of open().
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

int64_t TensorInfo::elements() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies{});
}

File File::parse(std::span<const uint8_t> bytes, std::string name) {
  File file;
  file.path_ = std::move(name);
  Cursor in(bytes, file.path_);
  file.version_ = read_version(in);
  const auto tensor_count = in.read<uint64_t>("header");
  const auto metadata_count = in.read<uint64_t>("header");
  file.metadata_ = read_metadata(in, metadata_count);
  file.alignment_ = alignment_of(file.metadata_, in);
  file.tensors_ = read_tensor_infos(in, tensor_count);
  place_tensors(file.tensors_, bytes, layout::align_up(in.offset(), file.alignment_), file.alignment_, in);
  return file;
}

File File::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) bad_input(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  const FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) bad_input(fmt::format("{}: cannot stat: {}", path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) bad_input(fmt::format("{}: not a regular file", path));
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) return parse({}, path);  // mmap refuses an empty range; parse explains what is missing
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) bad_input(fmt::format("{}: cannot map: {}", path, std::strerror(errno)));
  std::shared_ptr<const void> mapping(addr, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
  File file = parse({static_cast<const uint8_t*>(addr), size}, path);
  file.mapping_ = std::move(mapping);
  return file;
}

const Value* File::find_metadata(std::string_view key) const {
  const auto it = std::ranges::find(metadata_, key, [](const auto& kv) -> std::string_view { return kv.first; });
  return it == metadata_.end() ? nullptr : &it->second;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  const auto it = std::ranges::find(tensors_, name, &TensorInfo::name);
  return it == tensors_.end() ? nullptr : &*it;
}

const TensorInfo& File::tensor(std::string_view name) const {
  const TensorInfo* t = find_tensor(name);
  if (!t) bad_input(fmt::format("{}: no tensor named {}", path_, name));
  return *t;
}

Weight File::weight(std::string_view name) const {
  const TensorInfo& t = tensor(name);
  const std::string who = fmt::format("{}: tensor {}", path_, name);
  const TypeInfo& info = *type_info(t.type);  // the parser admits only known types
  if (!info.is_weight) bad_input(fmt::format("{}: type {} is not a weight type", who, info.name));
  if (t.shape.size() == 4 && t.shape[3] != 1) {
    bad_input(fmt::format("{}: shape [{}] is not a weight's [k, m] or [k, m, experts]", who, fmt::join(t.shape, ", ")));
  }
  if (t.elements() == 0) bad_input(fmt::format("{}: shape [{}] is empty", who, fmt::join(t.shape, ", ")));
  const auto dim = [&](size_t i) { return i < t.shape.size() ? t.shape[i] : int64_t{1}; };
  return {.type = t.type, .k = dim(0), .m = dim(1), .experts = dim(2), .data = t.data, .name = t.name};
}

std::vector<float> File::read_f32(std::string_view name) const {
  const TensorInfo& t = tensor(name);
  if (t.type != Type::F32 && t.type != Type::F16 && t.type != Type::BF16) {
    bad_input(fmt::format("{}: tensor {}: type {} cannot be read as f32 values (only f32, f16 and bf16)", path_, name,
                          type_info(t.type)->name));
  }
  std::vector<float> values(static_cast<size_t>(t.elements()));
  // An empty vector's data() may be null, which the f32 row copy (memcpy) must not be given.
  if (!values.empty()) format::find(t.type)->dequantize(t.data, values.data(), t.elements());
  return values;
}

}  // namespace ggufmm::gguf
