/* One transformer feed-forward block from a GGUF model, through the C API:
 *   y = x + down(silu(gate(n)) * up(n)),  n = rms_norm(x) * ffn_norm
 * with llama.cpp's tensor names (blk.L.ffn_norm/ffn_gate/ffn_up/ffn_down.weight; the norm is optional). It runs a
 * decode step (1 token) and a prefill (TOKENS tokens) on random activations, times them, and checks the prefill
 * against the same block computed on the exact reference path.
 *
 *   ffn_block MODEL.gguf [LAYER [TOKENS]]
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ggufmm/ggufmm.h>

static void check(ggufmm_status status, const char* what) {
  if (status == GGUFMM_OK) return;
  fprintf(stderr, "ffn_block: %s: %s\n", what, ggufmm_last_error());
  exit(1);
}

static void* allocate(size_t count, size_t size) {
  void* p = calloc(count, size);
  if (!p) {
    fprintf(stderr, "ffn_block: out of memory\n");
    exit(1);
  }
  return p;
}

typedef struct {
  ggufmm_weight norm, gate, up, down;
  int has_norm;
  int64_t n_embd, n_ff;
} ffn_weights;

static ggufmm_weight tensor(const ggufmm_file* file, int layer, const char* name) {
  char full[128];
  snprintf(full, sizeof full, "blk.%d.%s.weight", layer, name);
  ggufmm_weight w;
  check(ggufmm_file_weight(file, full, &w), full);
  return w;
}

static ffn_weights load(const ggufmm_file* file, int layer) {
  ffn_weights f;
  f.gate = tensor(file, layer, "ffn_gate");
  f.up = tensor(file, layer, "ffn_up");
  f.down = tensor(file, layer, "ffn_down");
  f.n_embd = f.gate.k;
  f.n_ff = f.gate.m;
  if (f.up.k != f.n_embd || f.up.m != f.n_ff || f.down.k != f.n_ff || f.down.m != f.n_embd ||
      f.gate.experts != 1 || f.up.experts != 1 || f.down.experts != 1) {
    fprintf(stderr, "ffn_block: layer %d: ffn_gate, ffn_up and ffn_down shapes do not fit one another\n", layer);
    exit(1);
  }
  char name[128];
  snprintf(name, sizeof name, "blk.%d.ffn_norm.weight", layer);
  f.has_norm = ggufmm_file_weight(file, name, &f.norm) == GGUFMM_OK;
  if (f.has_norm && (f.norm.type != 0 || f.norm.k != f.n_embd || f.norm.m != 1)) {
    fprintf(stderr, "ffn_block: %s is not %lld f32 values\n", name, (long long)f.n_embd);
    exit(1);
  }
  return f;
}

/* Scratch for `tokens` rows. */
typedef struct {
  float *normed, *gate, *up;
} ffn_scratch;

static void ffn(const ffn_weights* f, const float* x, int64_t tokens, float* y, ffn_scratch* s, ggufmm_path path) {
  const ggufmm_options options = {path, 0};
  const float* scale = f->has_norm ? (const float*)f->norm.data : NULL;
  for (int64_t t = 0; t < tokens; ++t) {
    const float* row = x + t * f->n_embd;
    double squares = 0;
    for (int64_t i = 0; i < f->n_embd; ++i) squares += (double)row[i] * row[i];
    const float inv = (float)(1.0 / sqrt(squares / (double)f->n_embd + 1e-5));
    for (int64_t i = 0; i < f->n_embd; ++i) s->normed[t * f->n_embd + i] = row[i] * inv * (scale ? scale[i] : 1.0f);
  }
  check(ggufmm_matmul(&f->gate, s->normed, tokens, s->gate, NULL, &options), "ffn_gate");
  check(ggufmm_matmul(&f->up, s->normed, tokens, s->up, NULL, &options), "ffn_up");
  for (int64_t i = 0; i < tokens * f->n_ff; ++i) {
    const float g = s->gate[i];
    s->gate[i] = g / (1.0f + expf(-g)) * s->up[i];
  }
  check(ggufmm_matmul(&f->down, s->gate, tokens, y, x, &options), "ffn_down"); /* x is the residual */
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Median of `runs` timings of the block, in milliseconds. */
static double time_ms(const ffn_weights* f, const float* x, int64_t tokens, float* y, ffn_scratch* s) {
  enum { runs = 7 };
  double t[runs];
  for (int r = 0; r < runs; ++r) {
    const double start = seconds();
    ffn(f, x, tokens, y, s, GGUFMM_PATH_AUTO);
    t[r] = (seconds() - start) * 1e3;
  }
  for (int i = 1; i < runs; ++i) {
    for (int j = i; j > 0 && t[j - 1] > t[j]; --j) {
      const double swap = t[j];
      t[j] = t[j - 1];
      t[j - 1] = swap;
    }
  }
  return t[runs / 2];
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: ffn_block MODEL.gguf [LAYER [TOKENS]]\n");
    return 2;
  }
  const int layer = argc > 2 ? atoi(argv[2]) : 0;
  const int64_t tokens = argc > 3 ? atoll(argv[3]) : 32;
  if (layer < 0 || tokens < 1) {
    fprintf(stderr, "ffn_block: LAYER must be 0 or more and TOKENS 1 or more\n");
    return 2;
  }

  ggufmm_file* file;
  check(ggufmm_file_open(argv[1], &file), "open");
  const ffn_weights f = load(file, layer);
  printf("%s layer %d: n_embd %lld, n_ff %lld; gate %s, up %s, down %s%s\n", argv[1], layer, (long long)f.n_embd,
         (long long)f.n_ff, ggufmm_type_name(f.gate.type), ggufmm_type_name(f.up.type),
         ggufmm_type_name(f.down.type), f.has_norm ? "" : " (no ffn_norm)");

  const size_t embd = (size_t)(tokens * f.n_embd), ff = (size_t)(tokens * f.n_ff);
  float* x = allocate(embd, sizeof(float));
  float* y = allocate(embd, sizeof(float));
  float* exact = allocate(embd, sizeof(float));
  ffn_scratch s = {allocate(embd, sizeof(float)), allocate(ff, sizeof(float)), allocate(ff, sizeof(float))};
  uint32_t state = 12345u; /* a fixed sequence of values in [-1, 1) */
  for (size_t i = 0; i < embd; ++i) {
    state = state * 1664525u + 1013904223u;
    x[i] = (float)(state >> 8) / 8388608.0f - 1.0f;
  }

  const double decode = time_ms(&f, x, 1, y, &s);
  const double prefill = time_ms(&f, x, tokens, y, &s);
  ffn(&f, x, tokens, exact, &s, GGUFMM_PATH_REF);
  double error = 0, reference = 0;
  for (size_t i = 0; i < embd; ++i) {
    const double d = (double)y[i] - exact[i], r = (double)exact[i] - x[i]; /* the block's own output, less x */
    error += d * d;
    reference += r * r;
  }
  const double nmse = reference > 0 ? error / reference : 0;
  printf("decode  (1 token):   %8.3f ms\n", decode);
  printf("prefill (%lld tokens): %8.3f ms, %.3f ms per token\n", (long long)tokens, prefill, prefill / (double)tokens);
  printf("NMSE of the block's output (less the residual) against the exact path: %.3g\n", nmse);

  free(x);
  free(y);
  free(exact);
  free(s.normed);
  free(s.gate);
  free(s.up);
  ggufmm_file_close(file);
  /* int8 activations against 4-bit weights stay near 1e-4; far more means a wrong product. */
  return nmse < 1e-2 ? 0 : 1;
}
