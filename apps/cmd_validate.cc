// `pipelab validate FILE`: checks a schedule file (JSON or PyTorch CSV).
// Exit 0 valid, 1 invalid (diagnostics and the marked grid), 2 unreadable or malformed.
#include <iostream>

#include "commands.h"
#include "pipelab/base/error.h"
#include "pipelab/base/file_io.h"
#include "pipelab/schedules/formats.h"
#include "pipelab/schedules/validate.h"

namespace pipelab::app {
namespace {

struct ValidateOptions {
  std::string path;
  std::string format = "auto";
};

}  // namespace

void add_validate_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand("validate", "Check a schedule file (JSON, or PyTorch CSV compute_only/compute_comms)");
  auto o = std::make_shared<ValidateOptions>();
  cmd->add_option("file", o->path, "Schedule file")->required();
  cmd->add_option("--format", o->format, "auto | json | csv | compute_only | compute_comms")
      ->check(CLI::IsMember({"auto", "json", "csv", "compute_only", "compute_comms"}))
      ->capture_default_str();
  cmd->callback([o, &exit_code] {
    const std::string text = read_text_file(o->path, "schedule file");
    Result<Schedule> parsed = o->format == "json"            ? parse_json(text, o->path)
                              : o->format == "compute_only"  ? parse_csv(text, CsvFormat::ComputeOnly, o->path)
                              : o->format == "compute_comms" ? parse_csv(text, CsvFormat::ComputeComms, o->path)
                              : o->format == "csv"           ? parse_csv(text, sniff_csv_format(text), o->path)
                                                             : parse_schedule(text, o->path);
    if (!parsed) {
      const ParseError& e = parsed.error();
      throw InputError(o->path + (e.line ? ":" + std::to_string(e.line) + ":" + std::to_string(e.column) : "") + ": " + e.message);
    }
    const Schedule& s = parsed.value();
    const Validation v = validate(s);
    if (v.ok()) {
      std::cout << o->path << ": OK  pp=" << s.shape.ranks << " stages=" << s.shape.stages
                << " microbatches=" << s.shape.microbatches << " placement=" << placement_name(s.shape.placement)
                << " actions=" << s.action_count() << (s.has_comms() ? " (lowered)" : "") << "\n";
      exit_code = 0;
    } else {
      std::cout << o->path << ": INVALID, " << v.problems() << " problem(s)\n" << v.report(s);
      exit_code = 1;
    }
  });
}

}  // namespace pipelab::app
