// Activation buffers: move-only handles to pooled memory that a backend computes on and a transport
// moves between ranks. The memory comes from a MemoryResource (host memory for the cpu backend,
// device memory for a GPU backend), so the executor and transports never know where it lives.
// Device memory is used by asynchronous streams: each of its buffers carries a fence (an opaque
// device event) that the last device work on the buffer records and the next work waits for, so a
// buffer returned to the pool is never reused before the device is done with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

namespace pipelab::runtime {

/// Where buffer memory comes from. Implementations must be thread-safe.
class MemoryResource {
 public:
  virtual ~MemoryResource() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p, std::size_t bytes) noexcept = 0;
  /// True when the host may read and write the memory directly.
  virtual bool host_accessible() const = 0;
  /// The fence of a new buffer (device memory: an event that records nothing yet); nullptr for
  /// memory the host uses synchronously. The pool keeps a buffer's fence with its memory.
  virtual void* create_fence() { return nullptr; }
  virtual void destroy_fence(void* /*fence*/) noexcept {}
};

/// 64-byte aligned host memory.
class HostMemory final : public MemoryResource {
 public:
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t bytes) noexcept override;
  bool host_accessible() const override { return true; }
};

class BufferPool;

/// An owned block of pooled memory; returns to its pool when destroyed. Move-only.
class Buffer {
 public:
  Buffer() = default;
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept
      : pool_(std::exchange(o.pool_, nullptr)),
        data_(std::exchange(o.data_, nullptr)),
        fence_(std::exchange(o.fence_, nullptr)),
        bytes_(std::exchange(o.bytes_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      pool_ = std::exchange(o.pool_, nullptr);
      data_ = std::exchange(o.data_, nullptr);
      fence_ = std::exchange(o.fence_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  explicit operator bool() const { return data_ != nullptr; }
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  /// The device event guarding this memory (see the file comment); nullptr for host memory.
  void* fence() const { return fence_; }
  /// The buffer as fp32 elements (host-accessible pools only).
  std::span<float> floats() const { return {static_cast<float*>(data_), bytes_ / sizeof(float)}; }
  std::span<std::byte> byte_span() const { return {static_cast<std::byte*>(data_), bytes_}; }
  /// Returns the memory to its pool now.
  void reset() noexcept;

 private:
  friend class BufferPool;
  Buffer(BufferPool* pool, void* data, void* fence, std::size_t bytes) : pool_(pool), data_(data), fence_(fence), bytes_(bytes) {}
  BufferPool* pool_ = nullptr;
  void* data_ = nullptr;
  void* fence_ = nullptr;
  std::size_t bytes_ = 0;
};

/// A thread-safe free list of buffers per size over a MemoryResource. Buffers may be released from
/// any thread (a buffer sent in-process is freed by the receiving rank). The pool must outlive every
/// buffer it handed out: destroying a pool while any of its buffers is alive aborts the process with
/// a message (it would otherwise be a use after free when the buffer is released). So a transport,
/// which may hold buffers until it is destroyed (an MPI send abandoned after a failure), must be
/// destroyed before the pools its buffers came from.
class BufferPool {
 public:
  explicit BufferPool(std::shared_ptr<MemoryResource> memory);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  /// A buffer of exactly `bytes` (> 0): reused from the free list, or newly allocated.
  Buffer acquire(std::size_t bytes);
  /// Allocates up front so the hot path never allocates: `count` buffers of `bytes`.
  void reserve(std::size_t bytes, int count);
  /// Buffers handed out and not yet returned.
  std::int64_t outstanding() const;
  /// Bytes allocated from the memory resource (in use or free).
  std::int64_t allocated_bytes() const;
  const MemoryResource& memory() const { return *memory_; }

 private:
  friend class Buffer;
  struct Block {
    void* data;
    void* fence;
  };
  void release(void* data, void* fence, std::size_t bytes) noexcept;

  std::shared_ptr<MemoryResource> memory_;
  mutable std::mutex mutex_;
  std::vector<std::pair<std::size_t, std::vector<Block>>> free_;  // per size
  std::int64_t outstanding_ = 0;
  std::int64_t allocated_bytes_ = 0;
};

}  // namespace pipelab::runtime
