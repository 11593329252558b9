// SPDX-License-Identifier: Apache-2.0
// Chooses the CPU kernel set once, from the CPU's features, as oneDNN and ONNX Runtime do: one
// binary runs everywhere and uses the widest vectors the machine has. RECUR_CPU_KERNELS asks for
// a set (to test each one on a machine that can run several).
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "cpu/kernel_sets.hpp"

#if defined(RECUR_HAVE_NEONDOT_KERNELS)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)  // Linux 4.15's bit, for older kernel headers
#endif
#endif

#define RECUR_STR_(x) #x
#define RECUR_STR(x) RECUR_STR_(x)

namespace recur {
namespace cpu {
namespace {

KernelSet make_set(const char* name, void (*fill_gemm)(KernelSet&), void (*fill_gates)(KernelSet&),
                   void (*fill_int8)(KernelSet&)) {
  KernelSet s{};
  s.name = name;
  fill_gemm(s);
  fill_gates(s);
  fill_int8(s);
  return s;
}

struct Sets {
  KernelSet all[3];
  const KernelSet* runnable[3];
  int count = 0;
  // The runnable sets before the extensions below upgraded them: what a CPU without those runs.
  KernelSet plain[3];
  const KernelSet* plain_runnable[3];

  Sets() {
    int n = 0;
#if defined(RECUR_HAVE_X86_KERNELS)
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    all[n] = make_set("avx512", avx512::fill_gemm, avx512::fill_gates, avx512::fill_int8);
    plain[n] = all[n];
    // The int8 GEMM's dot products: vpdpbusd where the CPU has AVX-512 VNNI.
    if (avx512 && __builtin_cpu_supports("avx512vnni")) avx512vnni::fill_int8(all[n]);
    if (avx512 && __builtin_cpu_supports("avx512bf16")) avx512bf16::fill_bf16(all[n]);
    if (avx512) add(n);
    ++n;
    all[n] = make_set("avx2", avx2::fill_gemm, avx2::fill_gates, avx2::fill_int8);
    plain[n] = all[n];
    if (avx2) add(n);
    ++n;
#endif
    all[n] = make_set(RECUR_STR(RECUR_BASELINE_KERNELS), RECUR_BASELINE_KERNELS::fill_gemm,
                      RECUR_BASELINE_KERNELS::fill_gates, RECUR_BASELINE_KERNELS::fill_int8);
    plain[n] = all[n];
#if defined(RECUR_HAVE_NEONDOT_KERNELS)
    // The int8 GEMM's dot products: sdot where the CPU has the dot-product extension.
    if (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) neondot::fill_int8(all[n]);
#endif
    add(n);
  }

  void add(int n) {
    plain_runnable[count] = &plain[n];
    runnable[count++] = &all[n];
  }
};

const Sets& sets() {
  static const Sets s;
  return s;
}

const KernelSet* find(const char* name) {
  const Sets& s = sets();
  for (int i = 0; i < s.count; ++i)
    if (std::strcmp(s.runnable[i]->name, name) == 0) return s.runnable[i];
  return nullptr;
}

const KernelSet* initial() {
  const Sets& s = sets();
  const char* asked = std::getenv("RECUR_CPU_KERNELS");
  if (asked && *asked) {
    if (const KernelSet* k = find(asked)) return k;
    // A set this CPU cannot run: the best one below it that it can.
    const char* order[] = {"avx512", "avx2", RECUR_STR(RECUR_BASELINE_KERNELS)};
    bool below = false;
    for (const char* name : order) {
      if (std::strcmp(name, asked) == 0) below = true;
      if (below)
        if (const KernelSet* k = find(name)) return k;
    }
  }
  return s.runnable[0];
}

std::atomic<const KernelSet*>& current() {
  static std::atomic<const KernelSet*> c{initial()};
  return c;
}

}  // namespace

const KernelSet& cpu_kernels() { return *current().load(std::memory_order_acquire); }

std::string cpu_kernels_reason() {
  const char* name = cpu_kernels().name;
  const char* asked = std::getenv("RECUR_CPU_KERNELS");
  if (current().load(std::memory_order_acquire) != initial())
    return std::string(name) + " (selected after load; the process started with " + initial()->name + ")";
  if (asked && *asked && std::strcmp(asked, name) == 0)
    return std::string(name) + " (asked for by RECUR_CPU_KERNELS)";
  if (asked && *asked)
    return std::string(name) + " (RECUR_CPU_KERNELS=" + asked +
           " names a set this CPU cannot run or an unknown one; this is the best one below it that the CPU runs)";
  return std::string(name) + " (the best set this CPU's features run; RECUR_CPU_KERNELS is unset)";
}

const KernelSet* const* runnable_kernel_sets(int* count) {
  *count = sets().count;
  return sets().runnable;
}

const KernelSet* const* plain_kernel_sets(int* count) {
  *count = sets().count;
  return sets().plain_runnable;
}

bool select_kernels(const char* name) {
  const KernelSet* k = find(name);
  if (!k) return false;
  current().store(k, std::memory_order_release);
  return true;
}

}  // namespace cpu
}  // namespace recur
