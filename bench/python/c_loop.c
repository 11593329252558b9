// SPDX-License-Identifier: Apache-2.0
// The Python benchmark's C baseline: the same model calls as the Python API makes
// (recur_model_run_named for predict, recur_model_state_step_named for a stream step), in a
// loop written in C, so that the Python layers' own cost per call is the difference. Built by
// bench.py with the system's cc into a shared library and loaded with ctypes into the same
// process as the Python calls (it binds to the librecur.so.0 recur's package already loaded).
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "recur/recur.h"

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

// Opens the model at `path` with `threads` CPU threads and times `iterations` calls, after
// `warmup` untimed ones: stream = 0: recur_model_run_named on (batch, timesteps, features);
// stream = 1: recur_model_state_step_named of one step, (batch, 1, features), on one stream.
// named = 0: the float entry points instead (recur_model_run, recur_model_state_step), which
// show what the named call's lookups cost. The output is written to out (out_len floats).
// Returns nanoseconds per call, or minus the recur status on an error.
double bench_c_loop_ns(const char *path, const char *input_name, const char *output_name, int32_t threads,
                       int32_t stream, int32_t named, int32_t batch, int32_t timesteps, int32_t features,
                       const float *x, float *out, size_t out_len, int32_t warmup, int32_t iterations) {
  recur_model *model = NULL;
  recur_model_state *state = NULL;
  recur_tensor in;
  recur_output o;
  recur_status st;
  double t0, t1;
  int32_t i;
  if ((st = recur_model_open(&model, path)) != RECUR_OK) return -(double)st;
  if ((st = recur_model_set_num_threads(model, threads)) != RECUR_OK) goto fail;
  if (stream && (st = recur_model_state_create(&state, model, batch)) != RECUR_OK) goto fail;
  recur_tensor_init(&in, RECUR_TENSOR_VERSION);
  recur_output_init(&o, RECUR_OUTPUT_VERSION);
  in.name = input_name;
  in.dtype = RECUR_DTYPE_FLOAT32;
  in.data = x;
  in.rank = 3;
  in.dims[0] = batch;
  in.dims[1] = stream ? 1 : timesteps;
  in.dims[2] = features;
  in.length = (size_t)batch * (size_t)in.dims[1] * (size_t)features;
  o.name = output_name;
  o.data = out;
  o.capacity = out_len;
  t0 = 0;
  for (i = 0; i < warmup + iterations; ++i) {
    if (i == warmup) t0 = now_ns();
    if (named)
      st = stream ? recur_model_state_step_named(state, &in, 1, &o, 1, NULL)
                  : recur_model_run_named(model, &in, 1, &o, 1, NULL);
    else
      st = stream ? recur_model_state_step(state, 1, x, in.length, NULL, 0, out, out_len)
                  : recur_model_run(model, x, in.length, batch, timesteps, NULL, 0, out, out_len);
    if (st != RECUR_OK) goto fail;
  }
  t1 = now_ns();
  recur_model_state_destroy(state);
  recur_model_destroy(model);
  return (t1 - t0) / (double)(iterations > 0 ? iterations : 1);
fail:
  recur_model_state_destroy(state);
  recur_model_destroy(model);
  return -(double)st;
}
