// ggufmm matmul FILE --weight NAME --act [FILE:]NAME [--residual [FILE:]NAME] -o OUT.f32
#include <fmt/format.h>

#include "commands.hpp"
#include "common.hpp"

namespace ggufmm::cli {

void add_matmul(CLI::App& app) {
  auto* cmd = app.add_subcommand("matmul", "Y = X * W^T (+ R): activations times a weight tensor");
  static std::string path, weight, act, residual, out;
  static ProductOptions product;
  cmd->add_option("FILE", path, "GGUF file holding the weight")->required();
  cmd->add_option("--weight", weight, "weight tensor [k, m]")->required();
  cmd->add_option("--act", act, "activations [k, n] as [FILE:]NAME (f32, f16 or bf16)")->required();
  cmd->add_option("--residual", residual, "residual [m, n] added in the output store, as [FILE:]NAME");
  cmd->add_option("-o,--output", out, "output file: raw f32 [n, m], row-major")->required();
  product.add_to(*cmd);
  cmd->callback([] {
    product.resolve();  // a bad --path fails before any work
    const auto file = gguf::File::open(path);
    const Weight w = file.weight(weight);
    if (w.experts != 1) {
      throw Error(Error::Kind::BadInput, fmt::format("{}: tensor {} holds {} experts: use `ggufmm moe`", path, weight,
                                                     w.experts));
    }
    const F32Tensor x = load_f32(file, act);
    const int64_t n = static_cast<int64_t>(x.values.size()) / w.k;
    if (!has_shape(x, {w.k, n})) {
      wrong_shape(x, fmt::format("activations for weight {} [{}, {}] must be [{}, n]: n rows of {} values, as long "
                                 "as the weight's rows",
                                 weight, w.k, w.m, w.k, w.k));
    }
    F32Tensor r;
    if (!residual.empty()) {
      r = load_f32(file, residual);
      if (!has_shape(r, {w.m, n})) {
        wrong_shape(r, fmt::format("the residual must be [{}, {}]: for each of the {} activation rows, one value "
                                   "per output of weight {} [{}, {}]",
                                   w.m, n, n, weight, w.k, w.m));
      }
    }
    std::vector<float> y(static_cast<size_t>(n * w.m));
    product.matmul(w, x.values.data(), n, y.data(), residual.empty() ? nullptr : r.values.data());
    write_f32(out, y);
  });
}

}  // namespace ggufmm::cli
