// The type lists (GGUFMM_TYPES) against what follows from them: the registry's rows and every kernel level's table.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "format/blocks.hpp"
#include "format/registry.hpp"
#include "ggufmm/types.hpp"
#include "kernels/kernels.hpp"
#include "runtime/cpu.hpp"

namespace ggufmm {
namespace {

enum class Kind { Float, Quant, Data };
struct Listed {
  Type type;
  uint32_t id;
  std::string name;
  Kind kind;
  int32_t block_values;
  int32_t block_bytes;
};

template <class Block>
Listed row(Type type, uint32_t id, const char* name, Kind kind) {
  return {type, id, name, kind, Block::kValues, static_cast<int32_t>(sizeof(Block))};
}

std::vector<Listed> listed() {
#define GGUFMM_FLOAT(TYPE, id, name) row<format::Block##TYPE>(Type::TYPE, id, #name, Kind::Float),
#define GGUFMM_QUANT(TYPE, id, name) row<format::Block##TYPE>(Type::TYPE, id, #name, Kind::Quant),
#define GGUFMM_DATA(TYPE, id, name) row<format::Block##TYPE>(Type::TYPE, id, #name, Kind::Data),
  return {GGUFMM_FLOAT_TYPES(GGUFMM_FLOAT) GGUFMM_QUANT_TYPES(GGUFMM_QUANT) GGUFMM_DATA_TYPES(GGUFMM_DATA)};
#undef GGUFMM_FLOAT
#undef GGUFMM_QUANT
#undef GGUFMM_DATA
}

TEST(TypeList, EveryTypeHasOneIdAndOneName) {
  std::set<uint32_t> ids;
  std::set<std::string> names;
  for (const Listed& t : listed()) {
    EXPECT_EQ(static_cast<uint32_t>(t.type), t.id) << t.name;
    EXPECT_LT(t.id, kernels::kTypeSlots) << t.name;
    EXPECT_TRUE(ids.insert(t.id).second) << t.name << ": id " << t.id << " listed twice";
    EXPECT_TRUE(names.insert(t.name).second) << t.name << " listed twice";
  }
}

TEST(TypeList, RegistryHasARowPerListedTypeInOrder) {
  const std::vector<Listed> types = listed();
  const auto rows = format::all();
  ASSERT_EQ(rows.size(), types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    const Listed& t = types[i];
    const TypeInfo& info = rows[i].info;
    SCOPED_TRACE(t.name);
    EXPECT_EQ(info.type, t.type);
    EXPECT_EQ(info.name, t.name);
    EXPECT_EQ(info.block_size, t.block_values);
    EXPECT_EQ(info.block_bytes, t.block_bytes);
    EXPECT_EQ(info.is_weight, t.kind != Kind::Data);
    EXPECT_EQ(rows[i].dequantize != nullptr, t.kind != Kind::Data);
    EXPECT_EQ(rows[i].decode != nullptr, t.kind == Kind::Quant);
    EXPECT_EQ(rows[i].decode_run != nullptr, t.kind == Kind::Quant);
    EXPECT_EQ(format::find(t.type), &rows[i]);
  }
}

// Every level this machine runs has a gemv kernel of its own for every weight type, and the AVX-512 level a panel
// decoder for every quantized one: nothing falls back to a lower level by omission.
TEST(TypeList, EveryLevelHasEveryKernelItShould) {
  for (const runtime::Isa isa : runtime::supported_isas()) {
    const kernels::IsaKernels& level = kernels::kernels_for(isa);
    SCOPED_TRACE(std::string(runtime::isa_name(isa)));
    EXPECT_EQ(level.isa, isa);
    EXPECT_NE(level.quantize_act, nullptr);
    for (const Listed& t : listed()) {
      const size_t slot = static_cast<size_t>(t.type);
      EXPECT_EQ(level.gemv[slot] != nullptr, t.kind != Kind::Data) << t.name << ": gemv";
      EXPECT_EQ(level.panel[slot] != nullptr, isa == runtime::Isa::Avx512 && t.kind == Kind::Quant)
          << t.name << ": panel decoder";
      EXPECT_TRUE(!level.row_tiles[slot] || t.kind == Kind::Quant) << t.name << ": row tiles";
    }
  }
}

}  // namespace
}  // namespace ggufmm
