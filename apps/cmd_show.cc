// `pipelab show`: a schedule as a terminal grid (lock-step, one step per action), CSV or JSON.
#include <algorithm>
#include <iomanip>
#include <iostream>

#include "commands.h"
#include "pipelab/schedules/formats.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/schedules/replay.h"
#include "pipelab/schedules/text_grid.h"
#include "pipelab/schedules/validate.h"
#include "schedule_flags.h"

namespace pipelab::app {
namespace {

struct ShowOptions {
  ScheduleFlags schedule;
  std::string format = "text";
  bool lowered = false;
};

void print_text(const Schedule& s, std::ostream& os) {
  const Replay replay = replay_lockstep(s);
  const auto grid = replay.grid(s);
  os << "# " << s.name << "  pp=" << s.shape.ranks << " stages=" << s.shape.stages << " microbatches=" << s.shape.microbatches
     << " placement=" << placement_name(s.shape.placement) << "\n";
  os << "# lock-step order: one step per action, an action waits for its inputs; '.' = idle\n";
  os << render_text_grid("step", slot_texts(grid, /*compact=*/true), 0, static_cast<std::size_t>(replay.steps));
  long idle = 0;
  os << "# idle steps per rank:";
  for (const auto& row : grid) {
    const long n = std::count_if(row.begin(), row.end(), [](const Slot& x) { return !x; });
    idle += n;
    os << " " << n;
  }
  os << "\n# steps " << replay.steps << ", lock-step bubble " << std::fixed << std::setprecision(1)
     << 100.0 * static_cast<double>(idle) / static_cast<double>(replay.steps * static_cast<long>(grid.size())) << "%\n";
}

}  // namespace

void add_show_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand("show", "Print a schedule: a rank x step grid (text), or its CSV/JSON");
  auto o = std::make_shared<ShowOptions>();
  add_schedule_flags(cmd, o->schedule);
  cmd->add_option("--format", o->format, "text | csv | json")->check(CLI::IsMember({"text", "csv", "json"}))->capture_default_str();
  cmd->add_flag("--lowered", o->lowered, "With csv/json: include the SEND/RECV actions (PyTorch compute_comms)");
  cmd->callback([o, &exit_code] {
    Schedule s = make_schedule(o->schedule.schedule, o->schedule.options);
    require_valid(s);
    if (o->lowered) s = add_send_recv(s);
    if (o->format == "csv") {
      std::cout << to_csv(s);
    } else if (o->format == "json") {
      std::cout << to_json_text(s);
    } else {
      print_text(s, std::cout);
    }
    exit_code = 0;
  });
}

}  // namespace pipelab::app
