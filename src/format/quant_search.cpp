#include "format/quant_search.hpp"

namespace ggufmm::format {
namespace {

// Below this the group is treated as all zeros (ggml's GROUP_MAX_EPS).
constexpr float kAllZero = 1e-15f;

// The signed level of x for inverse scale iscale, in [-nmax, nmax).
int symmetric_level(float iscale, float x, int nmax) { return std::clamp(nearest_int(iscale * x), -nmax, nmax - 1); }

// Weighted sums of x * level and level^2 (weights x^2): the least-squares scale is sumlx / suml2.
struct Sums {
  float sumlx = 0;
  float suml2 = 0;

  void add(float x, int l) {
    const float w = x * x;
    sumlx += w * x * l;
    suml2 += w * l * l;
  }
};

}  // namespace

float search_symmetric_scale(std::span<const float> x, int nmax, uint8_t* levels) {
  const float max = signed_absmax(x);
  if (std::fabs(max) < kAllZero) {
    std::fill_n(levels, x.size(), uint8_t{0});
    return 0;
  }
  const auto sums_for = [&](float iscale) {
    Sums s;
    for (const float v : x) s.add(v, symmetric_level(iscale, v, nmax));
    return s;
  };
  const auto assign = [&](float iscale) {
    for (size_t i = 0; i < x.size(); ++i) levels[i] = static_cast<uint8_t>(symmetric_level(iscale, x[i], nmax) + nmax);
  };
  float iscale = -static_cast<float>(nmax) / max;
  Sums s = sums_for(iscale);
  assign(iscale);
  float scale = s.suml2 != 0 ? s.sumlx / s.suml2 : 0.0f;
  float best = scale * s.sumlx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / max;
    s = sums_for(iscale);
    // Compares sumlx^2 / suml2, the fit's explained energy, without dividing.
    if (s.suml2 > 0 && s.sumlx * s.sumlx > best * s.suml2) {
      assign(iscale);
      scale = s.sumlx / s.suml2;
      best = scale * s.sumlx;
    }
  }
  return scale;
}

float refine_symmetric_scale(std::span<const float> x, int nmax, uint8_t* levels) {
  const float max = signed_absmax(x);
  if (std::fabs(max) < kAllZero) {
    std::fill_n(levels, x.size(), uint8_t{0});
    return 0;
  }
  const float iscale = -static_cast<float>(nmax) / max;
  int l[64];  // signed levels; the callers' groups are 16 values
  Sums s;
  for (size_t i = 0; i < x.size(); ++i) {
    l[i] = symmetric_level(iscale, x[i], nmax);
    s.add(x[i], l[i]);
  }
  for (int pass = 0; pass < 5; ++pass) {
    bool changed = false;
    for (size_t i = 0; i < x.size(); ++i) {
      // The sums without value i, and the level i would take under their scale.
      const float w = x[i] * x[i];
      float slx = s.sumlx - w * x[i] * l[i];
      if (!(slx > 0)) continue;
      float sl2 = s.suml2 - w * l[i] * l[i];
      const int candidate = std::clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (candidate == l[i]) continue;
      slx += w * x[i] * candidate;
      sl2 += w * candidate * candidate;
      if (sl2 > 0 && slx * slx * s.suml2 > s.sumlx * s.sumlx * sl2) {
        l[i] = candidate;
        s = {slx, sl2};
        changed = true;
      }
    }
    if (!changed) break;
  }
  for (size_t i = 0; i < x.size(); ++i) levels[i] = static_cast<uint8_t>(l[i] + nmax);
  return s.suml2 > 0.0f ? s.sumlx / s.suml2 : 0.0f;
}

AffineFit search_affine(std::span<const float> x, std::span<const float> weights, int nmax, const AffineSearch& search,
                        uint8_t* levels) {
  const size_t n = x.size();
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (size_t i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  // The offset only ever lowers values: a group that is all positive still starts at zero.
  if (min > 0) min = 0;
  if (max == min) {
    std::fill_n(levels, n, uint8_t{0});
    return {0, -min};
  }
  const auto level = [&](float iscale, float v) { return std::clamp(nearest_int(iscale * (v - min)), 0, nmax); };
  const auto error = [&](float scale, float offset_min, const uint8_t* l) {
    float total = 0;
    for (size_t i = 0; i < n; ++i) {
      const float diff = scale * l[i] + offset_min - x[i];
      total += weights[i] * (search.absolute_error ? std::fabs(diff) : diff * diff);
    }
    return total;
  };

  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  for (size_t i = 0; i < n; ++i) levels[i] = static_cast<uint8_t>(level(iscale, x[i]));
  float best_error = error(scale, min, levels);

  uint8_t trial[64];  // the callers' groups are 16 or 32 values
  for (int step = 0; step <= search.steps; ++step) {
    iscale = (search.rmin + search.rdelta * static_cast<float>(step) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (size_t i = 0; i < n; ++i) {
      const int l = level(iscale, x[i]);
      trial[i] = static_cast<uint8_t>(l);
      sum_l += weights[i] * l;
      sum_l2 += weights[i] * l * l;
      sum_xl += weights[i] * l * x[i];
    }
    // Weighted least squares for x ~ scale * l + offset_min.
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    const float this_error = error(this_scale, this_min, trial);
    if (this_error < best_error) {
      std::copy_n(trial, n, levels);
      best_error = this_error;
      scale = this_scale;
      min = this_min;
    }
  }
  return {scale, -min};
}

}  // namespace ggufmm::format
