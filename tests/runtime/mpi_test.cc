// Runs the MPI integration check under `mpirun -np 2` (as root with the flags OpenMPI needs).
// Skips only when this build has no MPI transport or mpirun is not on the PATH.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
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

TEST(MpiTransport, TwoProcessIntegrationUnderMpirun) {
#ifndef PIPELAB_MPI_CHECK
  GTEST_SKIP() << "built without the MPI transport";
#else
  ASSERT_TRUE(pipelab::runtime::mpi_built());
  const std::string mpirun = find_in_path("mpirun");
  if (mpirun.empty()) GTEST_SKIP() << "mpirun not found on PATH";
  const std::string cmd = mpirun + " -np 2 --allow-run-as-root --oversubscribe " + PIPELAB_MPI_CHECK + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> chunk{};
  while (std::fgets(chunk.data(), static_cast<int>(chunk.size()), pipe) != nullptr) output += chunk.data();
  const int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << output;
  EXPECT_NE(output.find("MPI CHECK PASSED"), std::string::npos) << output;
#endif
}

}  // namespace
