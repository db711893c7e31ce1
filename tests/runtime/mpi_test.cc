// Runs the MPI integration check under `mpirun -np 2` (as root with the flags OpenMPI needs), and a
// process dying mid-iteration under it. Skips only when this build has no MPI transport or mpirun is
// not on the PATH.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "pipelab/runtime/mpi_transport.h"

namespace {

[[maybe_unused]] std::string find_in_path(const std::string& exe) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  std::size_t start = 0;
  while (start <= p.size()) {
    const std::size_t end = p.find(':', start);
    const std::string dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + exe;
    if (FILE* f = std::fopen(candidate.c_str(), "r")) {
      std::fclose(f);
      return candidate;
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

#ifdef PIPELAB_MPI_CHECK
struct Outcome {
  int status = 0;      // as pclose returns it
  std::string output;  // stdout and stderr
  double seconds = 0;
};

// Runs the MPI check under `mpirun -np 2` (as root with the flags OpenMPI needs) with `args`.
Outcome run_mpi_check(const std::string& mpirun, const std::string& args) {
  const std::string cmd = mpirun + " -np 2 --allow-run-as-root --oversubscribe " + PIPELAB_MPI_CHECK + args + " 2>&1";
  const auto start = std::chrono::steady_clock::now();
  Outcome out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed: " + cmd, 0};
  std::array<char, 4096> chunk{};
  while (std::fgets(chunk.data(), static_cast<int>(chunk.size()), pipe) != nullptr) out.output += chunk.data();
  out.status = pclose(pipe);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

// Processes of this machine whose command line holds `needle`.
int processes_running(const std::string& needle) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    n += cmdline.find(needle) != std::string::npos ? 1 : 0;
  }
  return n;
}
#endif

TEST(MpiTransport, TwoProcessIntegrationUnderMpirun) {
#ifndef PIPELAB_MPI_CHECK
  GTEST_SKIP() << "built without the MPI transport";
#else
  ASSERT_TRUE(pipelab::runtime::mpi_built());
  const std::string mpirun = find_in_path("mpirun");
  if (mpirun.empty()) GTEST_SKIP() << "mpirun not found on PATH";
  const Outcome r = run_mpi_check(mpirun, "");
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.output;
  EXPECT_NE(r.output.find("MPI CHECK PASSED"), std::string::npos) << r.output;
#endif
}

// A process that exits mid-iteration (no exception, no MPI_Finalize: as a killed or crashed one
// would) ends the whole job: mpirun stops the other rank, names the process and its exit code, and
// no process of the job is left behind.
TEST(MpiTransport, AProcessThatDiesMidIterationEndsTheJobInBoundedTime) {
#ifndef PIPELAB_MPI_CHECK
  GTEST_SKIP() << "built without the MPI transport";
#else
  const std::string mpirun = find_in_path("mpirun");
  if (mpirun.empty()) GTEST_SKIP() << "mpirun not found on PATH";
  const Outcome r = run_mpi_check(mpirun, " --die-mid-iteration");
  EXPECT_FALSE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.output;
  EXPECT_NE(r.output.find("[rank 1] exiting mid-iteration"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Exit code:    7"), std::string::npos) << "mpirun names the dead process:\n" << r.output;
  EXPECT_LT(r.seconds, 60.0) << r.output;
  EXPECT_EQ(processes_running(std::string(PIPELAB_MPI_CHECK) + " --die-mid-iteration"), 0) << "a process of the job is left";
#endif
}

}  // namespace
