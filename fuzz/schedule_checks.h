// What the schedule fuzz targets do with a schedule that parsed: validate it and render the
// report (the grid), and when it is valid, lower it and simulate it with uniform costs. None of
// this may crash or throw anything but an InputError.
#pragma once

#include "fuzz_support.h"
#include "pipelab/schedules/formats.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/validate.h"
#include "pipelab/sim/engine.h"
#include "pipelab/sim/uniform_cost.h"

namespace pipelab::fuzz {

inline void check_schedule(const Schedule& s) {
  const Validation v = validate(s);
  if (!v.ok()) {
    require(!v.report(s).empty(), "an invalid schedule has a report");
    return;
  }
  refusing_bad_input([&] {
    const Schedule lowered = s.has_comms() ? s : add_send_recv(s);
    require(validate(lowered).ok(), "lowering a valid schedule keeps it valid");
    const sim::UniformCost cost(sim::UniformTimes{.f_ns = 10, .i_ns = 7, .w_ns = 5, .comm_ns = 3});
    const sim::SimResult r = sim::simulate(lowered, cost);
    require(r.timeline.ranks.size() == static_cast<std::size_t>(s.shape.ranks), "a timeline per rank");
  });
}

}  // namespace pipelab::fuzz
