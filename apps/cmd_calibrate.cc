// `pipelab calibrate --runs FILE.csv --gpu PRESET|FILE [--fit p1,p2] [--loo] [--out fitted.json]
// [--json report.json]`: fits a GPU spec's free parameters to measured runs (docs/calibration.md).
// Exit 0 fitted, 2 bad input (a bad row, an unknown parameter, nothing to fit).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "pipelab/base/error.h"
#include "pipelab/base/file_io.h"
#include "pipelab/base/names.h"
#include "pipelab/profiles/presets.h"
#include "pipelab/profiles/run_record.h"
#include "pipelab/sim/calibration.h"

namespace pipelab::app {
namespace {

struct CalibrateOptions {
  std::string runs;
  std::string gpu;
  std::string fit;  // comma list; "" = what the runs identify
  bool loo = false;
  std::string out;
  std::string json_out;
  std::string name;  // of the fitted spec; "" = "<gpu>-fitted"
  int max_evaluations = sim::CalibrationOptions{}.max_evaluations;
  int threads = 0;
};

std::string percent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f", 100 * fraction);
  return buf;
}

void print_report(const sim::CalibrationReport& r, std::ostream& out) {
  std::size_t width = 24;
  for (const sim::CalibratedRun& run : r.runs) width = std::max(width, run.label.size());
  char buf[512];
  auto row = [&](const std::string& line, const std::string& label, const std::string& a, const std::string& b,
                 const std::string& c, const std::string& d, const std::string& e, const std::string& f) {
    std::snprintf(buf, sizeof buf, "%5s  %-*s %11s %11s %11s %8s %8s %8s\n", line.c_str(), static_cast<int>(width),
                  label.c_str(), a.c_str(), b.c_str(), c.c_str(), d.c_str(), e.c_str(), f.c_str());
    out << buf;
  };
  auto tokens = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.0f", v);
    return std::string(b);
  };
  out << "# calibrate " << r.before.name << ": " << r.runs.size() << " runs fitted, " << r.excluded.size() << " excluded\n";
  row("line", "run", "measured", "before", "after", "error", "error", "LOO");
  row("", "", "(tok/s/GPU)", "(tok/s/GPU)", "(tok/s/GPU)", "before", "after", "error");
  row("", "", "", "", "", "(%)", "(%)", "(%)");
  for (const sim::CalibratedRun& run : r.runs) {
    row(std::to_string(run.line), run.label, tokens(run.measured), tokens(run.before), tokens(run.after),
        percent(run.error_before), percent(run.error_after), percent(run.error_loo));
  }
  for (const sim::ExcludedRun& e : r.excluded) out << "# excluded: line " << e.line << " (" << e.label << "): " << e.reason << "\n";
  std::snprintf(buf, sizeof buf, "# |error| median / max: before %.1f%% / %.1f%%, after %.1f%% / %.1f%%", 100 * r.summary_before.median_abs,
                100 * r.summary_before.max_abs, 100 * r.summary_after.median_abs, 100 * r.summary_after.max_abs);
  out << buf;
  if (r.leave_one_out && std::isfinite(r.summary_loo.median_abs)) {
    std::snprintf(buf, sizeof buf, ", leave-one-out %.1f%% / %.1f%%", 100 * r.summary_loo.median_abs, 100 * r.summary_loo.max_abs);
    out << buf;
  } else if (r.leave_one_out) {
    out << ", leave-one-out - (one run: nothing to leave out)";
  }
  std::snprintf(buf, sizeof buf, "\n# objective (mean squared log error): %.5f -> %.5f in %d evaluations\n", r.objective_before,
                r.objective_after, r.evaluations);
  out << buf;
  out << "# fitted parameters (before -> after, bounds):\n";
  for (const sim::FittedParam& p : r.params) {
    std::snprintf(buf, sizeof buf, "#   %-28s %10.4g -> %-10.4g [%g, %g]%s\n", std::string(sim::calibration_param_name(p.param)).c_str(),
                  p.before, p.after, p.bounds.lo, p.bounds.hi, p.at_bound ? "  at a bound" : "");
    out << buf;
  }
  for (const std::string& n : r.not_fitted) out << "# not fitted: " << n << "\n";
  // As many parameters as runs fit every run exactly whatever the model: the errors after the fit, and the
  // leave-one-out ones (each refit has fewer runs than parameters), then say nothing.
  if (r.params.size() >= r.runs.size()) {
    out << "# warning: " << r.params.size() << " parameters fitted to " << r.runs.size()
        << " runs: the fit is underdetermined and its errors (leave-one-out too) say little; fit fewer (--fit) or add runs\n";
  }
}

}  // namespace

void add_calibrate_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand("calibrate", "Fit a GPU spec's free parameters to measured runs (tokens/s/GPU per layout)");
  auto o = std::make_shared<CalibrateOptions>();
  cmd->add_option("--runs", o->runs, "Run table CSV: layout and measured tokens/s/GPU per row (docs/calibration.md)")->required();
  cmd->add_option("--gpu", o->gpu, "GPU preset (pipelab list gpus) or GPU JSON file to start from")->required();
  cmd->add_option("--fit", o->fit,
                  "Parameters to fit, comma-separated: " + join(names_of(sim::kCalibrationParamNames)) + " (default: those the runs identify)");
  cmd->add_flag("--loo", o->loo, "Also refit without each run and report its leave-one-out error");
  cmd->add_option("--out", o->out, "Write the fitted GPU spec JSON here (for --gpu FILE)");
  cmd->add_option("--json", o->json_out, "Write the calibration report JSON here");
  cmd->add_option("--name", o->name, "Name of the fitted GPU spec (default: <gpu name>-fitted; a preset's own name to replace it)");
  cmd->add_option("--max-evaluations", o->max_evaluations, "Objective evaluations per fit (each simulates every run)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "Runs simulated in parallel (0 = every core)")->check(CLI::Range(0, 1024))->capture_default_str();
  cmd->callback([o, cmd, &exit_code] {
    sim::CalibrationOptions options;
    if (cmd->get_option("--fit")->count() > 0) options.params = sim::parse_calibration_params(o->fit);
    options.leave_one_out = o->loo;
    options.max_evaluations = o->max_evaluations;
    options.threads = o->threads;
    if (o->loo && isatty(STDERR_FILENO)) {
      options.progress = [](int done, int total) {
        std::cerr << "\r# leave-one-out refits: " << done << "/" << total << (done == total ? "\n" : "") << std::flush;
      };
    }
    const GpuSpec gpu = load_gpu(o->gpu);
    const std::vector<RunRecord> runs = parse_run_records(read_text_file(o->runs, "run table"), o->runs);
    sim::CalibrationReport report = sim::calibrate(runs, gpu, options);
    if (!o->name.empty()) report.after.name = o->name;
    validate(report.after, "--name " + report.after.name);
    print_report(report, std::cout);
    if (!o->out.empty()) {
      write_text_file(o->out, to_json(report.after).dump(2) + "\n", "fitted GPU spec");
      std::cout << "# fitted GPU spec: " << o->out << "\n";
    }
    if (!o->json_out.empty()) {
      nlohmann::json j = sim::to_json(report);
      j["config"] = {{"runs", o->runs}, {"gpu", o->gpu}, {"fit", o->fit.empty() ? "auto" : o->fit},
                     {"loo", o->loo}, {"max_evaluations", o->max_evaluations},
                     {"name", report.after.name}};
      write_text_file(o->json_out, j.dump(2) + "\n", "calibration report");
      std::cout << "# report: " << o->json_out << "\n";
    }
    exit_code = 0;
  });
}

}  // namespace pipelab::app
