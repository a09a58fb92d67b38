// ggufmm moe FILE --weight NAME --act NAME --ids NAME -o OUT.f32: ggml's mul_mat_id.
#include <fmt/format.h>

#include <cstring>

#include "commands.hpp"
#include "common.hpp"

namespace ggufmm::cli {

void add_moe(CLI::App& app) {
  auto* cmd = app.add_subcommand("moe", "mixture of experts: each token's rows times the experts its ids choose");
  static std::string path, weight, act, ids_name, out;
  static ProductOptions product;
  cmd->add_option("FILE", path, "GGUF file")->required();
  cmd->add_option("--weight", weight, "expert weights [k, m, experts]")->required();
  cmd->add_option("--act", act, "activations [k, 1 or slots, tokens] as [FILE:]NAME")->required();
  cmd->add_option("--ids", ids_name, "expert ids, i32 [slots, tokens]")->required();
  cmd->add_option("-o,--output", out, "output file: raw f32 [tokens, slots, m], row-major")->required();
  product.add_to(*cmd);
  cmd->callback([] {
    product.resolve();  // a bad --path fails before any work
    const auto file = gguf::File::open(path);
    const Weight w = file.weight(weight);
    const gguf::TensorInfo& ids = file.tensor(ids_name);
    if (ids.type != Type::I32 || ids.shape.size() > 2) {
      throw Error(Error::Kind::BadInput, fmt::format("{}: tensor {}: expert ids must be i32 [slots, tokens]", path,
                                                     ids_name));
    }
    const int64_t slots = ids.shape[0];
    const int64_t tokens = ids.shape.size() > 1 ? ids.shape[1] : 1;
    const F32Tensor x = load_f32(file, act);
    const int64_t act_slots = x.shape.size() > 1 ? x.shape[1] : 1;
    if ((act_slots != 1 && act_slots != slots) || !has_shape(x, {w.k, act_slots, tokens})) {
      wrong_shape(x, fmt::format("activations for experts {} [{}, {}, {}] with ids {} [{}, {}] must be [{}, 1 or {}, "
                                 "{}]: for each of the {} tokens, one row of {} values shared by its {} slots or "
                                 "one per slot",
                                 weight, w.k, w.m, w.experts, ids_name, slots, tokens, w.k, slots, tokens, tokens,
                                 w.k, slots));
    }
    std::vector<int32_t> id_values(static_cast<size_t>(slots * tokens));
    std::memcpy(id_values.data(), ids.data, id_values.size() * sizeof(int32_t));
    std::vector<float> y(static_cast<size_t>(tokens * slots * w.m));
    product.mul_mat_id(w, x.values.data(), tokens, act_slots, id_values.data(), slots, y.data());
    write_f32(out, y);
  });
}

}  // namespace ggufmm::cli
