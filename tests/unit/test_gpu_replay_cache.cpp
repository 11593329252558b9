// SPDX-License-Identifier: Apache-2.0
// Which calls the GPU plugin replays as CUDA graphs (core/src/cuda/replay_cache.hpp), with an
// integer standing in for a graph.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "../../core/src/cuda/replay_cache.hpp"

namespace recur {
namespace {

using Cache = gpu::ReplayCache<int>;
using Key = std::vector<uint64_t>;

// One call of `key`: captures where the cache says so (the next handle), and reports what it did.
struct Driver {
  Cache cache;
  int next_handle = 1;
  int captures = 0, replays = 0, runs = 0;
  std::vector<int> destroyed;

  Cache::Action call(const Key& key) {
    const auto d = cache.decide(key);
    if (d.action == Cache::Action::capture) {
      ++captures;
      cache.store(key, next_handle++, [&](int h) { destroyed.push_back(h); });
    } else if (d.action == Cache::Action::replay) {
      ++replays;
    } else {
      ++runs;
    }
    return d.action;
  }
};

TEST(GpuReplayCache, FirstCallRunsSecondCapturesThenReplays) {
  Driver d;
  EXPECT_EQ(d.call({1, 2}), Cache::Action::run);
  EXPECT_EQ(d.call({1, 2}), Cache::Action::capture);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(d.call({1, 2}), Cache::Action::replay);
  EXPECT_EQ(d.call({1, 3}), Cache::Action::run);  // any other key is a call of its own
  EXPECT_EQ(d.captures, 1);
}

TEST(GpuReplayCache, KeysTakingTurnsWithinTheCacheAreAllReplayed) {
  Driver d;
  for (int round = 0; round < 10; ++round)
    for (uint64_t k = 0; k < Cache::kGraphs; ++k) d.call({k});
  EXPECT_EQ(d.captures, static_cast<int>(Cache::kGraphs));
  EXPECT_EQ(d.replays, static_cast<int>(8 * Cache::kGraphs));
  EXPECT_TRUE(d.destroyed.empty());
}

TEST(GpuReplayCache, MoreKeysTakingTurnsThanTheCacheHoldsDoNotCaptureEachTime) {
  // Turns over 20 keys: the first 16 get graphs; the other 4 run as they are, every round.
  Driver d;
  const uint64_t keys = Cache::kGraphs + 4;
  for (int round = 0; round < 50; ++round)
    for (uint64_t k = 0; k < keys; ++k) d.call({k});
  EXPECT_EQ(d.captures, static_cast<int>(Cache::kGraphs));
  EXPECT_TRUE(d.destroyed.empty());
  // Turns over more keys than the cache remembers seeing: nothing is captured at all.
  Driver many;
  for (int round = 0; round < 10; ++round)
    for (uint64_t k = 0; k < Cache::kSeen + 1; ++k) many.call({k});
  EXPECT_EQ(many.captures, 0);
}

TEST(GpuReplayCache, StaleGraphsMakeRoomForNewKeys) {
  Driver d;
  for (uint64_t k = 0; k < Cache::kGraphs; ++k) {
    d.call({k});
    d.call({k});
  }
  ASSERT_EQ(d.cache.size(), Cache::kGraphs);
  // One new key, stepped long enough for the old graphs to go stale: it gets a graph in place of
  // the least recently used one, which is destroyed.
  for (uint64_t i = 0; i < Cache::kStale + 2; ++i) d.call({100});
  EXPECT_EQ(d.captures, static_cast<int>(Cache::kGraphs) + 1);
  EXPECT_EQ(d.destroyed, std::vector<int>{1});
  EXPECT_EQ(d.call({100}), Cache::Action::replay);
  EXPECT_EQ(d.cache.size(), Cache::kGraphs);
  std::vector<int> cleared;
  d.cache.clear([&](int h) { cleared.push_back(h); });
  EXPECT_EQ(cleared.size(), Cache::kGraphs);
  EXPECT_EQ(d.cache.size(), 0u);
}

}  // namespace
}  // namespace recur
