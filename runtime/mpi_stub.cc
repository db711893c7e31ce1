// The MPI transport in a build without MPI: every entry point reports that it is missing.
#include "pipelab/runtime/errors.h"
#include "pipelab/runtime/mpi_transport.h"

namespace pipelab::runtime {

bool mpi_built() { return false; }

MpiSession::MpiSession() {
  throw DeviceError("this pipelab was built without MPI (install libopenmpi-dev and reconfigure with -DPIPELAB_MPI=ON)");
}

MpiSession::~MpiSession() = default;

void MpiSession::broadcast(std::span<std::byte>) { throw DeviceError("this pipelab was built without MPI"); }

std::unique_ptr<Transport> MpiSession::transport(const PipelineShape&, WaitPolicy) {
  throw DeviceError("this pipelab was built without MPI");
}

}  // namespace pipelab::runtime
