// Precision: the GEMM precision of a run (bf16; fp8 on GPUs with FP8 tensor cores; nvfp4, Transformer
// Engine's NVFP4BlockScaling recipe, on GPUs with FP4 tensor cores), with the one table of its names,
// read both ways.
#pragma once

#include <array>
#include <string_view>

#include <pipelab/base/names.h>

namespace pipelab {

enum class Precision { kBf16, kFp8, kNvfp4 };

inline constexpr std::array<EnumName<Precision>, 3> kPrecisionNames = {
    {{Precision::kBf16, "bf16"}, {Precision::kFp8, "fp8"}, {Precision::kNvfp4, "nvfp4"}}};

inline std::string_view to_string(Precision precision) { return name_of(kPrecisionNames, precision); }
/// "bf16" | "fp8" | "nvfp4"; InputError naming the valid values otherwise.
inline Precision parse_precision(std::string_view text) { return parse_name(kPrecisionNames, "precision", text); }

/// Bytes per element of a tensor quantized for a GEMM at `precision`: bf16 2; FP8 1 (a per-tensor
/// scale, or MXFP8's one E8M0 byte per 32 values, left out); NVFP4 4 bits plus one E4M3 scale byte per
/// 16 values (NVIDIA, "Introducing NVFP4", 2025; the per-tensor FP32 scale left out).
constexpr double quantized_bytes(Precision precision) {
  switch (precision) {
    case Precision::kBf16: return 2.0;
    case Precision::kFp8: return 1.0;
    case Precision::kNvfp4: return 0.5 + 1.0 / 16;
  }
  return 2.0;
}

}  // namespace pipelab
