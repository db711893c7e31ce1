// Fuzz target: schedule JSON (parse_json). A schedule that parses is validated, its diagnostics
// are rendered with the grid, and it round-trips through to_json_text; a valid one is lowered and
// simulated with uniform costs.
#include "fuzz_support.h"
#include "schedule_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pipelab;
  const Result<Schedule> parsed = parse_json(fuzz::as_text(data, size), "fuzz.json");
  if (!parsed) {
    fuzz::require(!parsed.error().message.empty(), "a parse error carries a message");
    return 0;
  }
  const Result<Schedule> again = parse_json(to_json_text(parsed.value()), "fuzz.json");
  fuzz::require(again.ok() && again.value() == parsed.value(), "to_json_text output parses back to the same schedule");
  fuzz::check_schedule(parsed.value());
  return 0;
}
