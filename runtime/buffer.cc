// Pooled buffers; see buffer.h.
#include "pipelab/runtime/buffer.h"

#include <cstdio>
#include <cstdlib>
#include <new>

#include "pipelab/base/error.h"

namespace pipelab::runtime {

void* HostMemory::allocate(std::size_t bytes) {
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void HostMemory::deallocate(void* p, std::size_t) noexcept { std::free(p); }

void Buffer::reset() noexcept {
  if (data_ != nullptr && pool_ != nullptr) pool_->release(data_, fence_, bytes_);
  pool_ = nullptr;
  data_ = nullptr;
  fence_ = nullptr;
  bytes_ = 0;
}

BufferPool::BufferPool(std::shared_ptr<MemoryResource> memory) : memory_(std::move(memory)) {
  if (!memory_) throw InputError("BufferPool: no memory resource");
}

BufferPool::~BufferPool() {
  if (outstanding_ != 0) {
    // A buffer still alive would later return its memory into this destroyed pool (a use after
    // free that corrupts the heap far from its cause): stop here, naming the cause instead.
    std::fprintf(stderr,
                 "pipelab: fatal: a BufferPool was destroyed while %lld of its buffers were alive; the pool must "
                 "outlive every buffer (destroy transports and executors before the backend that owns the pool)\n",
                 static_cast<long long>(outstanding_));
    std::abort();
  }
  for (auto& [bytes, list] : free_) {
    for (const Block& b : list) {
      memory_->destroy_fence(b.fence);
      memory_->deallocate(b.data, bytes);
    }
  }
}

Buffer BufferPool::acquire(std::size_t bytes) {
  if (bytes == 0) throw InputError("BufferPool: cannot acquire an empty buffer");
  {
    std::lock_guard lock(mutex_);
    ++outstanding_;
    for (auto& [size, list] : free_) {
      if (size == bytes && !list.empty()) {
        const Block b = list.back();
        list.pop_back();
        return Buffer(this, b.data, b.fence, bytes);
      }
    }
  }
  void* p = nullptr;
  void* fence = nullptr;
  try {
    p = memory_->allocate(bytes);
    fence = memory_->create_fence();
  } catch (...) {
    if (p != nullptr) memory_->deallocate(p, bytes);
    std::lock_guard lock(mutex_);
    --outstanding_;
    throw;
  }
  std::lock_guard lock(mutex_);
  allocated_bytes_ += static_cast<std::int64_t>(bytes);
  return Buffer(this, p, fence, bytes);
}

void BufferPool::reserve(std::size_t bytes, int count) {
  std::vector<Buffer> held;
  held.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) held.push_back(acquire(bytes));
}

void BufferPool::release(void* data, void* fence, std::size_t bytes) noexcept {
  std::lock_guard lock(mutex_);
  --outstanding_;
  try {
    for (auto& [size, list] : free_) {
      if (size == bytes) {
        list.push_back(Block{data, fence});
        return;
      }
    }
    free_.emplace_back(bytes, std::vector<Block>{Block{data, fence}});
  } catch (...) {
    // Out of memory for the free list: give the memory back instead. (A device buffer's fence is
    // destroyed while work may still be pending on it; destroying an event with pending work is
    // defined — its resources are released once it completes.)
    memory_->destroy_fence(fence);
    memory_->deallocate(data, bytes);
    allocated_bytes_ -= static_cast<std::int64_t>(bytes);
  }
}

std::int64_t BufferPool::outstanding() const {
  std::lock_guard lock(mutex_);
  return outstanding_;
}

std::int64_t BufferPool::allocated_bytes() const {
  std::lock_guard lock(mutex_);
  return allocated_bytes_;
}

}  // namespace pipelab::runtime
