// The Python module `ggufmm`: a thin layer over the C++ API (ggufmm.hpp, gguf.hpp, device.hpp). Arrays are taken
// as they are, never converted or copied: an argument of the wrong dtype, layout or shape is an error. Weights view
// the memory they were made from (a file's mapping, a quantize() result, a numpy array) and keep it alive, as do
// the resident weights uploaded from them; the computations run without the GIL.
#include <pybind11/eval.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ggufmm/device.hpp"
#include "ggufmm/gguf.hpp"
#include "ggufmm/ggufmm.hpp"

namespace py = pybind11;
using namespace ggufmm;

namespace {

[[noreturn]] void fail(const char* fn, const std::string& message) {
  throw Error(Error::Kind::BadUsage, std::string(fn) + ": " + message);
}

std::string to_str(const py::handle& obj) { return py::str(obj).cast<std::string>(); }

std::string type_name_of(const py::handle& obj) { return Py_TYPE(obj.ptr())->tp_name; }

// GGUF strings are meant to be UTF-8 but nothing enforces it; surrogateescape carries any bytes through a
// read and a write unchanged.
py::str decode(const std::string& bytes) {
  PyObject* s = PyUnicode_DecodeUTF8(bytes.data(), static_cast<Py_ssize_t>(bytes.size()), "surrogateescape");
  if (!s) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

std::string encode(const py::handle& s) {
  PyObject* bytes = PyUnicode_AsEncodedString(s.ptr(), "utf-8", "surrogateescape");
  if (!bytes) throw py::error_already_set();
  return py::reinterpret_steal<py::bytes>(bytes).cast<std::string>();
}

// `obj` as a numpy array of T that the C++ code can read in place: C-contiguous and aligned.
template <class T>
py::array array_of(const py::handle& obj, const char* fn, const std::string& arg) {
  if (!py::isinstance<py::array>(obj)) fail(fn, arg + " must be a numpy array, got " + type_name_of(obj));
  auto a = py::reinterpret_borrow<py::array>(obj);
  if (!py::isinstance<py::array_t<T>>(a)) {
    fail(fn, arg + " must be " + to_str(py::dtype::of<T>()) + ", got " + to_str(a.dtype()));
  }
  if (!(a.flags() & py::array::c_style)) fail(fn, arg + " must be C-contiguous");
  if (!(a.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_)) fail(fn, arg + " must be aligned");
  return a;
}

std::string shape_of(const py::array& a) { return to_str(a.attr("shape")); }

std::string shape_str(const std::vector<py::ssize_t>& shape) { return to_str(py::tuple(py::cast(shape))); }

void require_shape(const py::array& a, const std::vector<py::ssize_t>& shape, const char* fn, const char* arg) {
  if (!std::ranges::equal(std::span(a.shape(), static_cast<size_t>(a.ndim())), shape)) {
    fail(fn, std::string(arg) + " must have shape " + shape_str(shape) + ", got " + shape_of(a));
  }
}

// A vector's values as a numpy array that owns them: no copy.
template <class T>
py::array adopt(std::vector<T> values, std::vector<py::ssize_t> shape) {
  auto owned = std::make_unique<std::vector<T>>(std::move(values));
  const T* data = owned->data();
  py::capsule base(owned.get(), [](void* p) { delete static_cast<std::vector<T>*>(p); });
  owned.release();
  return py::array_t<T>(std::move(shape), data, base);
}

// A type given by name (case-insensitive) or ggml id.
const TypeInfo& type_arg(const py::handle& type, const char* fn) {
  const TypeInfo* info = nullptr;
  if (py::isinstance<py::str>(type)) {
    info = type_info(type.cast<std::string>());
    if (!info) fail(fn, "unknown type '" + to_str(type) + "'");
  } else if (py::isinstance<py::int_>(type) && !py::isinstance<py::bool_>(type)) {
    int overflow = 0;
    const long long id = PyLong_AsLongLongAndOverflow(type.ptr(), &overflow);
    if (!overflow && id >= 0 && id <= std::numeric_limits<uint32_t>::max()) {
      info = type_info(static_cast<Type>(id));
    }
    if (!info) fail(fn, "unknown type id " + to_str(type));
  } else {
    fail(fn, "type must be a type name or a ggml type id, got " + type_name_of(type));
  }
  return *info;
}

Path path_arg(const std::string& name, const char* fn) {
  const std::optional<Path> path = path_from_name(name);
  if (!path) fail(fn, "unknown path '" + name + "' (auto, ref, gemv, tiled or dense)");
  return *path;
}

Options options_arg(const std::string& path, int threads, const char* fn) {
  if (threads < 0) fail(fn, "threads must be 0 (all cores) or more, got " + std::to_string(threads));
  return {.path = path_arg(path, fn), .threads = threads};
}

// The library's dense path caches dequantized copies keyed by a weight's address. Each owner of weight memory
// drops those copies before the memory goes, so that no later weight placed there is taken for its own.

// A mapped file, shared by the File and the Weights taken from it: unmapped when the last of them goes.
struct Mapping {
  gguf::File file;

  ~Mapping() {
    const auto& tensors = file.tensors();
    if (tensors.empty()) return;
    const uint8_t* begin = tensors.front().data;
    const uint8_t* end = begin;
    for (const gguf::TensorInfo& t : tensors) {
      begin = std::min(begin, t.data);
      end = std::max(end, t.data + t.bytes);
    }
    release_dense_copies(begin, static_cast<size_t>(end - begin));
  }
};

// The bytes quantize() made.
struct OwnedBytes {
  std::vector<uint8_t> bytes;

  ~OwnedBytes() { release_dense_copies(bytes.data(), bytes.size()); }
};

// A numpy array a Weight was made from. Destroyed with its Weight, under the GIL.
struct ReferencedArray {
  py::array array;

  ~ReferencedArray() { release_dense_copies(array.data(), static_cast<size_t>(array.nbytes())); }
};

// A weight with whatever keeps its memory alive.
struct PyWeight {
  Weight w;
  std::shared_ptr<const void> owner;

  std::vector<py::ssize_t> shape(py::ssize_t last) const {
    if (w.experts == 1) return {w.m, last};
    return {w.experts, w.m, last};
  }
};

struct PyFile {
  std::string path;
  std::shared_ptr<const Mapping> mapping;  // null once closed

  const gguf::File& file() const {
    if (!mapping) throw Error(Error::Kind::BadUsage, path + ": the file is closed");
    return mapping->file;
  }
};

PyFile open_file(const std::filesystem::path& path) {
  std::optional<gguf::File> file;
  {
    py::gil_scoped_release unlocked;
    file = gguf::File::open(path.string());
  }
  return {file->path(), std::make_shared<const Mapping>(std::move(*file))};
}

py::object to_python(const gguf::Value& value) {
  return std::visit(
      [](const auto& v) -> py::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return decode(v);
        } else if constexpr (std::is_same_v<T, gguf::Array>) {
          py::list items;
          for (const gguf::Value& item : v.items) items.append(to_python(item));
          return items;
        } else {
          return py::cast(v);
        }
      },
      value.data);
}

// A metadata scalar: int as i32 where it fits (else i64), float as f32, bool, str.
gguf::Value scalar_from_python(const py::handle& obj, const std::string& key) {
  if (py::isinstance<py::bool_>(obj)) return gguf::Value::boolean(obj.cast<bool>());
  if (py::isinstance<py::int_>(obj)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    if (overflow) fail("write_gguf", "metadata " + key + ": " + to_str(obj) + " does not fit 64 bits");
    if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
      return gguf::Value::i32(static_cast<int32_t>(v));
    }
    return gguf::Value::i64(v);
  }
  if (py::isinstance<py::float_>(obj)) return gguf::Value::f32(static_cast<float>(obj.cast<double>()));
  if (py::isinstance<py::str>(obj)) return gguf::Value::string(encode(obj));
  fail("write_gguf", "metadata " + key + " must be an int, float, bool, str or a list of one of those, got " +
                         type_name_of(obj));
}

gguf::Value from_python(const py::handle& obj, const std::string& key) {
  // GGUF stores the alignment as u32, and readers accept no other type.
  if (key == "general.alignment" && py::isinstance<py::int_>(obj) && !py::isinstance<py::bool_>(obj)) {
    const gguf::Value v = scalar_from_python(obj, key);
    if (v.type == gguf::ValueType::I32 && std::get<int64_t>(v.data) >= 0) {
      return gguf::Value::u32(static_cast<uint32_t>(std::get<int64_t>(v.data)));
    }
  }
  if (!py::isinstance<py::list>(obj)) return scalar_from_python(obj, key);
  gguf::Array array;
  for (const py::handle item : obj) {
    if (py::isinstance<py::list>(item)) fail("write_gguf", "metadata " + key + ": a list of lists is not supported");
    array.items.push_back(scalar_from_python(item, key));
  }
  if (array.items.empty()) fail("write_gguf", "metadata " + key + ": an empty list has no item type");
  // Integers are i32 unless one of them needs i64.
  const auto is_i64 = [](const gguf::Value& v) { return v.type == gguf::ValueType::I64; };
  if (std::ranges::any_of(array.items, is_i64)) {
    for (gguf::Value& v : array.items) {
      if (v.type == gguf::ValueType::I32) v = gguf::Value::i64(std::get<int64_t>(v.data));
    }
  }
  array.type = array.items.front().type;
  for (const gguf::Value& v : array.items) {
    if (v.type != array.type) fail("write_gguf", "metadata " + key + ": the list mixes item types");
  }
  return gguf::Value::array(std::move(array));
}

// Activations x (rows, k) or (k,) for a weight of one matrix, and the shape of their product: (rows, m) or (m,).
struct Activations {
  const float* x = nullptr;
  int64_t rows = 0;
  std::vector<py::ssize_t> out_shape;
};

Activations activations_arg(const Weight& w, const py::object& x_obj, const char* fn) {
  const py::array x = array_of<float>(x_obj, fn, "x");
  if ((x.ndim() != 1 && x.ndim() != 2) || x.shape(x.ndim() - 1) != w.k) {
    fail(fn, "x must have shape (rows, " + std::to_string(w.k) + ") or (" + std::to_string(w.k) + ",), got " +
                 shape_of(x));
  }
  const int64_t rows = x.ndim() == 2 ? x.shape(0) : 1;
  return {static_cast<const float*>(x.data()), rows,
          x.ndim() == 2 ? std::vector<py::ssize_t>{rows, w.m} : std::vector<py::ssize_t>{w.m}};
}

// A matmul's activations and residual, checked against the weight, and its output, allocated.
struct MatmulArgs {
  const float* x = nullptr;
  int64_t rows = 0;
  const float* residual = nullptr;
  py::array_t<float> y;
};

MatmulArgs matmul_args(const Weight& w, const py::object& x_obj, const py::object& residual_obj, const char* fn) {
  if (w.experts != 1) fail(fn, "the weight holds " + std::to_string(w.experts) + " experts; use mul_mat_id");
  const Activations x = activations_arg(w, x_obj, fn);
  MatmulArgs args{.x = x.x, .rows = x.rows};
  if (!residual_obj.is_none()) {
    const py::array r = array_of<float>(residual_obj, fn, "residual");
    require_shape(r, x.out_shape, fn, "residual");
    args.residual = static_cast<const float*>(r.data());
  }
  args.y = py::array_t<float>(x.out_shape);
  return args;
}

// The same for mul_mat_id: act (tokens, 1 or slots, k) and ids (tokens, slots) give y (tokens, slots, m).
struct MulMatIdArgs {
  const float* act = nullptr;
  const int32_t* ids = nullptr;
  int64_t tokens = 0, act_slots = 0, slots = 0;
  const float* residual = nullptr;
  py::array_t<float> y;
};

MulMatIdArgs mul_mat_id_args(const Weight& w, const py::object& act_obj, const py::object& ids_obj,
                             const py::object& residual_obj, const char* fn) {
  const py::array act = array_of<float>(act_obj, fn, "act");
  const py::array ids = array_of<int32_t>(ids_obj, fn, "ids");
  if (ids.ndim() != 2) fail(fn, "ids must have shape (tokens, slots), got " + shape_of(ids));
  const int64_t tokens = ids.shape(0), slots = ids.shape(1);
  if (act.ndim() != 3 || act.shape(0) != tokens || (act.shape(1) != 1 && act.shape(1) != slots) ||
      act.shape(2) != w.k) {
    fail(fn, "act must have shape (" + std::to_string(tokens) + ", 1 or " + std::to_string(slots) + ", " +
                 std::to_string(w.k) + ") for ids of shape " + shape_of(ids) + ", got " + shape_of(act));
  }
  MulMatIdArgs args{.act = static_cast<const float*>(act.data()),
                    .ids = static_cast<const int32_t*>(ids.data()),
                    .tokens = tokens,
                    .act_slots = act.shape(1),
                    .slots = slots};
  const std::vector<py::ssize_t> shape{tokens, slots, w.m};
  if (!residual_obj.is_none()) {
    const py::array r = array_of<float>(residual_obj, fn, "residual");
    require_shape(r, shape, fn, "residual");
    args.residual = static_cast<const float*>(r.data());
  }
  args.y = py::array_t<float>(shape);
  return args;
}

py::array matmul_py(const PyWeight& weight, const py::object& x_obj, const py::object& residual_obj,
                    const std::string& path, int threads) {
  const char* fn = "matmul";
  MatmulArgs a = matmul_args(weight.w, x_obj, residual_obj, fn);
  const Options options = options_arg(path, threads, fn);
  float* out = a.y.mutable_data();
  {
    py::gil_scoped_release unlocked;
    matmul(weight.w, a.x, a.rows, out, a.residual, options);
  }
  return a.y;
}

py::array mul_mat_id_py(const PyWeight& weight, const py::object& act_obj, const py::object& ids_obj,
                        const py::object& residual_obj, const std::string& path, int threads) {
  const char* fn = "mul_mat_id";
  MulMatIdArgs a = mul_mat_id_args(weight.w, act_obj, ids_obj, residual_obj, fn);
  const Options options = options_arg(path, threads, fn);
  float* out = a.y.mutable_data();
  {
    py::gil_scoped_release unlocked;
    mul_mat_id(weight.w, a.act, a.tokens, a.act_slots, a.ids, a.slots, out, a.residual, options);
  }
  return a.y;
}

PyWeight weight_from_blocks(const py::object& blocks_obj, const py::object& type, int64_t k, int64_t m,
                            int64_t experts) {
  const char* fn = "Weight";
  const py::array blocks = array_of<uint8_t>(blocks_obj, fn, "blocks");
  const TypeInfo& info = type_arg(type, fn);
  if (!info.is_weight) fail(fn, "type " + std::string(info.name) + " is not a weight type");
  if (k <= 0 || m <= 0 || experts <= 0) {
    fail(fn, "k, m and experts must be positive, got " + std::to_string(k) + ", " + std::to_string(m) + ", " +
                 std::to_string(experts));
  }
  if (k % info.block_size != 0) {
    fail(fn, "k = " + std::to_string(k) + " is not a multiple of the " + std::string(info.name) + " block size " +
                 std::to_string(info.block_size));
  }
  uint64_t need = 0;
  const bool overflow =
      __builtin_mul_overflow(static_cast<uint64_t>(k / info.block_size), static_cast<uint64_t>(info.block_bytes),
                             &need) ||
      __builtin_mul_overflow(need, static_cast<uint64_t>(m), &need) ||
      __builtin_mul_overflow(need, static_cast<uint64_t>(experts), &need);
  if (overflow || need != static_cast<uint64_t>(blocks.nbytes())) {
    fail(fn, "blocks hold " + std::to_string(blocks.nbytes()) + " bytes, but " + std::to_string(experts) + " x " +
                 std::to_string(m) + " x " + std::to_string(k) + " " + std::string(info.name) + " takes " +
                 (overflow ? std::string("more than 2^64") : std::to_string(need)));
  }
  const Weight w{.type = info.type, .k = k, .m = m, .experts = experts, .data = blocks.data()};
  return {w, std::make_shared<const ReferencedArray>(blocks)};
}

PyWeight quantize_py(const py::object& values_obj, const py::object& type) {
  const char* fn = "quantize";
  const py::array values = array_of<float>(values_obj, fn, "array");
  const TypeInfo& info = type_arg(type, fn);
  if (values.ndim() != 2 && values.ndim() != 3) {
    fail(fn, "array must have shape (m, k) or (experts, m, k), got " + shape_of(values));
  }
  if (values.size() == 0) fail(fn, "array is empty: " + shape_of(values));
  const int64_t k = values.shape(values.ndim() - 1);
  const int64_t m = values.shape(values.ndim() - 2);
  const int64_t experts = values.ndim() == 3 ? values.shape(0) : 1;
  const auto* src = static_cast<const float*>(values.data());
  auto owned = std::make_shared<OwnedBytes>();
  {
    py::gil_scoped_release unlocked;
    owned->bytes = quantize(info.type, src, m * experts, k);
  }
  const Weight w{.type = info.type, .k = k, .m = m, .experts = experts, .data = owned->bytes.data()};
  return {w, std::move(owned)};
}

py::array dequantize_py(const PyWeight& weight) {
  std::vector<float> values;
  {
    py::gil_scoped_release unlocked;
    values = dequantize(weight.w);
  }
  return adopt(std::move(values), weight.shape(weight.w.k));
}

// A weight uploaded to a device, with the ggufmm.Weight it came from: that keeps the host memory alive, which a
// resident weight on the CPU refers to.
struct PyResident {
  ResidentWeight resident;
  py::object weight;

  const PyWeight& source() const { return weight.cast<const PyWeight&>(); }
};

std::vector<DeviceInfo> devices_py() {
  py::gil_scoped_release unlocked;
  return devices();
}

PyResident upload_py(const py::object& weight, const py::object& device) {
  const char* fn = "upload";
  if (!py::isinstance<PyWeight>(weight)) fail(fn, "weight must be a ggufmm.Weight, got " + type_name_of(weight));
  if (!device.is_none() && !py::isinstance<py::str>(device)) {
    fail(fn, "device must be a device name or None, got " + type_name_of(device));
  }
  const Weight& w = weight.cast<const PyWeight&>().w;
  const std::optional<std::string> name =
      device.is_none() ? std::nullopt : std::optional<std::string>(device.cast<std::string>());
  std::optional<ResidentWeight> resident;
  {
    py::gil_scoped_release unlocked;
    resident.emplace(name ? Device::open(*name) : Device::from_environment(), w);
  }
  return {std::move(*resident), weight};
}

py::array resident_dequantize_py(const PyResident& r) {
  std::vector<float> values;
  {
    py::gil_scoped_release unlocked;
    values = r.resident.dequantize();
  }
  return adopt(std::move(values), r.source().shape(r.resident.weight().k));
}

py::array resident_matmul_py(const PyResident& r, const py::object& x_obj, const py::object& residual_obj,
                             const std::string& path) {
  MatmulArgs a = matmul_args(r.resident.weight(), x_obj, residual_obj, "Resident.matmul");
  const Options options = options_arg(path, 0, "Resident.matmul");
  float* out = a.y.mutable_data();
  {
    py::gil_scoped_release unlocked;
    r.resident.matmul(a.x, a.rows, out, a.residual, options);
  }
  return a.y;
}

py::array resident_mul_mat_id_py(const PyResident& r, const py::object& act_obj, const py::object& ids_obj,
                                 const py::object& residual_obj, const std::string& path) {
  MulMatIdArgs a = mul_mat_id_args(r.resident.weight(), act_obj, ids_obj, residual_obj, "Resident.mul_mat_id");
  const Options options = options_arg(path, 0, "Resident.mul_mat_id");
  float* out = a.y.mutable_data();
  {
    py::gil_scoped_release unlocked;
    r.resident.mul_mat_id(a.act, a.tokens, a.act_slots, a.ids, a.slots, out, a.residual, options);
  }
  return a.y;
}

py::array exact_matmul_py(const PyWeight& weight, const py::object& x_obj) {
  const char* fn = "exact_matmul";
  const Weight& w = weight.w;
  if (w.experts != 1) {
    fail(fn, "the weight holds " + std::to_string(w.experts) + " experts; exact_matmul takes one matrix");
  }
  Activations x = activations_arg(w, x_obj, fn);
  std::vector<double> out;
  {
    py::gil_scoped_release unlocked;
    out = exact_matmul(w, x.x, x.rows);
  }
  return adopt(std::move(out), std::move(x.out_shape));
}

double nmse_py(const py::object& got_obj, const py::object& reference_obj) {
  const char* fn = "nmse";
  const py::array got = array_of<float>(got_obj, fn, "got");
  const bool f64 = py::isinstance<py::array_t<double>>(reference_obj);
  const py::array reference =
      f64 ? array_of<double>(reference_obj, fn, "reference") : array_of<float>(reference_obj, fn, "reference");
  require_shape(reference, std::vector<py::ssize_t>(got.shape(), got.shape() + got.ndim()), fn, "reference");
  const auto n = static_cast<size_t>(got.size());
  const auto* g = static_cast<const float*>(got.data());
  return f64 ? nmse(g, static_cast<const double*>(reference.data()), n)
             : nmse(g, static_cast<const float*>(reference.data()), n);
}

void write_gguf_py(const std::filesystem::path& path, const py::object& tensors, const py::object& metadata) {
  const char* fn = "write_gguf";
  if (!py::isinstance<py::dict>(tensors)) fail(fn, "tensors must be a dict, got " + type_name_of(tensors));
  if (!metadata.is_none() && !py::isinstance<py::dict>(metadata)) {
    fail(fn, "metadata must be a dict or None, got " + type_name_of(metadata));
  }
  gguf::Writer writer;
  if (!metadata.is_none()) {
    for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(metadata)) {
      if (!py::isinstance<py::str>(key)) fail(fn, "metadata keys must be str, got " + type_name_of(key));
      std::string name = encode(key);
      gguf::Value v = from_python(value, name);
      writer.set(std::move(name), std::move(v));
    }
  }
  // The writer references the tensors' bytes: hold what owns them until it is done, as another thread may change
  // the dict while the GIL is released.
  std::vector<py::object> keep;
  for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(tensors)) {
    if (!py::isinstance<py::str>(key)) fail(fn, "tensor names must be str, got " + type_name_of(key));
    const std::string name = encode(key);
    if (py::isinstance<PyWeight>(value)) {
      const Weight& w = value.cast<const PyWeight&>().w;
      std::vector<int64_t> shape{w.k, w.m};
      if (w.experts != 1) shape.push_back(w.experts);
      writer.add_tensor(name, w.type, std::move(shape),
                        {static_cast<const uint8_t*>(w.data), w.total_bytes()});
    } else {
      if (!py::isinstance<py::array>(value)) {
        fail(fn, "tensor " + name + " must be a Weight or a float32 array, got " + type_name_of(value));
      }
      const py::array a = array_of<float>(value, fn, "tensor " + name);
      if (a.ndim() < 1 || a.ndim() > 4) fail(fn, "tensor " + name + " must have 1 to 4 dimensions, got " + shape_of(a));
      std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
      std::ranges::reverse(shape);  // ggml order: the contiguous dimension first
      writer.add_tensor(name, Type::F32, std::move(shape),
                        {static_cast<const uint8_t*>(a.data()), static_cast<size_t>(a.nbytes())});
    }
    keep.push_back(py::reinterpret_borrow<py::object>(value));
  }
  py::gil_scoped_release unlocked;
  writer.write(path.string());
}

std::string type_repr(const TypeInfo& t) {
  return "<ggufmm.TypeInfo " + std::string(t.name) + " id=" + std::to_string(static_cast<uint32_t>(t.type)) +
         " block " + std::to_string(t.block_size) + " values / " + std::to_string(t.block_bytes) + " bytes>";
}

// "'name' q4_K m=4096 k=4096 experts=8": the name and the experts where there are.
std::string weight_summary(const Weight& w) {
  std::string s = (w.name.empty() ? std::string() : "'" + w.name + "' ") + std::string(type_info(w.type)->name) +
                  " m=" + std::to_string(w.m) + " k=" + std::to_string(w.k);
  if (w.experts != 1) s += " experts=" + std::to_string(w.experts);
  return s;
}

std::string weight_repr(const PyWeight& p) { return "<ggufmm.Weight " + weight_summary(p.w) + ">"; }

std::string resident_repr(const PyResident& r) {
  return "<ggufmm.Resident " + weight_summary(r.resident.weight()) + " on " + r.resident.device().info().name + ">";
}

std::string device_repr(const DeviceInfo& d) {
  std::string s = "<ggufmm.DeviceInfo " + d.name + ": " + d.description;
  if (d.memory_bytes) s += ", " + std::to_string(d.memory_bytes >> 20) + " MiB";
  for (size_t i = 0; i < d.capabilities.size(); ++i) s += (i == 0 ? "; " : " ") + d.capabilities[i];
  return s + ">";
}

// pybind11 answers arguments that no overload of a function takes (a wrong type, a missing or unknown keyword)
// with a TypeError; the module promises ggufmm.Error for every mistake. So each function and method is wrapped in
// one that turns that TypeError, and only it, into an Error with the same message, keeping its name and docstring
// (signature included) for help(). About 0.3 us a call.
void wrap_argument_errors(py::module_& m) {
  py::dict scope;
  scope["module"] = m;
  py::exec(R"(
import functools

def argument_errors_as_error(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except TypeError as e:
            if "incompatible function arguments" in str(e) or "incompatible constructor arguments" in str(e):
                raise module.Error(str(e)) from None
            raise
    return wrapper

for name, value in list(vars(module).items()):
    if type(value).__name__ == "builtin_function_or_method":
        setattr(module, name, argument_errors_as_error(value))
    elif isinstance(value, type) and not issubclass(value, BaseException):
        for method_name, method in list(vars(value).items()):
            if type(method).__name__ == "instancemethod":
                setattr(value, method_name, argument_errors_as_error(method.__func__))
)",
           scope);
}

}  // namespace

PYBIND11_MODULE(ggufmm, m) {
  m.doc() = "Activations times GGUF-quantized weights, computed directly on the blocks (the ggufmm C++ library).";
  m.attr("__version__") = GGUFMM_VERSION;
  py::register_local_exception<Error>(m, "Error").attr("__doc__") =
      "Every error ggufmm raises: bad input (a file, a tensor, an array) or bad usage (a wrong argument), with the "
      "C++ library's message naming what is wrong.";

  py::class_<TypeInfo>(m, "TypeInfo", "Facts about a tensor type, from the format registry.")
      .def_property_readonly(
          "name", [](const TypeInfo& t) { return std::string(t.name); }, "ggml's name, e.g. \"q4_K\".")
      .def_property_readonly(
          "id", [](const TypeInfo& t) { return static_cast<uint32_t>(t.type); }, "ggml's type id, as GGUF stores it.")
      .def_readonly("block_size", &TypeInfo::block_size, "Values per block (1 for the float types).")
      .def_readonly("block_bytes", &TypeInfo::block_bytes, "Bytes per block.")
      .def_readonly("is_weight", &TypeInfo::is_weight, "Whether a Weight may have this type (not the integer types).")
      .def_readonly("can_quantize", &TypeInfo::can_quantize, "Whether ggufmm.quantize converts float32 to it.")
      .def("__repr__", &type_repr);

  py::class_<gguf::TensorInfo>(m, "TensorInfo", "A tensor of a GGUF file.")
      .def_readonly("name", &gguf::TensorInfo::name, "The tensor's name in the file.")
      .def_property_readonly(
          "type", [](const gguf::TensorInfo& t) { return std::string(type_info(t.type)->name); }, "Its type's name.")
      .def_property_readonly(
          "shape", [](const gguf::TensorInfo& t) { return py::tuple(py::cast(t.shape)); },
          "In ggml order: the first dimension is contiguous (numpy's shape reversed).")
      .def_readonly("nbytes", &gguf::TensorInfo::bytes, "The bytes its data takes in the file.")
      .def("__repr__", [](const gguf::TensorInfo& t) {
        return "<ggufmm.TensorInfo '" + t.name + "' " + std::string(type_info(t.type)->name) + " " +
               to_str(py::tuple(py::cast(t.shape))) + ">";
      });

  py::class_<PyWeight>(m, "Weight",
                       "Weights in GGUF blocks: `experts` matrices of m rows of k values. Views the memory it was "
                       "made from and keeps it alive.")
      .def(py::init(&weight_from_blocks), py::arg("blocks"), py::arg("type"), py::arg("k"), py::arg("m"),
           py::arg("experts") = 1,
           "Views a C-contiguous uint8 array of the blocks (referenced, not copied; changing its bytes afterwards "
           "leaves stale any dense copy the dense path made of them).")
      .def_property_readonly(
          "name", [](const PyWeight& p) { return p.w.name; }, "The tensor's name, where it came from a file.")
      .def_property_readonly(
          "type", [](const PyWeight& p) { return std::string(type_info(p.w.type)->name); }, "Its type's name.")
      .def_property_readonly(
          "k", [](const PyWeight& p) { return p.w.k; }, "Values per row: the activations' row length.")
      .def_property_readonly("m", [](const PyWeight& p) { return p.w.m; }, "Rows per matrix: the outputs per row.")
      .def_property_readonly(
          "experts", [](const PyWeight& p) { return p.w.experts; }, "Matrices: 1, or a mixture's experts.")
      .def_property_readonly(
          "shape", [](const PyWeight& p) { return py::tuple(py::cast(p.shape(p.w.k))); },
          "What dequantize() returns: (m, k), or (experts, m, k).")
      .def_property_readonly(
          "nbytes", [](const PyWeight& p) { return p.w.total_bytes(); }, "The bytes of its blocks.")
      .def_property_readonly(
          "blocks",
          [](const py::object& self) {
            const PyWeight& p = self.cast<const PyWeight&>();
            py::array view(py::dtype::of<uint8_t>(), p.shape(static_cast<py::ssize_t>(p.w.row_bytes())), p.w.data,
                           self);
            view.attr("setflags")(py::arg("write") = false);
            return view;
          },
          "The stored blocks, a read-only uint8 view (m, row_bytes) or (experts, m, row_bytes).")
      .def("__repr__", &weight_repr);

  py::class_<DeviceInfo>(m, "DeviceInfo", "A device weights can be uploaded to.")
      .def_readonly("name", &DeviceInfo::name, "What upload() and $GGUFMM_DEVICE take: \"cpu\", \"opencl:0\", ...")
      .def_readonly("description", &DeviceInfo::description, "The device, its platform and driver, in words.")
      .def_readonly("memory_bytes", &DeviceInfo::memory_bytes, "Its memory, in bytes (0 for the CPU).")
      .def_readonly("max_allocation", &DeviceInfo::max_allocation, "The largest single buffer, in bytes.")
      .def_readonly("capabilities", &DeviceInfo::capabilities, "Those the kernels can use (\"fp16\", ...).")
      .def("__repr__", &device_repr);

  py::class_<PyResident>(m, "Resident",
                         "A weight uploaded to a device, as stored, once. Keeps the Weight it came from alive.")
      .def_property_readonly(
          "device", [](const PyResident& r) { return r.resident.device().info().name; }, "The device's name.")
      .def_readonly("weight", &PyResident::weight, "The Weight it came from.")
      .def("dequantize", &resident_dequantize_py, "All values, computed on the device: float32 of weight.shape.")
      .def("matmul", &resident_matmul_py, py::arg("x"), py::arg("residual") = py::none(), py::arg("path") = "auto",
           "ggufmm.matmul on the device: x (rows, k) or (k,) float32 (+ residual) gives (rows, m) or (m,) float32. "
           "path: auto, gemv, tiled or dense (devices offer no ref).")
      .def("mul_mat_id", &resident_mul_mat_id_py, py::arg("act"), py::arg("ids"), py::arg("residual") = py::none(),
           py::arg("path") = "auto",
           "ggufmm.mul_mat_id on the device: act (tokens, 1 or slots, k) float32, ids (tokens, slots) int32; "
           "returns (tokens, slots, m) float32.")
      .def("__repr__", &resident_repr);

  py::class_<PyFile>(m, "File", "A memory-mapped GGUF file.")
      .def(py::init(&open_file), py::arg("path"))
      .def_readonly("path", &PyFile::path, "The path it was opened from.")
      .def_property_readonly(
          "version", [](const PyFile& f) { return f.file().version(); }, "The GGUF version, 2 or 3.")
      .def_property_readonly(
          "alignment", [](const PyFile& f) { return f.file().alignment(); }, "The tensors' data alignment, bytes.")
      .def_property_readonly(
          "metadata",
          [](const PyFile& f) {
            py::dict out;
            for (const auto& [key, value] : f.file().metadata()) out[decode(key)] = to_python(value);
            return out;
          },
          "The metadata as a dict, in file order.")
      .def_property_readonly(
          "tensors", [](const PyFile& f) { return std::vector<gguf::TensorInfo>(f.file().tensors()); },
          "Every tensor, as TensorInfo, in file order.")
      .def(
          "weight",
          [](const PyFile& f, const std::string& name) { return PyWeight{f.file().weight(name), f.mapping}; },
          py::arg("name"), "A tensor as a Weight (shape [k, m] or [k, m, experts] in ggml order).")
      .def(
          "read_f32",
          [](const PyFile& f, const std::string& name) {
            const gguf::File& file = f.file();
            // The mapping stays while the GIL is released, whatever another thread closes.
            const std::shared_ptr<const Mapping> hold = f.mapping;
            const std::vector<int64_t>& ggml_shape = file.tensor(name).shape;
            std::vector<py::ssize_t> shape(ggml_shape.rbegin(), ggml_shape.rend());
            std::vector<float> values;
            {
              py::gil_scoped_release unlocked;
              values = file.read_f32(name);
            }
            return adopt(std::move(values), std::move(shape));
          },
          py::arg("name"), "An f32, f16 or bf16 tensor as float32 values (numpy shape: the ggml shape reversed).")
      .def(
          "read_i32",
          [](const PyFile& f, const std::string& name) {
            const gguf::TensorInfo& t = f.file().tensor(name);
            if (t.type != Type::I32) {
              throw Error(Error::Kind::BadInput, f.path + ": tensor " + name + ": type " +
                                                     std::string(type_info(t.type)->name) + " is not i32");
            }
            auto hold = std::make_unique<std::shared_ptr<const Mapping>>(f.mapping);
            py::capsule base(hold.get(), [](void* p) { delete static_cast<std::shared_ptr<const Mapping>*>(p); });
            hold.release();
            py::array view(py::dtype::of<int32_t>(), std::vector<py::ssize_t>(t.shape.rbegin(), t.shape.rend()),
                           t.data, base);
            view.attr("setflags")(py::arg("write") = false);
            return view;
          },
          py::arg("name"),
          "An i32 tensor (mul_mat_id's expert ids) as a read-only int32 view of the mapping (numpy shape: the ggml "
          "shape reversed).")
      .def("close", [](PyFile& f) { f.mapping.reset(); }, "Weights taken from the file stay valid.")
      .def("__enter__",
           [](const py::object& self) {
             self.cast<const PyFile&>().file();
             return self;
           })
      .def("__exit__", [](PyFile& f, const py::args&) { f.mapping.reset(); })
      .def("__repr__", [](const PyFile& f) {
        if (!f.mapping) return "<ggufmm.File '" + f.path + "' (closed)>";
        return "<ggufmm.File '" + f.path + "' GGUF v" + std::to_string(f.mapping->file.version()) + ", " +
               std::to_string(f.mapping->file.tensors().size()) + " tensors>";
      });

  m.def("open", &open_file, py::arg("path"), "Memory-maps and validates a GGUF file.");

  m.def("matmul", &matmul_py, py::arg("weight"), py::arg("x"), py::arg("residual") = py::none(),
        py::arg("path") = "auto", py::arg("threads") = 0,
        "x (rows, k) or (k,) float32 times the weight's transpose (+ residual): (rows, m) or (m,) float32.");
  m.def("mul_mat_id", &mul_mat_id_py, py::arg("weight"), py::arg("act"), py::arg("ids"),
        py::arg("residual") = py::none(), py::arg("path") = "auto", py::arg("threads") = 0,
        "ggml's mul_mat_id: act (tokens, 1 or slots, k) float32, ids (tokens, slots) int32 expert ids; "
        "returns (tokens, slots, m) float32.");
  m.def("dequantize", &dequantize_py, py::arg("weight"), "All values of the weight, float32 of weight.shape.");
  m.def("quantize", &quantize_py, py::arg("array"), py::arg("type"),
        "Quantizes float32 (m, k) or (experts, m, k) to a Weight that owns its blocks.");
  m.def("exact_matmul", &exact_matmul_py, py::arg("weight"), py::arg("x"),
        "The exact reference product: the dequantized weights times x, summed in double (float64).");
  m.def("nmse", &nmse_py, py::arg("got"), py::arg("reference"),
        "Sum of squared error over sum of squared reference.");
  m.def(
      "type_info", [](const py::object& type) { return type_arg(type, "type_info"); }, py::arg("type"),
      "A type by name (case-insensitive) or ggml id.");
  m.def("types", &all_types, "Every tensor type.");
  m.def("paths", [] {
    std::vector<std::string> names;
    for (const Path p : available_paths()) names.emplace_back(path_name(p));
    return names;
  }, "The concrete kernel paths (\"auto\" picks among them).");
  m.def(
      "auto_path", [](const PyWeight& w, int64_t rows) { return std::string(path_name(auto_path(w.w, rows))); },
      py::arg("weight"), py::arg("rows"), "The path \"auto\" takes for this weight and row count.");
  m.def("devices", &devices_py, "Every device: the CPU, then those CUDA and OpenCL find.");
  m.def("upload", &upload_py, py::arg("weight"), py::arg("device") = py::none(),
        "The weight resident on a device by name (None: $GGUFMM_DEVICE, else \"cpu\"), uploaded once.");
  m.def("write_gguf", &write_gguf_py, py::arg("path"), py::arg("tensors"), py::arg("metadata") = py::none(),
        "Writes a GGUF v3 file, whole or not at all: tensors maps names to Weights or float32 arrays (ggml shape: "
        "the numpy shape reversed); metadata maps keys to int (i32, else i64), float (f32), bool, str or a list "
        "of one of those.");
  wrap_argument_errors(m);
}
