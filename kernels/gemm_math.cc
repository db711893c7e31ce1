// GemmMath names, one table used both ways.
#include <array>
#include <string>
#include <utility>

#include "pipelab/base/error.h"
#include "pipelab/kernels/device_block.h"

namespace pipelab::kernels {

namespace {

constexpr std::array<std::pair<GemmMath, std::string_view>, 3> kGemmMathNames{{
    {GemmMath::Fp32, "fp32"},
    {GemmMath::Tf32, "tf32"},
    {GemmMath::Bf16, "bf16"},
}};

}  // namespace

std::string_view gemm_math_name(GemmMath math) {
  for (const auto& [m, name] : kGemmMathNames) {
    if (m == math) return name;
  }
  return "?";
}

GemmMath parse_gemm_math(std::string_view name) {
  for (const auto& [m, n] : kGemmMathNames) {
    if (n == name) return m;
  }
  throw InputError("GEMM math '" + std::string(name) + "' is not one of fp32, tf32, bf16");
}

}  // namespace pipelab::kernels
