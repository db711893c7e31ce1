// The input limits of pipelab, in one place (docs/validation.md, "Limits"): bounds on what a file,
// a flag or a computation may hold, chosen far beyond any real training job, so that every number
// read is range-checked before it is multiplied and work and memory stay bounded. Input beyond a
// limit is refused with an InputError that names the field, the value and the limit; it never
// overflows, wraps or exhausts the machine. Also overflow-checked integer arithmetic for the few
// products of user numbers that are formed before a limit can be checked. Header-only.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "pipelab/base/error.h"

namespace pipelab::limits {

// ---- input size and shape --------------------------------------------------------------------

/// Largest file pipelab reads (schedules, specs, profiles, results, Megatron scripts): 256 MiB,
/// some ten times the result of a PP=64, 512-microbatch simulation with its timeline.
inline constexpr std::int64_t kMaxInputFileBytes = std::int64_t{256} << 20;
/// Deepest nesting of JSON arrays and objects (pipelab's own files nest fewer than 10 levels).
inline constexpr int kMaxJsonDepth = 64;

// ---- parallel layout ---------------------------------------------------------------------------

/// Largest world size (tp * pp * cp * dp) and pipeline ranks a configuration or a schedule may
/// have: 2^20 GPUs, some ten times the largest cluster built.
inline constexpr std::int64_t kMaxWorldSize = std::int64_t{1} << 20;
/// Largest global batch in sequences (mbs * dp * microbatches): it is an int in the config.
inline constexpr std::int64_t kMaxGlobalBatch = std::numeric_limits<std::int32_t>::max();

/// Largest FLOP count a result may state for one event, a rank or an iteration.
inline constexpr double kMaxFlops = 1e30;

// ---- simulated time ------------------------------------------------------------------------------

/// Longest duration of one action or transfer the simulator accepts, and the latest simulated
/// time: 10^17 ns (about 3.2 years). Sums of two such values cannot overflow int64.
inline constexpr std::int64_t kMaxDurationNs = 100'000'000'000'000'000;  // 1e17
inline constexpr std::int64_t kMaxSimulatedNs = kMaxDurationNs;

/// A time computed in floating point, in ns, rounded and saturated to +-(kMaxDurationNs + 1) (NaN to
/// the upper end): converting a huge double to an integer is undefined, and a saturated value is
/// still refused by whoever checks kMaxDurationNs (the simulator), naming the bound.
inline std::int64_t saturated_ns(double ns) {
  constexpr double kEdge = static_cast<double>(kMaxDurationNs + 1);
  if (!(ns < kEdge)) return kMaxDurationNs + 1;
  if (ns <= -kEdge) return -(kMaxDurationNs + 1);
  return std::llround(ns);
}

// ---- overflow-checked arithmetic -----------------------------------------------------------------

/// a * b, or nothing when the product does not fit in int64.
inline std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

/// a + b, or nothing when the sum does not fit in int64.
inline std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

/// The product of non-negative `factors`, or an InputError "<what> = <product text> exceeds the
/// limit of <limit>" as soon as a partial product passes `limit` (so it never overflows).
/// `product_text` names the factors as the user knows them ("tp*pp*cp*dp = 1048576*1048576*1*4").
inline std::int64_t product_within(std::initializer_list<std::int64_t> factors, std::int64_t limit, std::string_view what,
                                   std::string_view product_text) {
  std::int64_t product = 1;
  for (const std::int64_t f : factors) {
    const std::optional<std::int64_t> next = checked_mul(product, f);
    if (!next || *next > limit) {
      throw InputError(std::string(what) + " = " + std::string(product_text) + " exceeds the limit of " + std::to_string(limit));
    }
    product = *next;
  }
  return product;
}

}  // namespace pipelab::limits
