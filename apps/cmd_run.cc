// `pipelab run`: executes a schedule on the mock model for real (cpu backend; in-process threads or
// MPI processes), predicts the same schedule with the simulator and the profiled cost model, and
// writes both timelines with their comparison (result JSON, kind "run"; docs/runtime.md).
#include <chrono>
#include <cmath>
#include <iostream>
#include <utility>
#include <vector>
#include <memory>

#include "commands.h"
#include "model_flags.h"
#include "pipelab/base/error.h"
#include "pipelab/kernels/blas.h"
#include "pipelab/reports/write.h"
#include "pipelab/runtime/gradients.h"
#include "pipelab/runtime/machine.h"
#include "pipelab/runtime/mpi_transport.h"
#include "pipelab/runtime/run.h"
#include "pipelab/runtime/run_support.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/metrics.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/schedules/validate.h"
#include "pipelab/sim/engine.h"
#include "pipelab/sim/profiled_cost.h"
#include "run_result.h"
#include "schedule_flags.h"

namespace pipelab::app {
namespace {

// --wait: one table of names and policies; the flag accepts its names, the run looks the policy up.
const std::vector<std::pair<std::string, runtime::WaitPolicy>> kWaitPolicies{
    {"auto", runtime::WaitPolicy::Auto}, {"spin", runtime::WaitPolicy::Spin}, {"block", runtime::WaitPolicy::Block}};

runtime::WaitPolicy wait_policy(const std::string& name) {
  for (const auto& [key, policy] : kWaitPolicies) {
    if (key == name) return policy;
  }
  throw InputError("--wait " + name + " is not a wait policy");  // the flag's check keeps this out
}

struct RunCommandOptions {
  ScheduleFlags schedule{.schedule = "1f1b", .options = {.pp = 2, .vp = 0, .microbatches = 8, .group_size = 0}};
  runtime::ModelConfig model = default_mock_model();
  std::string backend = "cpu";
  std::string transport = "inproc";
  int iterations = 5;
  int warmup = 2;
  std::string profile;
  std::string save_profile;
  int profile_repeats = 20;
  bool check_gradients = false;
  bool check_fidelity = false;
  std::string json_out;
  std::string report_out;
  int timeout_ms = 60'000;
  bool no_pin = false;
  std::string wait = "auto";  // a name of kWaitPolicies
};

// The resolved configuration the result echoes.
nlohmann::json run_config(const RunCommandOptions& o, const PipelineShape& shape, const runtime::RunProfile& profile,
                          int cores, const std::vector<std::string>& warnings) {
  const runtime::ModelConfig& m = o.model;
  const int P = shape.ranks;
  return {{"schedule", find_schedule(o.schedule.schedule).name},
          {"backend", o.backend},
          {"transport", o.transport},
          {"cost_model", "profiled"},
          {"stages", shape.stages},
          {"model",
           {{"name", "mock-transformer"},
            {"hidden", m.block.hidden},
            {"ffn", m.block.ffn},
            {"heads", m.block.heads},
            {"seq", m.block.seq},
            {"mbs", m.block.mbs},
            {"swiglu", m.block.swiglu},
            {"layers_per_stage", m.layers_per_stage},
            {"num_layers", shape.stages_per_chain() * m.layers_per_stage},
            {"seed", m.seed}}},
          {"parallel",
           {{"pp", P},
            {"vp", shape.stages / P},
            {"microbatches", shape.microbatches},
            {"mbs", m.block.mbs},
            {"seq_length", m.block.seq},
            {"gpus", P},
            {"stage_layers", std::vector<int>(static_cast<std::size_t>(shape.stages), m.layers_per_stage)}}},
          {"iterations", o.iterations},
          {"warmup", o.warmup},
          {"timeout_ms", o.timeout_ms},
          {"profile", profile.source},
          {"profile_layers_per_stage", profile.profile.layers_per_stage},
          {"p2p_latency_ns", profile.profile.p2p.latency_ns},
          {"p2p_bandwidth_bytes_per_s", profile.profile.p2p.bandwidth_bytes_per_s},
          {"device", runtime::cpu_model_name()},
          {"cores", cores},
          {"pinned", !o.no_pin && P <= cores},
          {"wait", o.wait},
          {"warnings", warnings}};
}

std::string off_profile_warning(std::size_t rank, double ratio) {
  return "rank " + std::to_string(rank) + "'s actions ran " + std::to_string(std::lround(100 * (ratio - 1.0))) +
         "% off their profiled time (median): the machine was busier or faster than when profiled, or another "
         "process shared the rank's core";
}

int run(const RunCommandOptions& o) {
  // Step 1: the schedule, exactly as the simulator sees it (lowered with explicit SEND/RECV).
  const Schedule compute = make_schedule(o.schedule.schedule, o.schedule.options);
  require_valid(compute);
  const Schedule lowered = add_send_recv(compute);
  const PipelineShape& shape = lowered.shape;
  o.model.validate();
  const int P = shape.ranks;
  // Processes may each be bound to one core by the MPI launcher: count the node's cores then.
  const int cores = o.transport == "mpi" ? runtime::online_cores() : runtime::hardware_cores();
  std::vector<std::string> warnings;
  if (const std::string w = runtime::core_sharing_warning(P, cores); !w.empty()) warnings.push_back(w);
  runtime::configure_allocator();
  kernels::set_blas_threads(1);
  const auto timeout = std::chrono::milliseconds(o.timeout_ms);
  const runtime::WaitPolicy wait = wait_policy(o.wait);

  // With MPI every process runs this; each makes its transports from the session when it needs
  // them (runtime::profile_for_run and runtime::run_cpu_distributed own them, each destroying its
  // transport before the buffer pool the transport's messages use).
  std::unique_ptr<runtime::MpiSession> mpi;
  runtime::TransportFactory make_transport;
  int rank = 0;
  if (o.transport == "mpi") {
    mpi = std::make_unique<runtime::MpiSession>();
    if (mpi->size() != P) {
      throw ConfigError("--transport mpi: the schedule has pp=" + std::to_string(P) + " ranks but " +
                        std::to_string(mpi->size()) + " MPI processes run (mpirun -np " + std::to_string(P) + ")");
    }
    rank = mpi->rank();
    make_transport = [&mpi, &shape, wait] { return mpi->transport(shape, wait); };
  }

  // Step 2: the profile the prediction uses (given, or measured now on this machine).
  const runtime::RunProfile profile = runtime::profile_for_run({.path = o.profile,
                                                                .save_path = o.save_profile,
                                                                .model = o.model,
                                                                .ranks = P,
                                                                .transport = o.transport,
                                                                .repeats = o.profile_repeats,
                                                                .concurrency = std::min(P, cores),
                                                                .pin = !o.no_pin,
                                                                .timeout = timeout,
                                                                .wait = wait,
                                                                .make_transport = make_transport,
                                                                .rank = rank});
  warnings.insert(warnings.end(), profile.warnings.begin(), profile.warnings.end());
  if (rank == 0) {
    for (const std::string& w : warnings) std::cerr << "pipelab: warning: " << w << "\n";
  }

  // Step 3: the measured run.
  runtime::RunOptions ro;
  ro.warmup = o.warmup;
  ro.iterations = o.iterations;
  ro.executor.timeout = timeout;
  ro.pin_threads = !o.no_pin;
  ro.wait = wait;
  ro.collect_gradients = o.check_gradients;
  const runtime::RunResult measured = mpi ? runtime::run_cpu_distributed(lowered, o.model, make_transport, ro)
                                          : runtime::run_cpu_inprocess(lowered, o.model, ro);
  if (rank != 0) return 0;  // rank 0 holds every rank's timeline

  // Step 4: the prediction of the same lowered schedule from the profile.
  const sim::ProfiledCost cost(profile.profile, shape, o.model.layers_per_stage);
  const runtime::StageActivationBytes act = runtime::mock_stage_activation(o.model);
  sim::SimOptions so;
  so.activations.assign(static_cast<std::size_t>(shape.stages), sim::StageActivation{act.bytes, act.freed_by_input_grad});
  const sim::SimResult predicted = sim::simulate(lowered, cost, so);

  // Step 5: the comparison, the result, the gradient check.
  const FidelityReport fidelity = compare_timelines(predicted.timeline, measured.iterations[measured.median_iteration()]);
  for (const std::size_t r : ranks_off_profile(fidelity)) {
    warnings.push_back(off_profile_warning(r, fidelity.compute_time_ratio[r]));
    std::cerr << "pipelab: warning: " << warnings.back() << "\n";
  }
  std::optional<runtime::GradientCheck> gradients;
  if (o.check_gradients) {
    gradients = runtime::compare_gradients(runtime::part_gradients(shape, measured.stage_gradients),
                                           runtime::reference_gradients(o.model, shape.stages_per_chain(), shape.microbatches));
  }
  const reports::ReportInput result =
      run_result({.config = run_config(o, shape, profile, cores, warnings),
                  .measured = measured,
                  .predicted = predicted,
                  .fidelity = fidelity,
                  .tokens_per_iteration = static_cast<std::int64_t>(shape.microbatches) * o.model.block.tokens(),
                  .memory_capacity_bytes = runtime::physical_memory_bytes(),
                  .gradients = gradients});

  print_run(std::cout, result);
  const bool fidelity_failed = o.check_fidelity && !within_fidelity(fidelity);
  if (o.check_fidelity) {
    std::cout << "# fidelity: " << (fidelity_failed ? "outside " : "within ") << reports::fidelity_thresholds_text()
              << ": " << (fidelity_failed ? "FAILED" : "OK") << "\n";
  }
  if (!o.json_out.empty()) reports::write_result_file(o.json_out, result);
  if (!o.report_out.empty()) {
    reports::write_report({result}, o.report_out, "");
    std::cout << "# report: " << o.report_out << "\n";
  }
  return (gradients && !gradients->passed) || fidelity_failed ? 1 : 0;
}

}  // namespace

void add_run_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand("run", "Execute a schedule on the mock model, predict it from a profile, compare");
  auto o = std::make_shared<RunCommandOptions>();
  add_schedule_flags(cmd, o->schedule);
  add_model_flags(cmd, o->model);
  cmd->add_option("--backend", o->backend, "Backend")->check(CLI::IsMember({"cpu"}))->capture_default_str();
  cmd->add_option("--transport", o->transport, "inproc (a thread per rank) or mpi (mpirun -np PP pipelab run ...)")
      ->check(CLI::IsMember({"inproc", "mpi"}))
      ->capture_default_str();
  cmd->add_option("--iterations", o->iterations, "Measured iterations (the median one is reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", o->warmup, "Iterations run first and discarded")->capture_default_str()->check(CLI::Range(0, 100000));
  cmd->add_option("--profile", o->profile, "Profile JSON from `pipelab profile` (default: profile first)");
  cmd->add_option("--save-profile", o->save_profile, "Also write the profile measured before the run here");
  cmd->add_option("--profile-repeats", o->profile_repeats, "Repeats when profiling first")->capture_default_str()->check(CLI::Range(1, 100000));
  cmd->add_flag("--check-gradients", o->check_gradients, "Compare the gradients with the single-device reference");
  cmd->add_flag("--check-fidelity", o->check_fidelity,
                "Exit 1 when the prediction is outside the fidelity thresholds (" + reports::fidelity_thresholds_text() + ")");
  cmd->add_option("--json", o->json_out, "Write the result JSON (kind run) here");
  cmd->add_option("--report", o->report_out, "Write a report here (.html, .md, .csv)");
  cmd->add_option("--timeout-ms", o->timeout_ms, "Watchdog: longest wait for one message or barrier")
      ->capture_default_str()
      ->check(CLI::Range(1, 86'400'000));
  cmd->add_flag("--no-pin", o->no_pin, "Do not pin rank threads/processes to cores");
  cmd->add_option("--wait", o->wait, "How ranks wait for data: auto, spin, block")
      ->check(CLI::IsMember(kWaitPolicies))
      ->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = run(*o); });
}

}  // namespace pipelab::app
