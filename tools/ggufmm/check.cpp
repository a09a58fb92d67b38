// ggufmm check: every format through every path on random data, against the exact double-precision product; with
// --device, through that device's kernels (and its dequantization, bit for bit against the CPU's).
#include <fmt/format.h>

#include <cstring>
#include <random>
#include <string_view>

#include "commands.hpp"
#include "common.hpp"
#include "ggufmm/ggufmm.hpp"
#include "tool_support.hpp"

namespace ggufmm::cli {
namespace {

struct Shape {
  int64_t m, k_blocks, rows;
  bool residual;
};
// Odd m and row counts, one block and many, with and without residual.
constexpr Shape kShapes[] = {{1, 1, 1, false}, {37, 3, 5, true}, {64, 8, 8, false}, {19, 2, 37, true}};

// Error relative to the scale of each dot product, sum_k (x_k w_k)^2, rather than to its value: a single output
// of a short random dot product can cancel to almost nothing, and plain NMSE over one output then measures the
// cancellation, not the kernel. On outputs of typical size the two agree.
double scaled_error(const std::vector<float>& got, const std::vector<double>& exact, const std::vector<float>& w,
                    const std::vector<float>& x, int64_t m, int64_t k, int64_t rows) {
  double error = 0.0, scale = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < m; ++i) {
      double s = 0.0;
      for (int64_t j = 0; j < k; ++j) {
        const double p = static_cast<double>(x[static_cast<size_t>(r * k + j)]) * w[static_cast<size_t>(i * k + j)];
        s += p * p;
      }
      const size_t o = static_cast<size_t>(r * m + i);
      const double d = static_cast<double>(got[o]) - exact[o];
      error += d * d;
      scale += s;
    }
  }
  return scale > 0.0 ? error / scale : error;
}

double tolerance(Path path) {
  switch (path) {
    case Path::Auto:
    case Path::Ref:
      return 1e-10;
    case Path::Gemv:
    case Path::Tiled:
      return 1e-3;  // int8 activations on small random shapes (the test suite holds the golden bounds)
    case Path::Dense:
      return 1e-4;  // bf16 copies (weights and activations rounded to 8 bits) on one-block dot products
  }
  return 0.0;
}

}  // namespace

void add_check(CLI::App& app) {
  auto* cmd = app.add_subcommand("check", "run the built-in correctness suite");
  static int threads = 0;
  static std::string device_name;
  add_threads_option(*cmd, threads);
  add_device_option(*cmd, device_name);
  cmd->callback([] {
    const Device device = open_device(device_name);
    std::mt19937 rng(20261130);
    std::normal_distribution<float> normal;
    int failures = 0;
    fmt::print("{:<8}  {:<6}  {:>5}  {:>6}  {:>5}  {:>4}  {:>10}  {}\n", "format", "path", "m", "k", "rows", "res",
               "error", "result");
    for (const TypeInfo& t : all_types()) {
      if (!t.is_weight) continue;
      for (const Shape& s : kShapes) {
        const int64_t k = s.k_blocks * std::max<int64_t>(t.block_size, 32);
        const std::vector<uint8_t> bytes = support::random_weight(t.type, s.m, k, rng);
        const Weight w{.type = t.type, .k = k, .m = s.m, .data = bytes.data(), .name = "random"};
        std::vector<float> x(static_cast<size_t>(s.rows * k)), residual(static_cast<size_t>(s.rows * s.m));
        for (auto& v : x) v = normal(rng);
        for (auto& v : residual) v = normal(rng);
        std::vector<double> exact = exact_matmul(w, x.data(), s.rows);
        const std::vector<float> dense = dequantize(w);
        if (s.residual) {
          for (size_t i = 0; i < exact.size(); ++i) exact[i] += residual[i];
        }
        const auto report = [&](std::string_view label, double e, bool ok) {
          failures += ok ? 0 : 1;
          fmt::print("{:<8}  {:<6}  {:>5}  {:>6}  {:>5}  {:>4}  {:>10.3e}  {}\n", t.name, label, s.m, k, s.rows,
                     s.residual ? "yes" : "no", e, ok ? "pass" : "FAIL");
        };
        const float* add = s.residual ? residual.data() : nullptr;
        if (!device.is_cpu()) {
          const ResidentWeight resident(device, w);
          std::vector<float> y(exact.size());
          resident.matmul(x.data(), s.rows, y.data(), add);
          const double e = scaled_error(y, exact, dense, x, s.m, k, s.rows);
          report(device.info().name, e, e <= tolerance(Path::Gemv));
          const std::vector<float> values = resident.dequantize();
          const bool same = std::memcmp(values.data(), dense.data(), dense.size() * sizeof(float)) == 0;
          report("dequant", same ? 0.0 : 1.0, same);
          continue;
        }
        for (const Path path : available_paths()) {
          std::vector<float> y(exact.size());
          matmul(w, x.data(), s.rows, y.data(), add, {.path = path, .threads = threads});
          const double e = scaled_error(y, exact, dense, x, s.m, k, s.rows);
          report(path_name(path), e, e <= tolerance(path));
        }
      }
    }
    fmt::print("{}\n", failures == 0 ? "all passed" : fmt::format("{} FAILED", failures));
    if (failures > 0) throw CLI::RuntimeError(1);
  });
}

}  // namespace ggufmm::cli
