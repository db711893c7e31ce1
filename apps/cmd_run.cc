// `pipelab run`: executes a schedule on the mock model for real (cpu backend; in-process threads or
// MPI processes), predicts the same schedule with the simulator and the profiled cost model, and
// writes both timelines with their comparison (result JSON, kind "run"; docs/runtime.md).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "pipelab/base/error.h"
#include "pipelab/kernels/blas.h"
#include "pipelab/profiles/measured_profile.h"
#include "pipelab/reports/write.h"
#include "pipelab/runtime/gradients.h"
#include "pipelab/runtime/machine.h"
#include "pipelab/runtime/mpi_transport.h"
#include "pipelab/runtime/profiler.h"
#include "pipelab/runtime/run.h"
#include "pipelab/runtime/run_support.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/metrics.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/schedules/validate.h"
#include "pipelab/sim/engine.h"
#include "pipelab/sim/profiled_cost.h"
#include "result_json.h"
#include "runtime_commands.h"
#include "schedule_flags.h"

namespace pipelab::app {
namespace {

using nlohmann::json;

struct RunFlags {
  std::string backend = "cpu";
  std::string transport = "inproc";
  int iterations = 5;
  int warmup = 2;
  std::string profile;
  std::string save_profile;
  int profile_repeats = 20;
  bool check_gradients = false;
  std::string json_out;
  std::string report_out;
  int timeout_ms = 60'000;
  bool no_pin = false;
  std::string wait = "auto";
};

// ---- JSON pieces ----------------------------------------------------------------------------------

struct Side {
  Timeline timeline;
  TimelineMetrics metrics;
  std::vector<std::int64_t> static_bytes;
  std::vector<std::int64_t> peak_activation;
  double model_flops = 0;
};

json side_json(const Side& s, std::int64_t tokens, std::int64_t capacity, const std::vector<std::vector<sim::MemorySample>>* memory) {
  const auto P = static_cast<std::int64_t>(s.metrics.ranks.size());
  const Throughput tp = compute_throughput(s.metrics.makespan_ns, s.model_flops, tokens, P, 0.0);
  std::vector<std::int64_t> peaks;
  json ranks = json::array();
  bool oom = false;
  for (std::size_t r = 0; r < s.metrics.ranks.size(); ++r) {
    const std::int64_t fixed = r < s.static_bytes.size() ? s.static_bytes[r] : 0;
    const std::int64_t act = r < s.peak_activation.size() ? s.peak_activation[r] : 0;
    peaks.push_back(fixed + act);
    oom = oom || (capacity > 0 && fixed + act > capacity);
    ranks.push_back(rank_json(r, s.metrics.ranks[r], fixed, act));
  }
  json out = {{"summary", summary_json(s.metrics, tp, peaks, capacity, oom, s.model_flops, tokens)},
              {"ranks", std::move(ranks)},
              {"timeline", timeline_to_json(s.timeline)}};
  if (memory != nullptr) out["memory"] = memory_json(s.static_bytes, *memory);
  return out;
}

void print_run(std::ostream& os, const json& r) {
  const json& c = r["config"];
  const json& p = r["predicted"]["summary"];
  const json& m = r["measured"]["summary"];
  const json& cmp = r["comparison"];
  os << "# run: " << c["schedule"].get<std::string>() << " pp=" << c["parallel"]["pp"] << " stages=" << c["stages"]
     << " microbatches=" << c["parallel"]["microbatches"] << " on " << c["backend"].get<std::string>() << " ("
     << c["transport"].get<std::string>() << "), " << c["iterations"] << " iterations after " << c["warmup"]
     << " warm-up, median shown\n";
  os << std::fixed;
  os << "#          " << std::setw(14) << "makespan" << std::setw(10) << "bubble" << std::setw(12) << "TFLOPS" << std::setw(14)
     << "tokens/s" << "\n";
  os << "#          " << std::setw(14) << "(ms)" << std::setw(10) << "(%)" << std::setw(12) << "(/rank)" << std::setw(14) << "(/rank)"
     << "\n";
  auto row = [&](const char* label, const json& s) {
    os << std::left << std::setw(11) << label << std::right << std::setprecision(3) << std::setw(14)
       << s["makespan_ns"].get<double>() / 1e6 << std::setprecision(2) << std::setw(10) << 100 * s["bubble_ratio"].get<double>()
       << std::setprecision(4) << std::setw(12) << s["tflops_per_gpu"].get<double>() << std::setprecision(0) << std::setw(14)
       << s["tokens_per_s_per_gpu"].get<double>() << "\n";
  };
  row("predicted", p);
  row("measured", m);
  os << std::setprecision(2) << "makespan error " << 100 * cmp["makespan_error"].get<double>() << "%, bubble predicted "
     << 100 * cmp["bubble_predicted"].get<double>() << "% vs measured " << 100 * cmp["bubble_measured"].get<double>()
     << "%, per-action error p50 " << 100 * cmp["action_error_p50"].get<double>() << "% p90 "
     << 100 * cmp["action_error_p90"].get<double>() << "%\n";
  if (r.contains("gradient_check")) {
    const json& g = r["gradient_check"];
    os << std::scientific << std::setprecision(2) << "gradient check: max relative error " << g["max_rel_error"].get<double>()
       << " (tolerance " << g["tolerance"].get<double>() << ") " << (g["passed"].get<bool>() ? "OK" : "FAILED") << "\n"
       << std::defaultfloat;
  }
}

}  // namespace

void add_run_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand("run", "Execute a schedule on the mock model, predict it from a profile, compare");
  auto sched = add_schedule_flags(cmd, "1f1b");
  sched->options.pp = 2;
  cmd->get_option("--pp")->default_str("2");
  auto model = add_model_flags(cmd);
  auto f = std::make_shared<RunFlags>();
  cmd->add_option("--backend", f->backend, "Backend")->check(CLI::IsMember({"cpu"}))->capture_default_str();
  cmd->add_option("--transport", f->transport, "inproc (a thread per rank) or mpi (mpirun -np PP pipelab run ...)")
      ->check(CLI::IsMember({"inproc", "mpi"}))
      ->capture_default_str();
  cmd->add_option("--iterations", f->iterations, "Measured iterations (the median one is reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", f->warmup, "Iterations run first and discarded")->capture_default_str()->check(CLI::Range(0, 100000));
  cmd->add_option("--profile", f->profile, "Profile JSON from `pipelab profile` (default: profile first)");
  cmd->add_option("--save-profile", f->save_profile, "Also write the profile measured before the run here");
  cmd->add_option("--profile-repeats", f->profile_repeats, "Repeats when profiling first")->capture_default_str()->check(CLI::Range(1, 100000));
  cmd->add_flag("--check-gradients", f->check_gradients, "Compare the gradients with the single-device reference");
  cmd->add_option("--json", f->json_out, "Write the result JSON (kind run) here");
  cmd->add_option("--report", f->report_out, "Write a report here (.html, .md, .csv)");
  cmd->add_option("--timeout-ms", f->timeout_ms, "Watchdog: longest wait for one message or barrier")
      ->capture_default_str()
      ->check(CLI::Range(1, 86'400'000));
  cmd->add_flag("--no-pin", f->no_pin, "Do not pin rank threads/processes to cores");
  cmd->add_option("--wait", f->wait, "How ranks wait for data: auto, spin, block")
      ->check(CLI::IsMember({"auto", "spin", "block"}))
      ->capture_default_str();

  // Capture every option's storage explicitly: CLI11 writes into it even if the body never reads it.
  cmd->callback([sched, model, f, &exit_code] {
    // Step 1: the schedule, exactly as the simulator sees it (lowered with explicit SEND/RECV).
    const Schedule compute = make_schedule(sched->schedule, sched->options);
    require_valid(compute);
    const Schedule lowered = add_send_recv(compute);
    const PipelineShape& shape = lowered.shape;
    model->validate();
    const int P = shape.ranks;
    // Processes may each be bound to one core by the MPI launcher: count the node's cores then.
    const int cores = f->transport == "mpi" ? runtime::online_cores() : runtime::hardware_cores();
    std::vector<std::string> warnings;
    if (const std::string w = runtime::core_sharing_warning(P, cores); !w.empty()) warnings.push_back(w);
    runtime::configure_allocator();
    kernels::set_blas_threads(1);
    const runtime::WaitPolicy wait = f->wait == "spin"    ? runtime::WaitPolicy::Spin
                                     : f->wait == "block" ? runtime::WaitPolicy::Block
                                                          : runtime::WaitPolicy::Auto;
    const auto timeout = std::chrono::milliseconds(f->timeout_ms);

    // With MPI every process runs this; each makes its transports from the session when it needs
    // them (runtime::measure_profile and runtime::run_cpu_distributed own them, each destroying its
    // transport before the buffer pool the transport's messages use).
    std::unique_ptr<runtime::MpiSession> mpi;
    runtime::TransportFactory make_transport;
    int rank = 0;
    if (f->transport == "mpi") {
      mpi = std::make_unique<runtime::MpiSession>();
      if (mpi->size() != P) {
        throw ConfigError("--transport mpi: the schedule has pp=" + std::to_string(P) + " ranks but " + std::to_string(mpi->size()) +
                          " MPI processes run (mpirun -np " + std::to_string(P) + ")");
      }
      rank = mpi->rank();
      make_transport = [&mpi, &shape, wait] { return mpi->transport(shape, wait); };
    }

    // Step 2: the profile the prediction uses (given, or measured now on this machine).
    const runtime::RunProfile run_profile = runtime::profile_for_run({.path = f->profile,
                                                                     .save_path = f->save_profile,
                                                                     .model = *model,
                                                                     .ranks = P,
                                                                     .transport = f->transport,
                                                                     .repeats = f->profile_repeats,
                                                                     .concurrency = std::min(P, cores),
                                                                     .pin = !f->no_pin,
                                                                     .timeout = timeout,
                                                                     .wait = wait,
                                                                     .make_transport = make_transport,
                                                                     .rank = rank});
    const MeasuredProfile& profile = run_profile.profile;
    const std::string& profile_source = run_profile.source;
    warnings.insert(warnings.end(), run_profile.warnings.begin(), run_profile.warnings.end());

    if (rank == 0) {
      for (const std::string& w : warnings) std::cerr << "pipelab: warning: " << w << "\n";
    }

    // Step 3: the measured run.
    runtime::RunOptions ro;
    ro.warmup = f->warmup;
    ro.iterations = f->iterations;
    ro.executor.timeout = timeout;
    ro.pin_threads = !f->no_pin;
    ro.wait = wait;
    ro.collect_gradients = f->check_gradients;
    runtime::RunResult measured;
    if (mpi) {
      measured = runtime::run_cpu_distributed(lowered, *model, make_transport, ro);
      if (rank != 0) {
        exit_code = 0;
        return;
      }
    } else {
      measured = runtime::run_cpu_inprocess(lowered, *model, ro);
    }

    // Step 4: the prediction of the same lowered schedule from the profile.
    const sim::ProfiledCost cost(profile, shape, model->layers_per_stage);
    sim::SimOptions so;
    const runtime::StageActivationBytes act = runtime::mock_stage_activation(*model);
    so.activations.assign(static_cast<std::size_t>(shape.stages), sim::StageActivation{act.bytes, act.freed_by_input_grad});
    const sim::SimResult predicted = sim::simulate(lowered, cost, so);

    // Step 5: metrics of both, computed by the one shared implementation, and the comparison.
    const std::size_t median = measured.median_iteration();
    Side meas, pred;
    meas.timeline = measured.iterations[median];
    pred.timeline = predicted.timeline;
    meas.metrics = compute_metrics(meas.timeline);
    pred.metrics = compute_metrics(pred.timeline);
    meas.static_bytes = pred.static_bytes = measured.static_bytes;
    meas.peak_activation = measured.peak_state_bytes;
    pred.peak_activation = predicted.peak_activation_bytes;
    for (const RankMetrics& m : meas.metrics.ranks) meas.model_flops += m.flops;
    for (const RankMetrics& m : pred.metrics.ranks) pred.model_flops += m.flops;
    const std::int64_t tokens = static_cast<std::int64_t>(shape.microbatches) * model->block.tokens();
    const std::int64_t capacity = runtime::physical_memory_bytes();

    const FidelityReport fidelity = compare_timelines(pred.timeline, meas.timeline);
    for (const std::size_t r : ranks_off_profile(fidelity)) {
      const double ratio = fidelity.compute_time_ratio[r];
      warnings.push_back("rank " + std::to_string(r) + "'s actions ran " + std::to_string(std::lround(100 * (ratio - 1.0))) +
                         "% off their profiled time (median): the machine was busier or faster than when profiled, or "
                         "another process shared the rank's core");
      std::cerr << "pipelab: warning: " << warnings.back() << "\n";
    }
    json makespans = json::array();
    for (const Timeline& t : measured.iterations) makespans.push_back(t.makespan_ns());
    json comparison = {{"makespan_error", fidelity.makespan_error},
                       {"bubble_predicted", fidelity.bubble_predicted},
                       {"bubble_measured", fidelity.bubble_measured},
                       {"action_error_p50", fidelity.action_error_p50},
                       {"action_error_p90", fidelity.action_error_p90},
                       {"actions_compared", fidelity.actions_compared},
                       {"compute_time_ratio", fidelity.compute_time_ratio},
                       {"makespan_predicted_ns", fidelity.makespan_predicted_ns},
                       {"makespan_measured_ns", fidelity.makespan_measured_ns},
                       {"measured_makespans_ns", std::move(makespans)},
                       {"median_iteration", median}};

    json config = {
        {"schedule", find_schedule(sched->schedule).name},
        {"backend", f->backend},
        {"transport", f->transport},
        {"cost_model", "profiled"},
        {"stages", shape.stages},
        {"model",
         {{"name", "mock-transformer"},
          {"hidden", model->block.hidden},
          {"ffn", model->block.ffn},
          {"heads", model->block.heads},
          {"seq", model->block.seq},
          {"mbs", model->block.mbs},
          {"swiglu", model->block.swiglu},
          {"layers_per_stage", model->layers_per_stage},
          {"num_layers", shape.stages_per_chain() * model->layers_per_stage},
          {"seed", model->seed}}},
        {"parallel",
         {{"pp", P},
          {"vp", shape.stages / P},
          {"microbatches", shape.microbatches},
          {"mbs", model->block.mbs},
          {"seq_length", model->block.seq},
          {"gpus", P},
          {"stage_layers", std::vector<int>(static_cast<std::size_t>(shape.stages), model->layers_per_stage)}}},
        {"iterations", f->iterations},
        {"warmup", f->warmup},
        {"timeout_ms", f->timeout_ms},
        {"profile", profile_source},
        {"profile_layers_per_stage", profile.layers_per_stage},
        {"p2p_latency_ns", profile.p2p.latency_ns},
        {"p2p_bandwidth_bytes_per_s", profile.p2p.bandwidth_bytes_per_s},
        {"device", runtime::cpu_model_name()},
        {"cores", cores},
        {"pinned", !f->no_pin && P <= cores},
        {"wait", f->wait},
        {"warnings", warnings}};

    json result = {{"format", "pipelab.result"}, {"version", kResultVersion}, {"kind", "run"}, {"config", std::move(config)}};
    result["measured"] = side_json(meas, tokens, capacity, nullptr);
    result["predicted"] = side_json(pred, tokens, capacity, &predicted.memory);
    result["comparison"] = std::move(comparison);
    bool failed = false;
    if (f->check_gradients) {
      const runtime::GradientCheck g = runtime::compare_gradients(
          runtime::part_gradients(shape, measured.stage_gradients),
          runtime::reference_gradients(*model, shape.stages_per_chain(), shape.microbatches));
      result["gradient_check"] = {{"max_rel_error", g.max_rel_error}, {"passed", g.passed}, {"tolerance", g.tolerance}, {"worst", g.worst}};
      failed = !g.passed;
    }

    print_run(std::cout, result);
    if (!f->json_out.empty()) {
      write_json_file(f->json_out, result);
    }
    if (!f->report_out.empty()) {
      reports::write_report({result}, f->report_out, "");
      std::cout << "# report: " << f->report_out << "\n";
    }
    exit_code = failed ? 1 : 0;
  });
}

}  // namespace pipelab::app
