// The dense path: the weight's dense copy from the cache, the activations in the copy's form, and one oneDNN matmul
// that also adds the residual (as its beta).
#include <omp.h>
#include <time.h>

#include <algorithm>
#include <limits>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "format/floats.hpp"
#include "paths/paths.hpp"
#include "runtime/thread_pool.hpp"

namespace ggufmm::paths {
namespace {

using dnnl::memory;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// oneDNN as Debian builds it runs on OpenMP, whose thread count belongs to the calling thread: set for the call,
// then given back to the caller as it was.
class OmpThreads {
 public:
  explicit OmpThreads(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~OmpThreads() { omp_set_num_threads(saved_); }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int saved_;
};

// Y[rows, m] = X[rows, k] * W^T, plus what Y holds when `accumulate`. X is in the copy's form; the copy's rows are
// the columns of a [k, m] matrix, read with its padded stride.
void gemm(const DenseWeight& w, const void* x, int64_t rows, float* y, bool accumulate, int threads) {
  const memory::data_type type = w.form() == DenseForm::BF16 ? memory::data_type::bf16 : memory::data_type::f32;
  const memory::desc x_desc({rows, w.k()}, type, {w.k(), 1});
  const memory::desc w_desc({w.k(), w.m()}, type, {1, w.stride()});
  const memory::desc y_desc({rows, w.m()}, memory::data_type::f32, {w.m(), 1});
  dnnl::primitive_attr attr;
  if (accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  // Primitives come from oneDNN's own cache after the first call of a shape.
  const dnnl::matmul product(dnnl::matmul::primitive_desc(dnnl::matmul::desc(x_desc, w_desc, y_desc), attr,
                                                          cpu_engine()));
  // oneDNN takes non-const handles for every argument; it only reads the sources.
  const memory x_mem(x_desc, cpu_engine(), const_cast<void*>(x));
  const memory w_mem(w_desc, cpu_engine(), const_cast<void*>(w.data()));
  const memory y_mem(y_desc, cpu_engine(), y);
  dnnl::stream stream(cpu_engine());
  const OmpThreads omp(threads);
  product.execute(stream, {{DNNL_ARG_SRC, x_mem}, {DNNL_ARG_WEIGHTS, w_mem}, {DNNL_ARG_DST, y_mem}});
  stream.wait();
}

void multiply(const DenseWeight& w, const MatmulCall& c) {
  const int threads = runtime::ThreadPool::resolve_threads(c.threads);
  if (c.residual && c.residual != c.y) std::copy_n(c.residual, c.rows * w.m(), c.y);
  std::vector<uint16_t> x_bf16;
  if (w.form() == DenseForm::BF16) {
    x_bf16.resize(static_cast<size_t>(c.rows * w.k()));
    runtime::ThreadPool::global().run(threads, c.rows, [&](int64_t r) {
      format::quantize_bf16(c.x + r * w.k(), x_bf16.data() + r * w.k(), w.k());
    });
  }
  const void* x = x_bf16.empty() ? static_cast<const void*>(c.x) : x_bf16.data();
  gemm(w, x, c.rows, c.y, c.residual != nullptr, threads);
}

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The fastest of a few single-threaded runs of a compute-bound product in `form`, in CPU seconds; infinity where
// oneDNN cannot multiply that form on this CPU.
double time_form(DenseForm form, const Weight& w, const MatmulCall& call) {
  try {
    const DenseWeight copy(w, form, 1);
    multiply(copy, call);  // creates the primitive, outside the timing
    double best = std::numeric_limits<double>::infinity();
    for (int run = 0; run < 3; ++run) {
      const double start = thread_seconds();
      multiply(copy, call);
      best = std::min(best, thread_seconds() - start);
    }
    return best;
  } catch (const dnnl::error&) {
    return std::numeric_limits<double>::infinity();
  }
}

// bf16 halves a copy's memory and traffic, but not every CPU multiplies bf16 faster than f32: some run the bf16 dot
// product at a quarter of the f32 FMA rate, which makes f32 twice as fast. So the form is measured once per process.
// f32 has to win by a quarter to be worth twice the memory.
DenseForm measure_form() {
  constexpr int64_t kRows = 64, kK = 1024, kM = 512;
  std::vector<float> values(static_cast<size_t>(kM * kK)), x(static_cast<size_t>(kRows * kK)),
      y(static_cast<size_t>(kRows * kM));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.25f;
  std::copy_n(values.begin(), x.size(), x.begin());
  const Weight w{.type = Type::F32, .k = kK, .m = kM, .data = values.data()};
  const MatmulCall call{w, x.data(), kRows, y.data(), nullptr, 1};
  const double bf16 = time_form(DenseForm::BF16, w, call);
  const double f32 = time_form(DenseForm::F32, w, call);
  return f32 < 0.75 * bf16 ? DenseForm::F32 : DenseForm::BF16;
}

}  // namespace

DenseForm preferred_dense_form() {
  static const DenseForm form = measure_form();
  return form;
}

bool dense_would_keep(const Weight& w) {
  return DenseCache::global().would_keep(dense_bytes(w, preferred_dense_form()));
}

void dense_matmul(const MatmulCall& call) { dense_matmul(call, DenseCache::global(), preferred_dense_form()); }

void dense_matmul(const MatmulCall& call, DenseCache& cache, DenseForm form) {
  multiply(*cache.get(call.w, form, call.threads), call);
}

}  // namespace ggufmm::paths
