// A whole `pipelab simulate` process: compute actions per second from exec to exit, what a user
// waits for (target >= 2 M/s for interleaved 1F1B at PP64 VP4 m512 with uniform costs, DESIGN.md §8;
// docs/simulator.md, "Speed"). Each iteration spawns build/apps/pipelab with stdout and stderr to
// /dev/null; the time is the child's wall time, and cpu_s its user + system time (wait4), which a
// loaded machine perturbs less. PIPELAB=path/to/pipelab benchmarks another build (before/after).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace {

std::string pipelab_exe() {
  const char* other = std::getenv("PIPELAB");
  return other != nullptr && *other != '\0' ? other : PIPELAB_EXE;
}

// Runs `args` (args[0] a path), waits, and returns the child's user + system seconds; -1 on failure.
double run_process(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t io;
  posix_spawn_file_actions_init(&io);
  posix_spawn_file_actions_addopen(&io, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&io, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &io, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&io);
  if (spawned != 0) return -1;
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// pipelab simulate --schedule interleaved-1f1b --pp P --vp V --microbatches M --cost uniform: P*V*M
// forwards and as many backwards.
void SimulateProcess(benchmark::State& state) {
  const auto pp = state.range(0), vp = state.range(1), m = state.range(2);
  const std::vector<std::string> args = {pipelab_exe(), "simulate", "--schedule", "interleaved-1f1b", "--pp", std::to_string(pp),
                                         "--vp", std::to_string(vp), "--microbatches", std::to_string(m), "--cost", "uniform"};
  const auto compute_actions = static_cast<double>(2 * pp * vp * m);
  double cpu_s = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu = run_process(args);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (cpu < 0) {
      state.SkipWithError(("failed to run " + pipelab_exe()).c_str());
      return;
    }
    state.SetIterationTime(wall);
    cpu_s += cpu;
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["compute_actions"] = compute_actions;
  state.counters["actions_per_s"] = benchmark::Counter(compute_actions * n, benchmark::Counter::kIsRate);  // per wall second
  state.counters["cpu_s"] = cpu_s / n;
  state.counters["actions_per_cpu_s"] = compute_actions * n / cpu_s;
}
BENCHMARK(SimulateProcess)
    ->ArgNames({"pp", "vp", "mb"})
    ->Args({64, 4, 512})
    ->UseManualTime()
    ->Iterations(5)
    ->Repetitions(3)
    ->Unit(benchmark::kMillisecond);

// The process that does nothing but start: `pipelab --help` (dynamic loading, static constructors).
void StartProcess(benchmark::State& state) {
  double cpu_s = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu = run_process({pipelab_exe(), "--help"});
    if (cpu < 0) {
      state.SkipWithError(("failed to run " + pipelab_exe()).c_str());
      return;
    }
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    cpu_s += cpu;
  }
  state.counters["cpu_s"] = cpu_s / static_cast<double>(state.iterations());
}
BENCHMARK(StartProcess)->UseManualTime()->Iterations(20)->Repetitions(3)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
