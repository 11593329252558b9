// SPDX-License-Identifier: Apache-2.0
#include "recur/limits.hpp"

#include <atomic>
#include <cstdio>

#include "recur/error.hpp"
#include "recur/log.hpp"

namespace recur {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t(1) << 20;
constexpr std::uint64_t kGiB = std::uint64_t(1) << 30;
// run_work: about 5 s of one core at the slowest work per unit recur plans (docs/budgets.md).
constexpr std::uint64_t kRunWorkDefault = std::uint64_t(1) << 38;

constexpr std::uint64_t kDefaults[kNumLimits] = {
    65536,       // units
    1u << 20,    // batch
    256 * kMiB,  // state_bytes
    kGiB,        // weight_bytes
    4 * kGiB,    // file_bytes
    kGiB,        // tensor_bytes
    256 * kMiB,  // total_state_bytes
    512 * kMiB,  // run_bytes: with the caller's copies of the outputs, a run stays near 2 GiB
    1u << 20,    // timesteps
    std::uint64_t(1) << 31,  // init_work: a GRU's Orthogonal recurrent kernel of about 870 units, 1 to 2 s
    kRunWorkDefault,         // run_work
};
constexpr const char* kLimitNames[kNumLimits] = {"units", "batch", "state_bytes", "weight_bytes", "file_bytes",
                                            "tensor_bytes", "total_state_bytes", "run_bytes", "timesteps",
                                            "init_work", "run_work"};
constexpr const char* kEnumNames[kNumLimits] = {"RECUR_LIMIT_UNITS",        "RECUR_LIMIT_BATCH",
                                                "RECUR_LIMIT_STATE_BYTES",  "RECUR_LIMIT_WEIGHT_BYTES",
                                                "RECUR_LIMIT_FILE_BYTES",   "RECUR_LIMIT_TENSOR_BYTES",
                                                "RECUR_LIMIT_TOTAL_STATE_BYTES", "RECUR_LIMIT_RUN_BYTES",
                                                "RECUR_LIMIT_TIMESTEPS",    "RECUR_LIMIT_INIT_WORK",
                                                "RECUR_LIMIT_RUN_WORK"};

std::atomic<std::uint64_t> g_limits[kNumLimits] = {{kDefaults[0]}, {kDefaults[1]}, {kDefaults[2]},
                                                   {kDefaults[3]}, {kDefaults[4]}, {kDefaults[5]},
                                                   {kDefaults[6]}, {kDefaults[7]}, {kDefaults[8]},
                                                   {kDefaults[9]}, {kDefaults[10]}};

bool counts_bytes(Limit which) {
  return which != Limit::units && which != Limit::batch && which != Limit::timesteps && which != Limit::init_work &&
         which != Limit::run_work;
}

std::string amount_string(double amount, Limit which) {
  char buf[64];
  const bool bytes = counts_bytes(which);
  if (bytes && amount >= double(kMiB))
    std::snprintf(buf, sizeof buf, "%.0f bytes (%.1f MiB)", amount, amount / double(kMiB));
  else
    std::snprintf(buf, sizeof buf, bytes ? "%.0f bytes" : "%.0f", amount);
  return buf;
}

}  // namespace

std::uint64_t limit(Limit which) { return g_limits[static_cast<int>(which)].load(std::memory_order_relaxed); }

std::uint64_t default_limit(Limit which) { return kDefaults[static_cast<int>(which)]; }

void set_limit(Limit which, std::uint64_t value) {
  const std::uint64_t v = value ? value : default_limit(which);
  g_limits[static_cast<int>(which)].store(v, std::memory_order_relaxed);
  log::write(log::Level::info, "limit '", limit_name(which), "' set to ", v, value ? "" : " (its default)", " (default ",
             default_limit(which), ")");
}

const char* limit_name(Limit which) { return kLimitNames[static_cast<int>(which)]; }

Limit limit_from_int(int which) {
  if (which < 0 || which >= kNumLimits)
    fail(Error::Code::invalid_argument, "limit: expected a recur_limit from 0 to ", kNumLimits - 1, ", got ", which);
  return static_cast<Limit>(which);
}

void check_limit(Limit which, double amount, const std::string& what) {
  const std::uint64_t cap = limit(which);
  if (amount <= static_cast<double>(cap)) return;
  const bool bytes = counts_bytes(which);
  fail(Error::Code::limit, what, bytes ? ": needs " : ": ", amount_string(amount, which),
       bytes ? ", over the " : " is over the ", limit_name(which), " limit of ",
       amount_string(static_cast<double>(cap), which), " (recur_set_limit(", kEnumNames[static_cast<int>(which)],
       ", ...) raises it)");
}

}  // namespace recur
