// Fuzz target: GPU spec JSON (parse_gpu_spec). A GPU that parses round-trips through to_json and
// its efficiency curve is evaluated across the range of GEMM sizes.
#include <cmath>

#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "pipelab/profiles/gpu_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pipelab;
  fuzz::refusing_bad_input([&] {
    const GpuSpec g = parse_gpu_spec(fuzz::as_text(data, size), "fuzz.json");
    fuzz::require(gpu_spec_from_json(to_json(g), "round trip") == g, "to_json reads back to the same GPU");
    for (const double flops : {1.0, 1e6, 1e9, 1e12, 1e15, 1e18}) {
      const double e = g.gemm_efficiency(flops);
      fuzz::require(std::isfinite(e) && e > 0 && e <= 1, "GEMM efficiency in (0, 1]");
    }
    fuzz::require(g.usable_memory_bytes() > 0, "usable memory is positive");
  });
  return 0;
}
