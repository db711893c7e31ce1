// Buffers and the in-process transport: pooled memory, bytes moved intact whatever the order of
// send and receive, the barrier's shared epoch, timeouts, aborts and the collectives. (The MPI
// transport runs the same checks under mpirun: mpi_check_main.cc, driven by mpi_test.cc.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <random>
#include <thread>

#include "pipelab/runtime/errors.h"
#include "pipelab/runtime/inproc_transport.h"

namespace pipelab::runtime {
namespace {

using ::testing::HasSubstr;
constexpr auto kTimeout = std::chrono::seconds(20);

TEST(BufferPool, ReusesReleasedBuffersAndCountsOutstanding) {
  BufferPool pool(std::make_shared<HostMemory>());
  void* first = nullptr;
  {
    Buffer a = pool.acquire(256);
    first = a.data();
    EXPECT_EQ(a.bytes(), 256u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % 64, 0u);
    EXPECT_EQ(pool.outstanding(), 1);
    Buffer b = std::move(a);
    EXPECT_FALSE(a);
    EXPECT_EQ(pool.outstanding(), 1);
  }
  EXPECT_EQ(pool.outstanding(), 0);
  Buffer again = pool.acquire(256);
  EXPECT_EQ(again.data(), first);
  Buffer other = pool.acquire(128);
  EXPECT_NE(other.data(), first);
  EXPECT_EQ(pool.allocated_bytes(), 384);
  EXPECT_THROW(pool.acquire(0), InputError);
}

TEST(BufferPool, ReserveAllocatesUpFrontAndBuffersMayBeFreedOnAnotherThread) {
  BufferPool pool(std::make_shared<HostMemory>());
  pool.reserve(1024, 4);
  EXPECT_EQ(pool.allocated_bytes(), 4096);
  std::vector<Buffer> held;
  for (int i = 0; i < 4; ++i) held.push_back(pool.acquire(1024));
  EXPECT_EQ(pool.allocated_bytes(), 4096);  // no new allocation
  std::thread t([held = std::move(held)]() mutable { held.clear(); });
  t.join();
  EXPECT_EQ(pool.outstanding(), 0);
}

// A pool destroyed while one of its buffers is alive stops the process and names the cause: the
// buffer's release would otherwise write into freed memory, far from where the bug is.
TEST(BufferPoolDeathTest, DestroyingAPoolWithALiveBufferAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        std::optional<Buffer> kept;  // outlives the pool: would release into it afterwards
        {
          BufferPool pool(std::make_shared<HostMemory>());
          kept = pool.acquire(64);
        }
      },
      "BufferPool was destroyed while 1 of its buffers were alive");
}

// The ownership rule `pipelab run`, `pipelab profile` and the drivers follow: a transport may hold
// buffers until it is destroyed (a message delivered but never received; with MPI, a send abandoned
// after a failure), so it is destroyed before the pools they came from. The reverse order is what
// `pipelab run` once did with the MPI transport; it is now caught instead of freeing into a dead pool.
TEST(BufferPoolDeathTest, ATransportHoldingBuffersIsDestroyedBeforeTheirPool) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const PipelineShape shape = make_shape(2, 2, 1, Placement::Loop);
  const MessageKey key{Direction::Forward, 1, 0};
  {
    BufferPool pool(std::make_shared<HostMemory>());
    InprocWorld world(shape);
    world.transport(0).isend(1, key, pool.acquire(64), 0);
    EXPECT_EQ(pool.outstanding(), 1);  // in rank 1's mailbox until the world goes
  }
  EXPECT_DEATH(
      {
        InprocWorld world(shape);  // declared first, destroyed last: outlives the pool
        BufferPool pool(std::make_shared<HostMemory>());
        world.transport(0).isend(1, key, pool.acquire(64), 0);
      },
      "BufferPool was destroyed while 1 of its buffers were alive");
}

void fill_random(Buffer& b, unsigned seed) {
  std::mt19937 gen(seed);
  auto* p = static_cast<unsigned char*>(b.data());
  for (std::size_t i = 0; i < b.bytes(); ++i) p[i] = static_cast<unsigned char>(gen());
}

bool same_random(const Buffer& b, unsigned seed) {
  std::mt19937 gen(seed);
  const auto* p = static_cast<const unsigned char*>(b.data());
  for (std::size_t i = 0; i < b.bytes(); ++i) {
    if (p[i] != static_cast<unsigned char>(gen())) return false;
  }
  return true;
}

TEST(InprocTransport, MovesBytesIntactInBothDirectionsAndAnyPostOrder) {
  const PipelineShape shape = make_shape(2, 4, 8, Placement::Loop);
  BufferPool pool0(std::make_shared<HostMemory>()), pool1(std::make_shared<HostMemory>());
  InprocWorld world(shape);
  const std::vector<std::size_t> sizes = {1, 7, 4096, 1 << 20};
  std::thread t1([&] {
    Transport& t = world.transport(1);
    const auto epoch = t.barrier(kTimeout);
    (void)epoch;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const MessageKey fwd{Direction::Forward, 1, static_cast<int>(i)};
      t.irecv(0, fwd, sizes[i], pool1);
      std::optional<Received> r = t.wait_recv(fwd, kTimeout);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->buffer.bytes(), sizes[i]);
      EXPECT_TRUE(same_random(r->buffer, 100 + static_cast<unsigned>(i)));
      // Send the bytes back unchanged.
      t.isend(0, MessageKey{Direction::Backward, 0, static_cast<int>(i)}, std::move(r->buffer), 0);
    }
    t.flush_sends(kTimeout);
  });
  Transport& t = world.transport(0);
  t.barrier(kTimeout);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const MessageKey back{Direction::Backward, 0, static_cast<int>(i)};
    if (i % 2 == 0) t.irecv(1, back, sizes[i], pool0);  // receive posted before the send...
    Buffer b = pool0.acquire(sizes[i]);
    fill_random(b, 100 + static_cast<unsigned>(i));
    t.isend(1, MessageKey{Direction::Forward, 1, static_cast<int>(i)}, std::move(b), 5);
    if (i % 2 == 1) t.irecv(1, back, sizes[i], pool0);  // ...or after it
    std::optional<Received> r = t.wait_recv(back, kTimeout);
    ASSERT_TRUE(r);
    EXPECT_TRUE(same_random(r->buffer, 100 + static_cast<unsigned>(i)));
  }
  const auto done = t.flush_sends(kTimeout);
  EXPECT_EQ(done.size(), sizes.size());
  t1.join();
  EXPECT_EQ(pool0.outstanding(), 0);
  EXPECT_EQ(pool1.outstanding(), 0);
}

TEST(InprocTransport, BarrierGivesEveryRankTheSameEpoch) {
  const PipelineShape shape = make_shape(3, 3, 1, Placement::Loop);
  InprocWorld world(shape, WaitPolicy::Block);
  std::vector<Clock::time_point> epochs(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      for (int i = 0; i < 5; ++i) epochs[static_cast<std::size_t>(r)] = world.transport(r).barrier(kTimeout);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(epochs[0], epochs[1]);
  EXPECT_EQ(epochs[1], epochs[2]);
}

TEST(InprocTransport, WaitTimesOutWithoutASender) {
  const PipelineShape shape = make_shape(2, 2, 1, Placement::Loop);
  BufferPool pool(std::make_shared<HostMemory>());
  InprocWorld world(shape, WaitPolicy::Block);
  Transport& t = world.transport(1);
  const MessageKey key{Direction::Forward, 1, 0};
  EXPECT_THROW(t.wait_recv(key, std::chrono::milliseconds(1)), ExecutionError);  // nothing posted
  t.irecv(0, key, 16, pool);
  EXPECT_FALSE(t.wait_recv(key, std::chrono::milliseconds(20)));
  t.cancel_all();
}

TEST(InprocTransport, AbortWakesAWaitingRankWithTheFirstError) {
  const PipelineShape shape = make_shape(2, 2, 1, Placement::Loop);
  BufferPool pool(std::make_shared<HostMemory>());
  InprocWorld world(shape);
  std::string what;
  std::thread waiter([&] {
    Transport& t = world.transport(1);
    const MessageKey key{Direction::Forward, 1, 0};
    t.irecv(0, key, 16, pool);
    try {
      t.wait_recv(key, kTimeout);
    } catch (const PeerAborted& e) {
      what = e.what();
    }
    t.cancel_all();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  world.transport(0).abort("disk on fire");
  world.transport(1).abort("second error");  // not the first: ignored
  waiter.join();
  EXPECT_THAT(what, HasSubstr("rank 0 failed: disk on fire"));
  EXPECT_EQ(world.first_failed_rank(), 0);
  EXPECT_THROW(world.transport(1).barrier(kTimeout), PeerAborted);
  EXPECT_TRUE(world.transport(1).any_failed(false, kTimeout));
}

TEST(InprocTransport, SendingTheSameMessageTwiceIsAnError) {
  const PipelineShape shape = make_shape(2, 2, 1, Placement::Loop);
  BufferPool pool(std::make_shared<HostMemory>());
  InprocWorld world(shape);
  Transport& t = world.transport(0);
  const MessageKey key{Direction::Forward, 1, 0};
  t.isend(1, key, pool.acquire(8), 0);
  EXPECT_THROW(t.isend(1, key, pool.acquire(8), 0), ExecutionError);
  EXPECT_THROW(t.isend(1, MessageKey{Direction::Forward, 9, 0}, pool.acquire(8), 0), ExecutionError);
  world.transport(1).cancel_all();  // drops the delivered message
  EXPECT_EQ(pool.outstanding(), 0);
}

TEST(InprocTransport, GatherAndAgreement) {
  const PipelineShape shape = make_shape(3, 3, 1, Placement::Loop);
  InprocWorld world(shape, WaitPolicy::Block);
  std::vector<std::vector<std::vector<std::byte>>> got(3);
  std::vector<int> failed(3, -1);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      std::vector<std::byte> mine(static_cast<std::size_t>(r + 1), std::byte{static_cast<unsigned char>(r)});
      got[static_cast<std::size_t>(r)] = world.transport(r).gather(mine, kTimeout);
      failed[static_cast<std::size_t>(r)] = world.transport(r).any_failed(false, kTimeout) ? 1 : 0;
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(got[0].size(), 3u);
  EXPECT_TRUE(got[1].empty());
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(got[0][static_cast<std::size_t>(r)].size(), static_cast<std::size_t>(r + 1));
    EXPECT_EQ(failed[static_cast<std::size_t>(r)], 0);
  }
}

TEST(MessageKey, DescribesAndIndexesDensely) {
  const PipelineShape shape = make_shape(2, 4, 3, Placement::Loop);
  const MessageIndex index(shape);
  EXPECT_EQ(index.size(), 24u);
  std::vector<int> seen(index.size(), 0);
  for (Direction d : {Direction::Forward, Direction::Backward}) {
    for (int s = 0; s < 4; ++s) {
      for (int mb = 0; mb < 3; ++mb) ++seen[index(MessageKey{d, s, mb})];
    }
  }
  for (int n : seen) EXPECT_EQ(n, 1);
  EXPECT_EQ(describe(MessageKey{Direction::Backward, 1, 2}), "gradient for stage 1, mb 2");
  EXPECT_FALSE(index.contains(MessageKey{Direction::Forward, 4, 0}));
}

}  // namespace
}  // namespace pipelab::runtime
