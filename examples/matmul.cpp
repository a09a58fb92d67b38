// A weight of a GGUF file times random activations, through the C++ API: the product on the path Auto picks,
// its distance from the exact product, and the time it took.
//
//   matmul MODEL.gguf TENSOR [ROWS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <ggufmm/gguf.hpp>
#include <ggufmm/ggufmm.hpp>

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: matmul MODEL.gguf TENSOR [ROWS]\n");
    return 2;
  }
  const int64_t rows = argc > 3 ? std::atoll(argv[3]) : 1;
  try {
    const auto file = ggufmm::gguf::File::open(argv[1]);  // mmap + validation
    const ggufmm::Weight w = file.weight(argv[2]);         // a view into the mapping, no copy
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    std::vector<float> x(static_cast<size_t>(rows * w.k)), y(static_cast<size_t>(rows * w.m));
    for (float& v : x) v = normal(rng);

    const auto start = std::chrono::steady_clock::now();
    ggufmm::matmul(w, x.data(), rows, y.data());
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    const std::vector<double> exact = ggufmm::exact_matmul(w, x.data(), rows);
    const double error = ggufmm::nmse(y.data(), exact.data(), y.size());

    std::printf("%s: %s [%lld x %lld] times %lld rows on the %s path: %.3f ms, NMSE %.3g\n", argv[1], argv[2],
                static_cast<long long>(w.m), static_cast<long long>(w.k), static_cast<long long>(rows),
                ggufmm::path_name(ggufmm::auto_path(w, rows)).data(), took.count(), error);
    return error < 1e-2 ? 0 : 1;
  } catch (const ggufmm::Error& e) {
    std::fprintf(stderr, "matmul: %s\n", e.what());
    return 1;
  }
}
