// libFuzzer target: the GGUF reader on arbitrary bytes. Any input must give a File or a BadInput error, and a
// File may hold no more memory than the bound gguf.hpp promises: one Value per byte of the file.
#include <cstdio>
#include <cstdlib>

#include "ggufmm/gguf.hpp"
#include "held_bytes.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ggufmm;
  try {
    const gguf::File file = gguf::File::parse({data, size}, "fuzz.gguf");
    if (const size_t held = fuzz::held_bytes(file); held > fuzz::kMaxHeldPerByte * size) {
      std::fprintf(stderr, "the reader holds %zu bytes for a %zu-byte file\n", held, size);
      std::abort();
    }
  } catch (const Error& e) {
    if (e.kind() != Error::Kind::BadInput) {
      std::fprintf(stderr, "parse threw a usage error: %s\n", e.what());
      std::abort();
    }
  }
  return 0;
}
