// The path profile: how it steers Auto, what a bad file gets, and `ggufmm calibrate` writing one.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "ggufmm/ggufmm.hpp"
#include "kernels/kernels.hpp"
#include "runtime/cpu.hpp"
#include "temp_dir.hpp"
#include "test_support.hpp"
#include "tool_runner.hpp"

namespace ggufmm {
namespace {

class Profile : public ::testing::Test {
 protected:
  void TearDown() override { set_profile(std::nullopt); }
  std::string file(const std::string& name, const std::string& text) const {
    const std::string path = dir_.file(name);
    std::ofstream(path) << text;
    return path;
  }
  test::TempDir dir_;
};

const Weight kSmall{.type = Type::Q4_K, .k = 4096, .m = 1024, .data = reinterpret_cast<const void*>(1)};
const Weight kLarge{.type = Type::Q4_K, .k = 14336, .m = 4096, .data = reinterpret_cast<const void*>(1)};

using test::active_isa_name;

TEST_F(Profile, SteersAutoPerFormatAndShapeClass) {
  // The built-in crossovers (small weights): from 8 rows with SIMD panel decoders at this level, else q4_0 from 48,
  // q8_0 from 24.
  const bool simd_panels = kernels::find_panel_decode(runtime::active_isa(), Type::Q4_0) != nullptr;
  const Weight q4_0{.type = Type::Q4_0, .k = 4096, .m = 1024, .data = kSmall.data};
  set_profile(std::nullopt);
  EXPECT_EQ(auto_path(q4_0, simd_panels ? 7 : 47), Path::Gemv);
  EXPECT_EQ(auto_path(q4_0, simd_panels ? 8 : 48), Path::Tiled);
  set_profile(PathProfile{active_isa_name(), 2, {{Type::Q4_K, false, 48, 0}, {Type::Q4_K, true, 96, 0}}});
  EXPECT_EQ(auto_path(kSmall, 47), Path::Gemv);
  EXPECT_EQ(auto_path(kSmall, 48), Path::Tiled);
  EXPECT_EQ(auto_path(kLarge, 95), Path::Gemv);
  EXPECT_EQ(auto_path(kLarge, 96), Path::Tiled);
  const Weight other{.type = Type::Q8_0, .k = 4096, .m = 1024, .data = kSmall.data};
  EXPECT_EQ(auto_path(other, simd_panels ? 7 : 23), Path::Gemv);  // not in the profile: built in
  EXPECT_EQ(auto_path(other, simd_panels ? 8 : 24), Path::Tiled);
  // With AVX-512 panels, the IQ2 and IQ3 codebook formats go tiled from 4 or 5 rows.
  const bool avx512 = runtime::active_isa() == runtime::Isa::Avx512;
  set_profile(std::nullopt);
  const Weight iq2_xs{.type = Type::IQ2_XS, .k = 4096, .m = 1024, .data = kSmall.data};
  const Weight iq3_xxs{.type = Type::IQ3_XXS, .k = 4096, .m = 1024, .data = kSmall.data};
  EXPECT_EQ(auto_path(iq2_xs, avx512 ? 3 : 7), Path::Gemv);
  EXPECT_EQ(auto_path(iq3_xxs, avx512 ? 4 : 7), Path::Gemv);
  if (avx512) {
    EXPECT_EQ(auto_path(iq2_xs, 4), Path::Tiled);
    EXPECT_EQ(auto_path(iq3_xxs, 5), Path::Tiled);
  }
  // Measured at another kernel level: not used.
  set_profile(PathProfile{"not-this-isa", 2, {{Type::Q4_K, false, 48, 0}}});
  EXPECT_EQ(auto_path(kSmall, 24), Path::Tiled);
}

TEST_F(Profile, WrittenProfileReadsBackTheSame) {
  const PathProfile p{"avx2", 2, {{Type::IQ2_XS, true, 24, 256}, {Type::Q6_K, false, 8, 0}},
                      {{"a GPU, its driver", {{Type::Q4_K, true, 16, 128}}}}};
  const std::string path = (dir_.path() / "sub" / "profile.json").string();
  write_profile(path, p);
  const PathProfile back = read_profile(path);
  EXPECT_EQ(back.isa, "avx2");
  EXPECT_EQ(back.threads, 2);
  ASSERT_EQ(back.crossovers.size(), 2u);
  EXPECT_EQ(back.crossovers[0].type, Type::IQ2_XS);
  EXPECT_TRUE(back.crossovers[0].large);
  EXPECT_EQ(back.crossovers[0].tiled_from, 24);
  EXPECT_EQ(back.crossovers[0].dense_from, 256);
  EXPECT_EQ(back.crossovers[1].type, Type::Q6_K);
  ASSERT_EQ(back.devices.size(), 1u);
  EXPECT_EQ(back.devices[0].device, "a GPU, its driver");
  ASSERT_EQ(back.devices[0].crossovers.size(), 1u);
  EXPECT_EQ(back.devices[0].crossovers[0].type, Type::Q4_K);
  EXPECT_TRUE(back.devices[0].crossovers[0].large);
  EXPECT_EQ(back.devices[0].crossovers[0].tiled_from, 16);
  EXPECT_EQ(back.devices[0].crossovers[0].dense_from, 128);
}

TEST_F(Profile, BadFilesAreClearErrorsNamingTheFile) {
  const std::string good_entry = R"({"type": "q4_K", "class": "small", "tiled_from": 16, "dense_from": 0})";
  const std::pair<std::string, std::string> cases[] = {
      {"{not json", "not JSON"},
      {R"({"ggufmm_profile": 2, "isa": "avx2", "threads": 2, "crossovers": []})", "version 2"},
      {R"({"ggufmm_profile": 1, "isa": "avx2", "crossovers": []})", "missing or mistyped"},
      {R"({"ggufmm_profile": 1, "isa": "avx2", "threads": 2, "crossovers": [{"type": "q9_X", "class": "small",
          "tiled_from": 16, "dense_from": 0}]})", "unknown weight type 'q9_X'"},
      {R"({"ggufmm_profile": 1, "isa": "avx2", "threads": 2, "crossovers": [{"type": "q4_K", "class": "huge",
          "tiled_from": 16, "dense_from": 0}]})", "shape class 'huge'"},
      {R"({"ggufmm_profile": 1, "isa": "avx2", "threads": 2, "crossovers": [{"type": "q4_K", "class": "small",
          "tiled_from": 0, "dense_from": 0}]})", "out of range"},
      {fmt::format(R"({{"ggufmm_profile": 1, "isa": "avx2", "threads": "two", "crossovers": [{}]}})", good_entry),
       "missing or mistyped"},
      {fmt::format(R"({{"ggufmm_profile": 1, "isa": "avx2", "threads": 2, "crossovers": [{}],
          "devices": [{{"crossovers": []}}]}})", good_entry), "missing or mistyped"},
      {R"({"ggufmm_profile": 1, "isa": "avx2", "threads": 2, "crossovers": [], "devices": [{"device": "gpu",
          "crossovers": [{"type": "q4_K", "class": "small", "tiled_from": -1, "dense_from": 0}]}]})", "out of range"},
  };
  int i = 0;
  for (const auto& [text, want] : cases) {
    const std::string path = file(fmt::format("bad{}.json", i++), text);
    try {
      read_profile(path);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::BadInput);
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(read_profile(dir_.file("absent.json")), Error);
}

TEST_F(Profile, CalibrateWritesAProfile) {
  const std::string path = dir_.file("calibrated.json");
  const test::ToolRun r = test::run_tool(fmt::format("calibrate --type q4_0,iq2_xs --quick --threads 1 -o {}", path));
  ASSERT_EQ(r.status, 0) << r.output;
  const PathProfile p = read_profile(path);
  EXPECT_EQ(p.isa, active_isa_name());
  EXPECT_EQ(p.threads, 1);
  ASSERT_EQ(p.crossovers.size(), 4u);  // two formats, two shape classes
  for (const PathCrossover& c : p.crossovers) EXPECT_GE(c.tiled_from, 8);
  EXPECT_EQ(test::run_tool("calibrate --type f9 --quick -o x.json").status, 2);
}

}  // namespace
}  // namespace ggufmm
