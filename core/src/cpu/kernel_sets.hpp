// SPDX-License-Identifier: Apache-2.0
// The kernel sets this library is built with: each fills its part of a KernelSet from the
// translation units compiled for its instruction set (gemm_kernels.cpp, gate_kernels.cpp, int8_kernels.cpp).
#pragma once

#include "recur/cpu_kernels.hpp"

namespace recur {
namespace cpu {

#define RECUR_DECLARE_KERNEL_SET(isa)  \
  namespace isa {                      \
  void fill_gemm(KernelSet& set);      \
  void fill_gates(KernelSet& set);     \
  void fill_int8(KernelSet& set);      \
  }
// The set built with the compiler's default flags: "baseline" (SSE2 on x86-64), "neon" on aarch64.
#if !defined(RECUR_BASELINE_KERNELS)
#define RECUR_BASELINE_KERNELS baseline
#endif
RECUR_DECLARE_KERNEL_SET(RECUR_BASELINE_KERNELS)
#if defined(RECUR_HAVE_X86_KERNELS)
RECUR_DECLARE_KERNEL_SET(avx2)
RECUR_DECLARE_KERNEL_SET(avx512)
// int8_kernels.cpp built with AVX-512 VNNI too: the avx512 set's int8 GEMM where the CPU has it.
namespace avx512vnni {
void fill_int8(KernelSet& set);
}
// bf16_kernels.cpp: the avx512 set's bf16 GEMM (vdpbf16ps) where the CPU has AVX512_BF16.
namespace avx512bf16 {
void fill_bf16(KernelSet& set);
}
#endif
#if defined(RECUR_HAVE_NEONDOT_KERNELS)
// int8_kernels.cpp built with the dot-product extension: the neon set's int8 GEMM (sdot) where the
// CPU has it.
namespace neondot {
void fill_int8(KernelSet& set);
}
#endif
#undef RECUR_DECLARE_KERNEL_SET

}  // namespace cpu
}  // namespace recur
