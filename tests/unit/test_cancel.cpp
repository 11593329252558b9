// SPDX-License-Identifier: Apache-2.0
// Cancellation inside the core: a layer's recurrent loop stops between timesteps once the run's
// flag is set, on one thread and on several (whose barriers must all agree to stop), and throws
// Error(cancelled) before a stateful layer keeps any state.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "recur/cancel.hpp"
#include "recur/config.hpp"
#include "recur/error.hpp"
#include "recur/layer.hpp"

namespace {

using namespace recur;

LayerConfig gru(int units, int input) {
  LayerConfig c = LayerConfig::defaults(LayerKind::gru, DialectInfo::latest(Dialect::keras3));
  c.units = units;
  c.input_size = input;
  c.return_sequences = true;
  c.seed = 7;
  return c;
}

// Calls `layer` over T steps with `flag` installed, set by another thread after `delay`; returns
// whether the call threw Error(cancelled). The last step's output must still be unwritten: the
// loop stopped between timesteps rather than finishing the sequence. (How soon it stops depends
// on the machine, so no time is asserted: T is large enough that the sequence cannot end first.)
bool cancelled_during(Layer& layer, Index B, Index T, std::chrono::milliseconds delay) {
  const Index F = layer.config().input_size, u = layer.config().units;
  std::vector<float> x(static_cast<std::size_t>(B * T * F), 0.25f), y(static_cast<std::size_t>(B * T * u), -7.0f);
  std::atomic<bool> flag{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(delay);
    flag.store(true);
  });
  bool cancelled = false;
  try {
    const CancelScope scope(&flag);
    LayerCall call;
    call.input = x.data();
    call.input_len = x.size();
    call.batch = B;
    call.timesteps = T;
    call.output = y.data();
    call.output_len = y.size();
    layer.call(call);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Error::Code::cancelled) << e.what();
    cancelled = true;
  }
  canceller.join();
  EXPECT_EQ(y.back(), -7.0f) << "the last timestep ran";
  return cancelled;
}

TEST(Cancel, OneThreadStopsBetweenTimesteps) {
  Layer layer(gru(32, 4));
  EXPECT_TRUE(cancelled_during(layer, 2, 400000, std::chrono::milliseconds(20))) << "the call ran to its end";
}

TEST(Cancel, SeveralThreadsAllStop) {
  Layer layer(gru(256, 64));  // enough work per step for the CPU backend to split it
  layer.set_num_threads(2);
  EXPECT_TRUE(cancelled_during(layer, 8, 20000, std::chrono::milliseconds(20))) << "the call ran to its end";
  // The pool is still usable: a call without a flag runs to its end.
  std::vector<float> x(8 * 5 * 64, 0.1f), y(8 * 5 * 256);
  LayerCall call;
  call.input = x.data();
  call.input_len = x.size();
  call.batch = 8;
  call.timesteps = 5;
  call.output = y.data();
  call.output_len = y.size();
  EXPECT_NO_THROW(layer.call(call));
}

TEST(Cancel, StatefulLayerKeepsItsStates) {
  LayerConfig c = gru(32, 4);
  c.stateful = true;
  c.batch_size = 2;
  Layer layer(c);
  std::vector<float> s0(64);
  for (std::size_t i = 0; i < s0.size(); ++i) s0[i] = 0.01f * static_cast<float>(i);
  layer.reset_states(s0.data(), s0.size(), 1);
  ASSERT_TRUE(cancelled_during(layer, 2, 400000, std::chrono::milliseconds(20)));
  std::vector<float> s1(64);
  layer.get_states(s1.data(), s1.size());
  EXPECT_EQ(s1, s0);
}

TEST(Cancel, NoScopeNoFlag) {
  EXPECT_EQ(cancel_flag(), nullptr);
  EXPECT_NO_THROW(throw_if_cancelled());
  std::atomic<bool> flag{true};
  {
    const CancelScope scope(&flag);
    EXPECT_EQ(cancel_flag(), &flag);
    EXPECT_THROW(throw_if_cancelled(), Error);
    {
      const CancelScope inner(nullptr);
      EXPECT_NO_THROW(throw_if_cancelled());
    }
    EXPECT_EQ(cancel_flag(), &flag);
  }
  EXPECT_EQ(cancel_flag(), nullptr);
}

}  // namespace
