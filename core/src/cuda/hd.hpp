// SPDX-License-Identifier: Apache-2.0
// RECUR_HD marks the functions compiled for both the device (nvcc) and the host (g++: the
// emulator and the unit tests).
#pragma once

#ifdef __CUDACC__
#define RECUR_HD __host__ __device__
#else
#define RECUR_HD
#endif
