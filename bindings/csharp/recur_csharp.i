// SPDX-License-Identifier: Apache-2.0
/*
 * C# idioms for bindings/recur.i (included before the classes).
 *
 * - Namespace Recur (swig -namespace Recur; UseSWIG adds -dllimport itself).
 * - The SWIG proxies RecurLayer / RecurState / RecurModel / RecurModelState / RecurLayerOptions
 *   become the partial classes Layer / State / Model / ModelState / LayerOptions. Every generated
 *   method stays internal with its C (pointer, length) signature; the public, PascalCase API is
 *   hand-written in src/*.cs (partial classes), which pins float[] / byte[] with `fixed` (zero
 *   copy), passes array.Length as the 64-bit length, rejects null with ArgumentNullException and a
 *   disposed object with ObjectDisposedException.
 * - A failing recur_rc (and a failing factory status) raises Recur.RecurException(status, message)
 *   as a SWIG pending exception, from inside the same native call (so the thread-local
 *   recur_last_error() is read on the thread that failed), in the `ret` / `argout` typemaps, which
 *   SWIG emits after everything else in the wrapper (nothing is skipped, nothing leaks).
 */

%include <typemaps.i>

/* ---- integer widths: C size_t is 64-bit on LP64; SWIG 4.1 would make it a 32-bit uint ------ */
%apply unsigned long long { size_t };
%apply unsigned long long *OUTPUT { size_t *out_len, size_t *len, size_t *inputs_len, size_t *outputs_len };
%apply int *OUTPUT { int32_t *count, int32_t *ndims, int32_t *num_states, int32_t *batch, int32_t *units,
                     int32_t *input_size, int32_t *output_size, int32_t *recurrent, int32_t *num_threads,
                     int32_t *rank, int32_t *token_ids, int32_t *stateful, int32_t *sequence, int32_t *cancelled,
                     int32_t *dtype };
%apply long long *OUTPUT { int64_t *dim0, int64_t *dim1 };
%apply unsigned long long *OUTPUT { uint64_t *value, uint64_t *layers, uint64_t *states, uint64_t *models,
                                   uint64_t *model_states, uint64_t *run_options };

/* ---- arrays: raw pointers (the public wrappers pin managed arrays with `fixed`) ------------ */
/* const long long *: the state handles of forward_states, a pinned long[]. const int32_t *: the
 * per-input timesteps of the model calls, a pinned int[]. int64_t *dims: a pinned long[] that a
 * model call fills with a tensor's dims. */
%typemap(ctype)  float *, const float *, const uint8_t *, uint8_t *out_bytes, const long long *, const int32_t *, int64_t *dims "void *"
%typemap(imtype) float *, const float *, const uint8_t *, uint8_t *out_bytes, const long long *, const int32_t *, int64_t *dims "global::System.IntPtr"
%typemap(cstype) float *, const float *, const uint8_t *, uint8_t *out_bytes, const long long *, const int32_t *, int64_t *dims "global::System.IntPtr"
%typemap(csin)   float *, const float *, const uint8_t *, uint8_t *out_bytes, const long long *, const int32_t *, int64_t *dims "$csinput"
%typemap(in)     float *, const float *, const uint8_t *, uint8_t *out_bytes, const long long *, const int32_t *, int64_t *dims %{ $1 = ($1_ltype)$input; %}

/* ---- library-owned strings returned through out-parameters -------------------------------- */
%typemap(ctype)  const char ** "const char **"
%typemap(imtype) const char ** "out global::System.IntPtr"
%typemap(cstype) const char ** "out global::System.IntPtr"
%typemap(csin)   const char ** "out $csinput"
%typemap(in)     const char ** %{ $1 = ($1_ltype)$input; %}

/* ---- errors --------------------------------------------------------------------------------- */
%{
typedef void (SWIGSTDCALL *RecurCSharpExceptionCallback)(int status, const char *message);
static RecurCSharpExceptionCallback recur_csharp_exception_callback = 0;

#ifdef __cplusplus
extern "C"
#endif
SWIGEXPORT void SWIGSTDCALL RecurCSharpRegisterExceptionCallback(RecurCSharpExceptionCallback callback) {
  recur_csharp_exception_callback = callback;
}

/* Sets Recur.RecurException(status, recur_last_error()) as the pending managed exception. */
static void recur_csharp_raise(int status) {
  const char *message = recur_last_error();
  if (recur_csharp_exception_callback)
    recur_csharp_exception_callback(status, message && *message ? message : recur_status_string((recur_status)status));
  else
    SWIG_CSharpSetPendingException(SWIG_CSharpApplicationException, message);
}
%}

%pragma(csharp) imclasscode=%{
  internal class RecurExceptionHelper {
    internal delegate void RecurExceptionDelegate(int status, string message);
    static RecurExceptionDelegate recurDelegate = new RecurExceptionDelegate(SetPendingRecurException);

    [global::System.Runtime.InteropServices.DllImport("$dllimport", EntryPoint="RecurCSharpRegisterExceptionCallback")]
    static extern void RecurCSharpRegisterExceptionCallback(RecurExceptionDelegate callback);

    static void SetPendingRecurException(int status, string message) {
      SWIGPendingException.Set(global::Recur.RecurException.From(status, message));
    }

    static RecurExceptionHelper() {
      RecurCSharpRegisterExceptionCallback(recurDelegate);
    }
  }
  internal static RecurExceptionHelper recurExceptionHelper = new RecurExceptionHelper();
%}

/* Methods return void in C#; a failing status becomes a pending exception thrown on return. */
%typemap(ctype)  recur_rc "void"
%typemap(imtype) recur_rc "void"
%typemap(cstype) recur_rc "void"
%typemap(out)    recur_rc ""
%typemap(csout, excode=SWIGEXCODE) recur_rc { $imcall;$excode }
%typemap(ret, canthrow=1) recur_rc %{ if ($1 != RECUR_OK) recur_csharp_raise((int)$1); %}

/* Factories: the status out-parameter is hidden and raised after the call. */
%typemap(in, numinputs=0) recur_rc *st (recur_rc st_value) %{ st_value = RECUR_OK; $1 = &st_value; %}
%typemap(argout, canthrow=1) recur_rc *st %{ if (*$1 != RECUR_OK) recur_csharp_raise((int)*$1); %}

/* ---- names, visibility, classes ------------------------------------------------------------- */
%rename(Layer) RecurLayer;
%rename(State) RecurState;
%rename(Model) RecurModel;
%rename(ModelState) RecurModelState;
%rename(LayerOptions) RecurLayerOptions;
%rename(NativeLayerInfo) recur_layer_info;
%rename(NativeModelInfo) recur_model_info;

%pragma(csharp) moduleclassmodifiers="internal class"
%csmethodmodifiers "internal";
%typemap(csclassmodifiers) RecurLayer, RecurState, RecurModel, RecurModelState, RecurLayerOptions "public sealed partial class"
%typemap(csclassmodifiers) recur_layer_info, recur_model_info "internal class"

/* LayerOptions: only the constructor is public; src/LayerOptions.Api.cs wraps the fields in
 * PascalCase properties that check for Dispose first. */
%csmethodmodifiers RecurLayerOptions::RecurLayerOptions "public";
/* It is also an entry point: the native libraries are loaded (src/NativeLoader.cs) before its
 * P/Invoke, so that a missing one is reported by name. */
%typemap(csconstruct, excode=SWIGEXCODE) RecurLayerOptions %{: this(global::Recur.NativeLoader.Ensure() ? $imcall : global::System.IntPtr.Zero, true) {$excode
  }
%}

/* Parts of the C ABI that the common interface leaves out. */
%rename(recur_binding_version_number) recur_version_number;
uint32_t recur_version_number(void);
%rename(recur_binding_status_string) recur_status_string;
const char *recur_status_string(int status);
%extend RecurLayer {
  recur_rc get_initial_state(int32_t batch, float *output, size_t output_len) {
    return recur_layer_get_initial_state($self, batch, output, output_len);
  }
}

/* ---- named runs, run options and the log callback (C ABI 0.6) -------------------------------- */
/* The descriptors (recur_tensor, recur_output) are laid out by src/NamedRun.cs as blittable
 * structs in the caller's stack memory; they, the run options handle and the log callback's
 * function pointer cross as raw pointers. The calls go through SWIG (not a DllImport of
 * librecur.so.0) so that a failing status is raised as RecurException inside the same native call,
 * as for every other method. */
%typemap(ctype)  const recur_tensor *, recur_output *, recur_run_options *, const recur_run_options *,
                 recur_log_callback, void *log_user_data "void *"
%typemap(imtype) const recur_tensor *, recur_output *, recur_run_options *, const recur_run_options *,
                 recur_log_callback, void *log_user_data "global::System.IntPtr"
%typemap(cstype) const recur_tensor *, recur_output *, recur_run_options *, const recur_run_options *,
                 recur_log_callback, void *log_user_data "global::System.IntPtr"
%typemap(csin)   const recur_tensor *, recur_output *, recur_run_options *, const recur_run_options *,
                 recur_log_callback, void *log_user_data "$csinput"
%typemap(in)     const recur_tensor *, recur_output *, recur_run_options *, const recur_run_options *,
                 recur_log_callback, void *log_user_data %{ $1 = ($1_ltype)$input; %}
%typemap(ctype)  recur_run_options **out "void **"
%typemap(imtype) recur_run_options **out "out global::System.IntPtr"
%typemap(cstype) recur_run_options **out "out global::System.IntPtr"
%typemap(csin)   recur_run_options **out "out $csinput"
%typemap(in)     recur_run_options **out %{ $1 = ($1_ltype)$input; %}

%extend RecurModel {
  recur_rc run_named(const recur_tensor *inputs, int32_t num_inputs, recur_output *outputs, int32_t num_outputs,
                     const recur_run_options *options) {
    return recur_model_run_named($self, inputs, num_inputs, outputs, num_outputs, options);
  }
  recur_rc output_shapes(const recur_tensor *inputs, int32_t num_inputs, recur_output *outputs, int32_t num_outputs) {
    return recur_model_output_shapes($self, inputs, num_inputs, outputs, num_outputs);
  }
}
%extend RecurModelState {
  recur_rc step_named(const recur_tensor *inputs, int32_t num_inputs, recur_output *outputs, int32_t num_outputs,
                      const recur_run_options *options) {
    return recur_model_state_step_named($self, inputs, num_inputs, outputs, num_outputs, options);
  }
  recur_rc output_shapes(const recur_tensor *inputs, int32_t num_inputs, recur_output *outputs, int32_t num_outputs) {
    return recur_model_state_output_shapes($self, inputs, num_inputs, outputs, num_outputs);
  }
}

/* Many states in one step (since 0.8): the states array is the managed code's pinned IntPtr[]. */
%typemap(ctype)  recur_model_state *const *states "void *"
%typemap(imtype) recur_model_state *const *states "global::System.IntPtr"
%typemap(cstype) recur_model_state *const *states "global::System.IntPtr"
%typemap(csin)   recur_model_state *const *states "$csinput"
%typemap(in)     recur_model_state *const *states %{ $1 = ($1_ltype)$input; %}

%inline %{
recur_rc recur_cs_states_step_named(recur_model_state *const *states, int32_t num_states, const recur_tensor *inputs,
                                    int32_t num_inputs, recur_output *outputs, int32_t num_outputs,
                                    const recur_run_options *options) {
  return recur_model_states_step_named(states, num_states, inputs, num_inputs, outputs, num_outputs, options);
}
recur_rc recur_cs_states_output_shapes(recur_model_state *const *states, int32_t num_states, const recur_tensor *inputs,
                                       int32_t num_inputs, recur_output *outputs, int32_t num_outputs) {
  return recur_model_states_output_shapes((const recur_model_state *const *)states, num_states, inputs, num_inputs,
                                          outputs, num_outputs);
}
%}

%inline %{
recur_rc recur_cs_run_options_create(recur_run_options **out) { return recur_run_options_create(out); }
void recur_cs_run_options_destroy(recur_run_options *options) { recur_run_options_destroy(options); }
recur_rc recur_cs_run_options_cancel(recur_run_options *options) { return recur_run_options_cancel(options); }
recur_rc recur_cs_run_options_reset(recur_run_options *options) { return recur_run_options_reset(options); }
recur_rc recur_cs_run_options_is_cancelled(const recur_run_options *options, int32_t *cancelled) {
  return recur_run_options_is_cancelled(options, cancelled);
}
recur_rc recur_cs_live_run_options(uint64_t *run_options) { return recur_live_run_options(run_options); }
recur_rc recur_cs_run_options_set_timeout(recur_run_options *options, double seconds) {
  return recur_run_options_set_timeout(options, seconds);
}
double recur_cs_run_options_get_timeout(const recur_run_options *options) {
  double s = 0;
  recur_run_options_get_timeout(options, &s); /* cannot fail on a live handle */
  return s;
}
recur_rc recur_cs_set_log_callback(recur_log_callback callback, void *log_user_data, int32_t min_level) {
  return recur_set_log_callback(callback, log_user_data, min_level);
}
%}
