// What `pipelab run` needs around the executor: the profile its prediction comes from (given and
// checked against the run, or measured now), the mock model's activation sizes for the simulator's
// memory model, and facts about the host (cores shared by ranks, physical memory).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipelab/profiles/measured_profile.h"
#include "pipelab/runtime/backend.h"
#include "pipelab/runtime/profiler.h"
#include "pipelab/runtime/transport.h"

namespace pipelab::runtime {

/// Activation memory of one microbatch on one stage of the mock model, in the terms of the
/// simulator's memory model (sim::StageActivation): `bytes` held from F until the backward is done,
/// of which I frees `freed_by_input_grad`.
struct StageActivationBytes {
  std::int64_t bytes = 0;
  std::int64_t freed_by_input_grad = 0;
};
/// From the kernels' own sizes: F keeps saved_bytes per layer, I turns that into the stash W needs
/// (which may be larger; then I frees nothing and the stash is held from F on).
StageActivationBytes mock_stage_activation(const ModelConfig& model);

/// Checks that a profile describes the run's model and backend: another block shape or backend
/// throws ConfigError naming `path` and every differing field. Returns the warnings: stages of
/// another size (predicted from per-layer times), and with `ranks` > 1 a profile without P2P costs
/// or with P2P costs of another transport than `transport`.
std::vector<std::string> check_profile_matches(const MeasuredProfile& profile, const ModelConfig& model,
                                               const std::string& path, int ranks, const std::string& transport,
                                               const std::string& backend = "cpu");

/// The profile a run is predicted from.
struct RunProfileRequest {
  std::string path;         // a profile from `pipelab profile`; "" = measure one now
  std::string save_path;    // when measuring: also write it here (rank 0 only); "" = do not
  ModelConfig model;
  int ranks = 1;            // pipeline ranks of the run (P2P is measured when more than one)
  std::string transport = "inproc";
  int repeats = 20;         // timed repetitions per op (at least 20 round trips per P2P size)
  int concurrency = 1;      // cores measuring compute at once, as the run's ranks keep them busy
  bool pin = true;          // pin the measuring thread(s)
  std::chrono::milliseconds timeout{60'000};
  WaitPolicy wait = WaitPolicy::Auto;
  TransportFactory make_transport;  // one process per rank (MPI); empty: threads of this process
  int rank = 0;             // this process's rank (0 with threads)
  std::string backend = "cpu";      // "cuda": measured on the GPU (measure_cuda_profile) with `cuda`
  CudaProfileOptions cuda;
};
struct RunProfile {
  MeasuredProfile profile;
  std::string source;                 // the path, or "measured before the run"
  std::vector<std::string> warnings;  // check_profile_matches's, for a given profile
};
/// Loads and checks the profile at request.path, or measures one (measure_profile) when there is
/// none; with processes every rank must call it, and rank 0's measurement is the one returned.
RunProfile profile_for_run(const RunProfileRequest& request);

/// A warning when `ranks` exceed `cores` (ranks then share cores: the measured run is not a
/// pipeline, so the prediction cannot match it); "" otherwise.
std::string core_sharing_warning(int ranks, int cores);

/// Physical memory of this host in bytes (0 when the OS does not say): the capacity a CPU run's
/// memory is judged against.
std::int64_t physical_memory_bytes();

/// Host memory the cpu backend needs for `ranks` ranks of `lowered` in this process (first_rank
/// and on), from above: each rank's weights and gradients, and for the most microbatches its list
/// holds at once (forwards whose backward has not ended, in list order) their kept activations and
/// boundary buffers. In floating point, so no size can overflow it.
double cpu_run_memory_bytes(const Schedule& lowered, const ModelConfig& model, int first_rank, int ranks);
/// The same for profiling: `threads` stages measured at once, two microbatches each (an F&B unit).
double cpu_profile_memory_bytes(const ModelConfig& model, int threads);
/// Refuses (InputError naming both figures) a run or profile that needs more than this host's
/// physical memory, before anything is allocated; `what` says what needs it ("run", "profile").
void require_host_memory(double needed_bytes, std::string_view what);

}  // namespace pipelab::runtime
