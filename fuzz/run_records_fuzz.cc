// Fuzz target: a run table (`pipelab calibrate --runs FILE`, the calibration set): parse_run_records,
// then for every record its label and schedule, the model with its model.* settings applied to the
// preset it names, and its resolved parallel configuration (the rules of ParallelConfig).
#include "fuzz_support.h"
#include "pipelab/profiles/presets.h"
#include "pipelab/profiles/run_record.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pipelab;
  fuzz::refusing_bad_input([&] {
    for (const RunRecord& r : parse_run_records(fuzz::as_text(data, size), "fuzz.csv")) {
      fuzz::require(!r.label().empty() && !r.schedule().empty(), "a record has a label and a schedule");
      fuzz::refusing_bad_input([&] {
        const ModelSpec model = r.model_spec(model_preset(r.model));
        (void)r.config(model);
      });
    }
  });
  return 0;
}
