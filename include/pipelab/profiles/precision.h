// Precision: the GEMM precision of a run (bf16, or fp8 on GPUs with FP8 tensor cores), with the one
// table of its names, read both ways.
#pragma once

#include <array>
#include <string_view>

#include <pipelab/base/names.h>

namespace pipelab {

enum class Precision { kBf16, kFp8 };

inline constexpr std::array<EnumName<Precision>, 2> kPrecisionNames = {{{Precision::kBf16, "bf16"}, {Precision::kFp8, "fp8"}}};

inline std::string_view to_string(Precision precision) { return name_of(kPrecisionNames, precision); }
/// "bf16" | "fp8"; InputError naming the valid values otherwise.
inline Precision parse_precision(std::string_view text) { return parse_name(kPrecisionNames, "precision", text); }

}  // namespace pipelab
