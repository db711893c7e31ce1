// Fuzz target: model spec JSON (parse_model_spec). A model that parses round-trips through
// to_json, and its parameter counts and FLOPs per token are computed (every count must be
// representable: the reader refuses sizes whose products overflow).
#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "pipelab/profiles/flops.h"
#include "pipelab/profiles/model_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pipelab;
  fuzz::refusing_bad_input([&] {
    const ModelSpec m = parse_model_spec(fuzz::as_text(data, size), "fuzz.json");
    fuzz::require(model_spec_from_json(to_json(m), "round trip") == m, "to_json reads back to the same model");
    fuzz::require(m.total_params() > 0 && m.active_params() > 0 && m.mtp_params() >= 0, "parameter counts are positive");
  });
  return 0;
}
