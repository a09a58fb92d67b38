// The golden files' generator and their comparison: what a golden file holds, shared by both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace golden {

// Dense files: a [kDenseK, kDenseN] weight, multiplied by activations of each row count in kDenseRows.
inline constexpr int64_t kDenseK = 768;
inline constexpr int64_t kDenseN = 48;
inline constexpr int64_t kDenseRows[] = {1, 3, 8, 37};

// Mixture-of-experts files: kExperts weights of [kMoeK, kMoeN], kTokens tokens routed to kTopK experts each.
inline constexpr int64_t kMoeK = 256;
inline constexpr int64_t kMoeN = 48;
inline constexpr int64_t kExperts = 8;
inline constexpr int64_t kTokens = 29;
inline constexpr int64_t kTopK = 4;

// What one file is: `<type>.gguf` (dense) or `moe-<type>-<shared|perslot>.gguf`.
struct FileSpec {
  std::string type;     // ggml's name of the weight's type
  bool moe = false;
  bool shared = false;  // moe: one activation row per token, shared by its experts
  std::string stem() const;
};

// Every file of the set: one dense file per format ggufmm reads, the mixture-of-experts files for a few.
std::vector<FileSpec> all_files();
// The file named by `name`: a format ("q4_K") or a file stem ("moe-q4_K-shared"). Throws when there is none.
FileSpec file_named(const std::string& name);

// Writes `spec`'s file into `out_dir`. Its inputs (weights before quantization, activations, expert ids) are drawn
// from the generator seeded by `seed`, or, where `inputs_dir` is not empty, read from the file of the same name
// there (for a moe file, whose weights before quantization are not kept, the quantized weight too).
void write_file(const FileSpec& spec, const std::string& out_dir, const std::string& inputs_dir, uint32_t seed);

// Compares every file of `want_dir` with the file of the same name in `got_dir`, printing per file and tensor
// whether they are identical or what differs and why. Returns whether all are byte for byte identical.
bool compare_dirs(const std::string& want_dir, const std::string& got_dir);

}  // namespace golden
