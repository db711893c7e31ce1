// Fuzz target: measured-profile JSON (parse_measured_profile). A profile that parses round-trips
// through to_json and its P2P time model is evaluated.
#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "pipelab/profiles/measured_profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pipelab;
  fuzz::refusing_bad_input([&] {
    const MeasuredProfile p = parse_measured_profile(fuzz::as_text(data, size), "fuzz.json");
    fuzz::require(measured_profile_from_json(to_json(p), "round trip") == p, "to_json reads back to the same profile");
    for (const std::int64_t bytes : {std::int64_t{0}, std::int64_t{1} << 20, std::int64_t{1} << 40}) {
      fuzz::require(p.p2p.time_ns(bytes) >= 0, "a P2P time is not negative");
    }
  });
  return 0;
}
