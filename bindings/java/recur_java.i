// SPDX-License-Identifier: Apache-2.0
/*
 * Java idioms for bindings/recur.i (included by it before the classes).
 *
 * - Package `recur`; module class `Recur` (swig -module Recur), JNI class `RecurJNI`.
 * - RecurLayerOptions/RecurLayer/RecurState/RecurModel/RecurModelState become LayerOptions/Layer/
 *   State/Model/ModelState, all
 *   java.lang.AutoCloseable (close() is idempotent). A method called after close() throws
 *   recur.ClosedException (an IllegalStateException) from the native side, before any argument is
 *   touched, so a closed object never reaches the C library.
 * - Every (pointer, length) pair takes a Java `Object` at the JNI level: a float[] / byte[]
 *   (Get<Type>ArrayElements, released with JNI_ABORT for inputs and copied back for outputs) or a
 *   direct java.nio buffer in native byte order (GetDirectBufferAddress: zero copy; the elements
 *   between position and limit are used). null passes (NULL, 0). The raw methods are package-private;
 *   the public, typed overloads (float[], FloatBuffer, byte[], ByteBuffer) are in the javacode of
 *   each class below and in the hand-written files of bindings/java/src/recur.
 * - recur_rc is raised from a `ret` typemap, which SWIG emits after `freearg`, so the arrays are
 *   released first; the message is recur_last_error() read in the same native call (same thread).
 *   Status -> exception: RecurException and one subclass per status (see RecurException.java).
 * - Finalizers: SWIG 4.1 proxies keep their finalize() (marked @SuppressWarnings("deprecation"),
 *   quiet on JDK 17) as a safety net for objects that were never closed; close() is the real API.
 */

%{
#include <jni.h>

/* Throws recur/<cls>(String) unless an exception is already pending. */
static void recur_java_throw_plain(JNIEnv *jenv, const char *cls, const char *msg) {
  jclass c;
  if ((*jenv)->ExceptionCheck(jenv)) return;
  c = (*jenv)->FindClass(jenv, cls);
  if (c) (*jenv)->ThrowNew(jenv, c, msg);
}

/* Turns a failed status into the typed exception, with the thread-local message of the failure. */
static void recur_java_raise(JNIEnv *jenv, int status) {
  const char *cls;
  jclass c;
  jmethodID ctor;
  jstring msg;
  jthrowable ex;
  if ((*jenv)->ExceptionCheck(jenv)) return; /* an argument error is already pending */
  switch (status) {
    case RECUR_ERR_INVALID_ARGUMENT: cls = "recur/InvalidArgumentException"; break;
    case RECUR_ERR_SHAPE: cls = "recur/ShapeException"; break;
    case RECUR_ERR_UNSUPPORTED: cls = "recur/UnsupportedException"; break;
    case RECUR_ERR_PARSE: cls = "recur/ParseException"; break;
    case RECUR_ERR_STATE: cls = "recur/StateException"; break;
    case RECUR_ERR_OUT_OF_MEMORY: cls = "recur/OutOfMemoryException"; break;
    case RECUR_ERR_IO: cls = "recur/IoException"; break;
    case RECUR_ERR_LIMIT: cls = "recur/LimitException"; break;
    case RECUR_ERR_INTERNAL: cls = "recur/InternalException"; break;
    case RECUR_ERR_CANCELLED: cls = "recur/CancelledException"; break;
    default: cls = "recur/RecurException"; break;
  }
  c = (*jenv)->FindClass(jenv, cls);
  if (!c) return; /* NoClassDefFoundError pending */
  ctor = (*jenv)->GetMethodID(jenv, c, "<init>", "(ILjava/lang/String;)V");
  if (!ctor) return;
  msg = (*jenv)->NewStringUTF(jenv, recur_last_error());
  if (!msg) return;
  ex = (jthrowable)(*jenv)->NewObject(jenv, c, ctor, (jint)status, msg);
  if (ex) (*jenv)->Throw(jenv, ex);
}

/* Array or direct-buffer arguments. kind: 0 none (null), 1 Java array, 2 direct buffer.
 * The cached IDs are written once with the same values by whichever thread comes first. */
static jfieldID recur_java_position_fid, recur_java_limit_fid;
static jclass recur_java_float_array_class, recur_java_byte_array_class;

static jclass recur_java_array_class(JNIEnv *jenv, int is_byte) {
  jclass *slot = is_byte ? &recur_java_byte_array_class : &recur_java_float_array_class;
  if (!*slot) {
    jclass local = (*jenv)->FindClass(jenv, is_byte ? "[B" : "[F");
    if (!local) return NULL;
    *slot = (jclass)(*jenv)->NewGlobalRef(jenv, local);
    (*jenv)->DeleteLocalRef(jenv, local);
  }
  return *slot;
}

static void *recur_java_acquire(JNIEnv *jenv, jobject obj, int is_byte, size_t *len, int *kind) {
  void *p;
  *len = 0;
  *kind = 0;
  if (!obj || (*jenv)->ExceptionCheck(jenv)) return NULL; /* nothing more once an exception is pending */
  p = (*jenv)->GetDirectBufferAddress(jenv, obj);
  if (p) {
    jint pos, lim;
    if (!recur_java_position_fid) {
      jclass b = (*jenv)->FindClass(jenv, "java/nio/Buffer");
      if (!b) return NULL;
      recur_java_limit_fid = (*jenv)->GetFieldID(jenv, b, "limit", "I");
      recur_java_position_fid = (*jenv)->GetFieldID(jenv, b, "position", "I");
      if (!recur_java_position_fid || !recur_java_limit_fid) return NULL;
    }
    pos = (*jenv)->GetIntField(jenv, obj, recur_java_position_fid);
    lim = (*jenv)->GetIntField(jenv, obj, recur_java_limit_fid);
    *kind = 2;
    *len = (size_t)(lim - pos);
    return (char *)p + (size_t)pos * (is_byte ? 1u : sizeof(float));
  }
  if ((*jenv)->ExceptionCheck(jenv)) return NULL;
  {
    jclass ac = recur_java_array_class(jenv, is_byte);
    if (!ac) return NULL;
    if (!(*jenv)->IsInstanceOf(jenv, obj, ac)) {
      recur_java_throw_plain(jenv, "java/lang/IllegalArgumentException",
                             is_byte ? "expected a byte[] or a direct ByteBuffer"
                                     : "expected a float[] or a direct FloatBuffer in native byte order");
      return NULL;
    }
  }
  *len = (size_t)(*jenv)->GetArrayLength(jenv, (jarray)obj);
  p = is_byte ? (void *)(*jenv)->GetByteArrayElements(jenv, (jbyteArray)obj, NULL)
              : (void *)(*jenv)->GetFloatArrayElements(jenv, (jfloatArray)obj, NULL);
  if (!p) { *len = 0; return NULL; } /* OutOfMemoryError pending */
  *kind = 1;
  return p;
}

static void recur_java_release(JNIEnv *jenv, jobject obj, void *p, int kind, int is_byte, int copy_back) {
  if (kind != 1 || !p) return;
  if (is_byte)
    (*jenv)->ReleaseByteArrayElements(jenv, (jbyteArray)obj, (jbyte *)p, copy_back ? 0 : JNI_ABORT);
  else
    (*jenv)->ReleaseFloatArrayElements(jenv, (jfloatArray)obj, (jfloat *)p, copy_back ? 0 : JNI_ABORT);
}

%}

/* ------------------------------------------------------------------------------------------ */
/* (pointer, length) pairs                                                                      */
/* ------------------------------------------------------------------------------------------ */

%define RECUR_JAVA_BUFFER(CTYPE, IS_BYTE, COPY_BACK)
%typemap(jni) (CTYPE *BUF, size_t LEN) "jobject"
%typemap(jtype) (CTYPE *BUF, size_t LEN) "Object"
%typemap(jstype) (CTYPE *BUF, size_t LEN) "Object"
%typemap(javain) (CTYPE *BUF, size_t LEN) "$javainput"
%typemap(in) (CTYPE *BUF, size_t LEN) (int kind = 0) {
  $1 = ($1_ltype)recur_java_acquire(jenv, $input, IS_BYTE, &$2, &kind);
}
%typemap(freearg) (CTYPE *BUF, size_t LEN) {
  recur_java_release(jenv, $input, (void *)$1, kind$argnum, IS_BYTE, COPY_BACK);
}
%enddef

RECUR_JAVA_BUFFER(const float, 0, 0)
RECUR_JAVA_BUFFER(float, 0, 1)
RECUR_JAVA_BUFFER(const uint8_t, 1, 0)
RECUR_JAVA_BUFFER(uint8_t, 1, 1)
%apply (uint8_t *BUF, size_t LEN) { (uint8_t *out_bytes, size_t capacity) }
%apply (const float *BUF, size_t LEN) {
  (const float *input, size_t input_len), (const float *initial_state, size_t initial_state_len),
  (const float *states, size_t states_len)
}
%apply (float *BUF, size_t LEN) {
  (float *output, size_t output_len), (float *final_state, size_t final_state_len)
}
%apply (const uint8_t *BUF, size_t LEN) { (const uint8_t *mask, size_t mask_len), (const uint8_t *bytes, size_t bytes_len) }

/* Per-input timesteps of the model calls: an int[] (null passes NULL, 0). */
%typemap(jni) (const int32_t *timesteps, int32_t num_timesteps) "jintArray"
%typemap(jtype) (const int32_t *timesteps, int32_t num_timesteps) "int[]"
%typemap(jstype) (const int32_t *timesteps, int32_t num_timesteps) "int[]"
%typemap(javain) (const int32_t *timesteps, int32_t num_timesteps) "$javainput"
%typemap(in) (const int32_t *timesteps, int32_t num_timesteps) {
  $1 = NULL;
  $2 = 0;
  if ($input && !(*jenv)->ExceptionCheck(jenv)) {
    $1 = (int32_t *)(*jenv)->GetIntArrayElements(jenv, $input, NULL); /* NULL: OutOfMemoryError pending */
    if ($1) $2 = (int32_t)(*jenv)->GetArrayLength(jenv, $input);
  }
}
%typemap(freearg) (const int32_t *timesteps, int32_t num_timesteps) {
  if ($1) (*jenv)->ReleaseIntArrayElements(jenv, $input, (jint *)$1, JNI_ABORT);
}

/* A model tensor's dims: a long[] the call fills (up to its length, RECUR_MAX_RANK suffice). */
%typemap(jni) (int64_t *dims, int32_t dims_cap) "jlongArray"
%typemap(jtype) (int64_t *dims, int32_t dims_cap) "long[]"
%typemap(jstype) (int64_t *dims, int32_t dims_cap) "long[]"
%typemap(javain) (int64_t *dims, int32_t dims_cap) "$javainput"
%typemap(in) (int64_t *dims, int32_t dims_cap) {
  $1 = NULL;
  $2 = 0;
  if ($input && !(*jenv)->ExceptionCheck(jenv)) {
    $1 = (int64_t *)(*jenv)->GetLongArrayElements(jenv, $input, NULL);
    if ($1) $2 = (int32_t)(*jenv)->GetArrayLength(jenv, $input);
  }
}
%typemap(freearg) (int64_t *dims, int32_t dims_cap) {
  if ($1) (*jenv)->ReleaseLongArrayElements(jenv, $input, (jlong *)$1, 0);
}

/* State handles for forward_states: a long[] of native addresses (built by State.handles). */
%typemap(jni) (const long long *handles, int32_t num_handles) "jlongArray"
%typemap(jtype) (const long long *handles, int32_t num_handles) "long[]"
%typemap(jstype) (const long long *handles, int32_t num_handles) "long[]"
%typemap(javain) (const long long *handles, int32_t num_handles) "$javainput"
%typemap(in) (const long long *handles, int32_t num_handles) {
  $1 = NULL;
  $2 = 0;
  if ($input && !(*jenv)->ExceptionCheck(jenv)) {
    $1 = (long long *)(*jenv)->GetLongArrayElements(jenv, $input, NULL); /* NULL: OutOfMemoryError pending */
    if ($1) $2 = (int32_t)(*jenv)->GetArrayLength(jenv, $input);
  }
}
%typemap(freearg) (const long long *handles, int32_t num_handles) {
  if ($1) (*jenv)->ReleaseLongArrayElements(jenv, $input, (jlong *)$1, JNI_ABORT);
}

/* ------------------------------------------------------------------------------------------ */
/* Status: recur_rc -> void, raised as a typed exception                                       */
/* ------------------------------------------------------------------------------------------ */

%typemap(jni) recur_rc "void"
%typemap(jtype) recur_rc "void"
%typemap(jstype) recur_rc "void"
%typemap(javaout) recur_rc { $jnicall; }
%typemap(out) recur_rc ""
%typemap(ret) recur_rc %{ if ($1 != RECUR_OK) recur_java_raise(jenv, (int)$1); %}

/* Factories' status out-parameter: hidden from Java, raised after the call. */
%typemap(in, numinputs=0) recur_rc *st (recur_rc st_temp = RECUR_OK) %{ $1 = &st_temp; %}
%typemap(argout) recur_rc *st %{ if (st_temp$argnum != RECUR_OK) recur_java_raise(jenv, (int)st_temp$argnum); %}

/* Scalar out-parameters: a one-element array (used only by the raw methods). */
%typemap(jni) int32_t *OUT_INT "jintArray"
%typemap(jtype) int32_t *OUT_INT "int[]"
%typemap(jstype) int32_t *OUT_INT "int[]"
%typemap(javain) int32_t *OUT_INT "$javainput"
%typemap(in) int32_t *OUT_INT (int32_t tmp = 0) { $1 = &tmp; }
%typemap(argout) int32_t *OUT_INT {
  if ($input && (*jenv)->GetArrayLength(jenv, $input) >= 1) { jint v = (jint)*$1; (*jenv)->SetIntArrayRegion(jenv, $input, 0, 1, &v); }
}
%apply int32_t *OUT_INT { int32_t *count, int32_t *ndims, int32_t *num_states, int32_t *batch, int32_t *units,
                          int32_t *input_size, int32_t *output_size, int32_t *recurrent, int32_t *num_threads,
                          int32_t *rank, int32_t *token_ids, int32_t *stateful, int32_t *sequence, int32_t *dtype }

%typemap(jni) int64_t *OUT_LONG, size_t *OUT_LONG "jlongArray"
%typemap(jtype) int64_t *OUT_LONG, size_t *OUT_LONG "long[]"
%typemap(jstype) int64_t *OUT_LONG, size_t *OUT_LONG "long[]"
%typemap(javain) int64_t *OUT_LONG, size_t *OUT_LONG "$javainput"
%typemap(in) int64_t *OUT_LONG (int64_t tmp = 0) { $1 = &tmp; }
%typemap(in) size_t *OUT_LONG (size_t tmp = 0) { $1 = &tmp; }
%typemap(argout) int64_t *OUT_LONG, size_t *OUT_LONG {
  if ($input && (*jenv)->GetArrayLength(jenv, $input) >= 1) { jlong v = (jlong)*$1; (*jenv)->SetLongArrayRegion(jenv, $input, 0, 1, &v); }
}
%apply int64_t *OUT_LONG { int64_t *dim0, int64_t *dim1 }
/* Limits: a uint64_t as a Java long (Recur.getLimit/setLimit check the sign). */
%typemap(jni) uint64_t *OUT_LONG "jlongArray"
%typemap(jtype) uint64_t *OUT_LONG "long[]"
%typemap(jstype) uint64_t *OUT_LONG "long[]"
%typemap(javain) uint64_t *OUT_LONG "$javainput"
%typemap(in) uint64_t *OUT_LONG (uint64_t tmp = 0) { $1 = &tmp; }
%typemap(argout) uint64_t *OUT_LONG {
  if ($input && (*jenv)->GetArrayLength(jenv, $input) >= 1) { jlong v = (jlong)*$1; (*jenv)->SetLongArrayRegion(jenv, $input, 0, 1, &v); }
}
%apply uint64_t *OUT_LONG { uint64_t *value, uint64_t *layers, uint64_t *states, uint64_t *models, uint64_t *model_states }
%apply long long { uint64_t limit_value }
%apply size_t *OUT_LONG { size_t *out_len, size_t *len, size_t *inputs_len, size_t *outputs_len }

/* String out-parameters (owned by the library): a one-element String[]. */
%typemap(jni) const char **OUT_STR "jobjectArray"
%typemap(jtype) const char **OUT_STR "String[]"
%typemap(jstype) const char **OUT_STR "String[]"
%typemap(javain) const char **OUT_STR "$javainput"
%typemap(in) const char **OUT_STR (const char *tmp = NULL) { $1 = ($1_ltype)&tmp; }
%typemap(argout) const char **OUT_STR {
  if ($input && *$1 && (*jenv)->GetArrayLength(jenv, $input) >= 1) {
    jstring s = (*jenv)->NewStringUTF(jenv, *$1);
    if (s) { (*jenv)->SetObjectArrayElement(jenv, $input, 0, s); (*jenv)->DeleteLocalRef(jenv, s); }
  }
}
%apply const char **OUT_STR { const char **name, const char **class_name, const char **config_json,
                              const char **requested, const char **backend, const char **path, const char **reason,
                              const char **device_name, const char **why }

/* The info structs are filled by the raw getInfo methods. */

/* ------------------------------------------------------------------------------------------ */
/* Closed objects: the `self` argument is checked first, so nothing has been acquired yet.      */
/* ------------------------------------------------------------------------------------------ */

%define RECUR_JAVA_SELF(TYPE, NAME)
%typemap(in) TYPE *self, const TYPE *self %{
  $1 = *($1_ltype *)&$input;
  if (!$1) { recur_java_throw_plain(jenv, "recur/ClosedException", "recur: this " NAME " is closed"); return $null; }
%}
%enddef
RECUR_JAVA_SELF(RecurLayerOptions, "LayerOptions")
RECUR_JAVA_SELF(RecurLayer, "Layer")
RECUR_JAVA_SELF(RecurState, "State")
RECUR_JAVA_SELF(RecurModel, "Model")
RECUR_JAVA_SELF(RecurModelState, "ModelState")

/* ------------------------------------------------------------------------------------------ */
/* Naming                                                                                       */
/* ------------------------------------------------------------------------------------------ */

%rename(LayerOptions) RecurLayerOptions;
%rename(Layer) RecurLayer;
%rename(State) RecurState;
%rename(Model) RecurModel;
%rename(ModelState) RecurModelState;
%rename(LayerInfoRaw) recur_layer_info;
%rename(ModelInfoRaw) recur_model_info;
%rename(bindingVersion) recur_binding_version;
%rename(cpuKernels) recur_binding_cpu_kernels;
%rename(getLimitRaw) recur_binding_get_limit;
%rename(defaultLimitRaw) recur_binding_default_limit;
%rename(setLimitRaw) recur_binding_set_limit;
%rename(liveHandlesRaw) recur_binding_live_handles;
%rename("%(lowercamelcase)s", %$isfunction) "";
%rename("%(lowercamelcase)s", %$isvariable) "";

/* Raw methods: package-private, wrapped by typed public methods. */
%javamethodmodifiers RecurLayer::create "";
%javamethodmodifiers RecurLayer::create_from_json "";
%rename(createRaw) RecurLayer::create;
%rename(createFromJsonRaw) RecurLayer::create_from_json;
%rename(createRaw) RecurState::create;
%rename(openRaw) RecurModel::open;
%rename(getLayerRaw) RecurModel::get_layer;
%rename(getInfoRaw) get_info;
%rename(outputLengthRaw) output_length;
%rename(forwardRaw) forward;
%rename(forwardStateRaw) forward_state;
%rename(setStatesRaw) set_states;
%rename(getStatesRaw) get_states;
%rename(cellCallRaw) cell_call;
%rename(dropoutMaskRaw) dropout_mask;
%rename(recurrentDropoutMaskRaw) recurrent_dropout_mask;
%rename(numWeightsRaw) RecurLayer::num_weights;
%rename(weightShapeRaw) weight_shape;
%rename(weightNameRaw) weight_name;
%rename(getWeightRaw) get_weight;
%rename(setWeightRaw) set_weight;
%rename(weightsLengthRaw) weights_length;
%rename(getWeightsRaw) get_weights;
%rename(setWeightsRaw) set_weights;
%rename(getLossesRaw) get_losses;
%rename(lossNameRaw) loss_name;
%rename(shapeRaw) RecurState::shape;
%rename(getRaw) RecurState::get;
%rename(setRaw) RecurState::set;
%rename(layerRaw) RecurModel::layer;
%rename(runRaw) RecurModel::run;
%rename(cStepNsRaw) recur_binding_c_step_ns;
%rename(deviceCountRaw) recur_binding_device_count;
%rename(checkDeviceRaw) recur_binding_device_check;
%rename(forwardStatesRaw) forward_states;
%rename(forwardDeviceRaw) forward_device;
%rename(forwardStatesDeviceRaw) forward_states_device;
%rename(setDeviceRaw) set_device;
%rename(getDeviceRaw) get_device;
%rename(setNumThreadsRaw) set_num_threads;
%rename(getNumThreadsRaw) get_num_threads;
%rename(setPrecisionRaw) set_precision;
%rename(getPrecisionRaw) get_precision;
%rename(setKerasBackendRaw) set_keras_backend;
%rename(openMemoryRaw) RecurModel::open_memory;
%rename(numInputsRaw) RecurModel::num_inputs;
%rename(numOutputsRaw) RecurModel::num_outputs;
%rename(inputRaw) RecurModel::input;
%rename(outputRaw) RecurModel::output;
%rename(outputDimsRaw) RecurModel::output_dims;
%rename(outputsLengthRaw) RecurModel::outputs_length;
%rename(inputsLengthRaw) RecurModel::inputs_length;
%rename(runInputsRaw) RecurModel::run_inputs;
%rename(isStatefulRaw) RecurModel::is_stateful;
%rename(statesLengthRaw) RecurModel::states_length;
%rename(streamableRaw) RecurModel::streamable;
%rename(createRaw) RecurModelState::create;
%rename(lengthsRaw) RecurModelState::lengths;
%rename(stepRaw) RecurModelState::step;
%rename(saveSizeRaw) RecurModelState::save_size;
%rename(saveRaw) RecurModelState::save;
%rename(loadRaw) RecurModelState::load;
%rename(inputSequenceRaw) RecurModel::input_sequence;
%rename(inputDtypeRaw) RecurModel::input_dtype;
%rename(numStatefulLayersRaw) RecurModel::num_stateful_layers;
%rename(statefulLayerRaw) RecurModel::stateful_layer;
%rename(outputDimsRaw) RecurModelState::output_dims;

%javamethodmodifiers RecurLayer::create "";
%javamethodmodifiers RecurLayer::create_from_json "";
%javamethodmodifiers RecurState::create "";
%javamethodmodifiers RecurModel::open "";
%javamethodmodifiers RecurModel::get_layer "";
%javamethodmodifiers get_info "";
%javamethodmodifiers output_length "";
%javamethodmodifiers forward "";
%javamethodmodifiers forward_state "";
%javamethodmodifiers set_states "";
%javamethodmodifiers get_states "";
%javamethodmodifiers cell_call "";
%javamethodmodifiers dropout_mask "";
%javamethodmodifiers recurrent_dropout_mask "";
%javamethodmodifiers RecurLayer::num_weights "";
%javamethodmodifiers weight_shape "";
%javamethodmodifiers weight_name "";
%javamethodmodifiers get_weight "";
%javamethodmodifiers set_weight "";
%javamethodmodifiers weights_length "";
%javamethodmodifiers get_weights "";
%javamethodmodifiers set_weights "";
%javamethodmodifiers get_losses "";
%javamethodmodifiers loss_name "";
%javamethodmodifiers RecurState::shape "";
%javamethodmodifiers RecurState::get "";
%javamethodmodifiers RecurState::set "";
%javamethodmodifiers RecurModel::layer "";
%javamethodmodifiers RecurModel::run "";
%javamethodmodifiers recur_binding_c_step_ns "";
%javamethodmodifiers recur_binding_device_count "";
%javamethodmodifiers recur_binding_device_check "";
%javamethodmodifiers recur_binding_get_limit "";
%javamethodmodifiers recur_binding_default_limit "";
%javamethodmodifiers recur_binding_set_limit "";
%javamethodmodifiers recur_binding_live_handles "";
%javamethodmodifiers forward_states "";
%javamethodmodifiers forward_device "";
%javamethodmodifiers forward_states_device "";
%javamethodmodifiers set_device "";
%javamethodmodifiers get_device "";
%javamethodmodifiers set_num_threads "";
%javamethodmodifiers get_num_threads "";
%javamethodmodifiers set_precision "";
%javamethodmodifiers get_precision "";
%javamethodmodifiers set_keras_backend "";
%javamethodmodifiers RecurModel::open_memory "";
%javamethodmodifiers RecurModel::num_inputs "";
%javamethodmodifiers RecurModel::num_outputs "";
%javamethodmodifiers RecurModel::input "";
%javamethodmodifiers RecurModel::output "";
%javamethodmodifiers RecurModel::output_dims "";
%javamethodmodifiers RecurModel::outputs_length "";
%javamethodmodifiers RecurModel::inputs_length "";
%javamethodmodifiers RecurModel::run_inputs "";
%javamethodmodifiers RecurModel::is_stateful "";
%javamethodmodifiers RecurModel::states_length "";
%javamethodmodifiers RecurModel::streamable "";
%javamethodmodifiers RecurModelState::create "";
%javamethodmodifiers RecurModelState::lengths "";
%javamethodmodifiers RecurModelState::step "";
%javamethodmodifiers RecurModelState::save_size "";
%javamethodmodifiers RecurModelState::save "";
%javamethodmodifiers RecurModelState::load "";
%javamethodmodifiers RecurModel::input_sequence "";
%javamethodmodifiers RecurModel::input_dtype "";
%javamethodmodifiers RecurModel::num_stateful_layers "";
%javamethodmodifiers RecurModel::stateful_layer "";
%javamethodmodifiers RecurModelState::output_dims "";

/* The constructors of the handle classes are the factories' business. */
%typemap(javabody) RecurLayer, RecurState, RecurModel, RecurModelState %{
  private transient long swigCPtr;
  protected transient boolean swigCMemOwn;

  protected $javaclassname(long cPtr, boolean cMemoryOwn) {
    swigCMemOwn = cMemoryOwn;
    swigCPtr = cPtr;
  }

  protected static long getCPtr($javaclassname obj) {
    return (obj == null) ? 0 : obj.swigCPtr;
  }

  /** Whether {@link #close()} has been called. */
  public boolean isClosed() {
    return swigCPtr == 0;
  }
%}

%typemap(javainterfaces) RecurLayerOptions, RecurLayer, RecurState, RecurModel, RecurModelState "java.lang.AutoCloseable"

%typemap(javaclassmodifiers) recur_layer_info, recur_model_info "final class"

%pragma(java) jniclasscode=%{
  static {
    NativeLoader.load();
  }
%}
%pragma(java) moduleclassmodifiers="public final class"
%pragma(java) modulecode=%{
  private Recur() {}

  /** Nanoseconds per streaming step (batch 1 of the state, T=1) measured by a loop in C over the same buffers. */
  public static double cStepNs(Layer layer, State state, java.nio.FloatBuffer input, java.nio.FloatBuffer output, int iterations) {
    layer.ptr();
    state.ptr();
    return cStepNsRaw(layer, state, Buffers.in(input), Buffers.out(output), iterations);
  }

  /** Same as {@link #cStepNs(Layer, State, java.nio.FloatBuffer, java.nio.FloatBuffer, int)} with arrays (pinned once for the whole loop). */
  public static double cStepNs(Layer layer, State state, float[] input, float[] output, int iterations) {
    layer.ptr();
    state.ptr();
    return cStepNsRaw(layer, state, input, output, iterations);
  }

  /** Number of usable CUDA devices: 0 when the GPU plugin, the driver or a GPU is missing ({@link #checkDevice} says which). */
  public static int deviceCount() {
    int[] n = new int[1];
    deviceCountRaw(n);
    return n[0];
  }

  /**
   * Returns when device ("cpu", "cuda", "cuda:N" or "auto") can run now.
   * @throws InvalidArgumentException not a device string
   * @throws UnsupportedException a GPU that cannot run; the message says what is missing
   */
  public static void checkDevice(String device) {
    if (device == null) throw new NullPointerException("device");
    checkDeviceRaw(device);
  }

  /**
   * The current value of a process-wide resource limit: a count for {@link Limit#UNITS} and
   * {@link Limit#BATCH}, bytes for the others. A value set through the C ABI above
   * {@link Long#MAX_VALUE} reads as {@link Long#MAX_VALUE}.
   */
  public static long getLimit(Limit limit) {
    long[] v = new long[1];
    getLimitRaw(java.util.Objects.requireNonNull(limit, "limit").code(), v);
    return v[0] < 0 ? Long.MAX_VALUE : v[0];
  }

  /** The built-in default of a limit (see {@link Limit} for each one's). */
  public static long defaultLimit(Limit limit) {
    long[] v = new long[1];
    defaultLimitRaw(java.util.Objects.requireNonNull(limit, "limit").code(), v);
    return v[0];
  }

  /**
   * Sets a limit for the whole process; 0 restores its default. Objects that exist keep what they
   * hold; every check after the call sees the new value. Going over a limit throws
   * {@link LimitException}, whose message names the limit.
   * @throws IllegalArgumentException value &lt; 0
   */
  public static void setLimit(Limit limit, long value) {
    java.util.Objects.requireNonNull(limit, "limit");
    if (value < 0) throw new IllegalArgumentException("limit value must be >= 0 (0 restores the default), got " + value);
    setLimitRaw(limit.code(), value);
  }

  /** recur_status of a call stopped by {@link RunOptions#cancel()} ({@link CancelledException}). */
  public static final int ERR_CANCELLED = -9;

  /**
   * Installs the process-wide log handler: it hears what recur decided and why (the CPU kernel
   * set, each layer's and model's device and route, fallbacks, models opened, limits set), for
   * messages of minLevel and above (the others are not built). null turns logging off. When this
   * returns, the previous handler is not running and will not be called again.
   * <p>The handler is called on any thread that calls into recur (native threads are attached to
   * the JVM as daemons for the call), from several at once: it must be thread-safe and return
   * promptly. Whatever it throws is caught and dropped, so that it never breaks the call that
   * logged. It may call recur, but not this method (that throws IllegalStateException).
   */
  public static void setLogHandler(RecurLogHandler handler, LogLevel minLevel) {
    if (NativeApi.IN_LOG_HANDLER.get() != null)
      throw new IllegalStateException("recur: setLogHandler called from a log handler (it would wait for itself)");
    if (handler != null && minLevel == null) throw new NullPointerException("minLevel");
    synchronized (NativeApi.LOG_LOCK) {
      NativeApi.setLogHandler(handler, handler != null ? minLevel.code() : LogLevel.DEBUG.code());
    }
  }

  /** How many {@link RunOptions} exist now (created, not closed), for leak checks as {@link #liveHandles()}. */
  public static long liveRunOptions() {
    return NativeApi.liveRunOptions();
  }

  /**
   * How many native handles of each kind are alive in this process now (recur_live_handles):
   * layers (cells included), states, models and model states created and not yet freed. For leak
   * checks: a program that has closed everything it made reads zeros. Objects that were never
   * closed count until their finalizer has run. Safe from any thread.
   */
  public static LiveHandles liveHandles() {
    long[] layers = new long[1], states = new long[1], models = new long[1], modelStates = new long[1];
    liveHandlesRaw(layers, states, models, modelStates);
    return new LiveHandles(layers[0], states[0], models[0], modelStates[0]);
  }
%}

/* Hand-written parts of the classes (they must be seen before the classes). */
%include "java/layer_options_java.i"
%include "java/layer_java.i"
%include "java/state_java.i"
%include "java/model_java.i"
%include "java/model_state_java.i"
%include "java/named_java.i"
