// SPDX-License-Identifier: Apache-2.0
/*
 * Java: named runs and steps, run options and the log callback (C ABI 0.6), as JNI functions
 * written by hand for recur.NativeApi (SWIG's typemaps would take more code for arrays of
 * descriptors than this). Included at the end of recur_java.i, so recur_java_raise is in scope.
 *
 * Named calls: every array (float[], int[], long[], byte[]) is taken with Get<Type>ArrayElements
 * and released before the status is raised (JNI_ABORT for inputs and for the outputs of a failed
 * call, so a failed call writes nothing); a direct buffer is used in place between its position
 * and limit.
 */

%{
#include <stdlib.h>
#include <string.h>

/* Element bytes of a recur_dtype (0: not one). */
static size_t recur_java_dtype_size(jint dtype) {
  switch (dtype) {
    case RECUR_DTYPE_FLOAT32: return 4;
    case RECUR_DTYPE_INT32: return 4;
    case RECUR_DTYPE_INT64: return 8;
    default: return 0;
  }
}

/* One Java array or direct buffer held during a named call. */
typedef struct {
  jobject obj;
  void *p;
  int is_array; /* 1: release with Release<Type>ArrayElements */
  int type;     /* 'b' byte, 'f' float, 'i' int, 'l' long */
} recur_java_held;

static int recur_java_hold(JNIEnv *jenv, jobject obj, int type, recur_java_held *h, size_t *len) {
  void *p;
  size_t elem = type == 'b' ? 1 : type == 'l' ? 8 : 4;
  h->obj = obj;
  h->p = NULL;
  h->is_array = 0;
  h->type = type;
  *len = 0;
  if (!obj) return 1;
  p = (*jenv)->GetDirectBufferAddress(jenv, obj);
  if (p) {
    jclass b;
    jint pos, lim;
    if (!recur_java_position_fid) {
      b = (*jenv)->FindClass(jenv, "java/nio/Buffer");
      if (!b) return 0;
      recur_java_limit_fid = (*jenv)->GetFieldID(jenv, b, "limit", "I");
      recur_java_position_fid = (*jenv)->GetFieldID(jenv, b, "position", "I");
      if (!recur_java_position_fid || !recur_java_limit_fid) return 0;
    }
    pos = (*jenv)->GetIntField(jenv, obj, recur_java_position_fid);
    lim = (*jenv)->GetIntField(jenv, obj, recur_java_limit_fid);
    h->p = (char *)p + (size_t)pos * elem;
    *len = (size_t)(lim - pos);
    return 1;
  }
  if ((*jenv)->ExceptionCheck(jenv)) return 0;
  /* The Java side passes only arrays of the element type or direct buffers. */
  *len = (size_t)(*jenv)->GetArrayLength(jenv, (jarray)obj);
  switch (type) {
    case 'b': h->p = (*jenv)->GetByteArrayElements(jenv, (jbyteArray)obj, NULL); break;
    case 'f': h->p = (*jenv)->GetFloatArrayElements(jenv, (jfloatArray)obj, NULL); break;
    case 'i': h->p = (*jenv)->GetIntArrayElements(jenv, (jintArray)obj, NULL); break;
    default: h->p = (*jenv)->GetLongArrayElements(jenv, (jlongArray)obj, NULL); break;
  }
  if (!h->p) { *len = 0; return 0; } /* OutOfMemoryError pending */
  h->is_array = 1;
  return 1;
}

static void recur_java_unhold(JNIEnv *jenv, recur_java_held *h, int copy_back) {
  jint mode = copy_back ? 0 : JNI_ABORT;
  if (!h->is_array || !h->p) return;
  switch (h->type) {
    case 'b': (*jenv)->ReleaseByteArrayElements(jenv, (jbyteArray)h->obj, (jbyte *)h->p, mode); break;
    case 'f': (*jenv)->ReleaseFloatArrayElements(jenv, (jfloatArray)h->obj, (jfloat *)h->p, mode); break;
    case 'i': (*jenv)->ReleaseIntArrayElements(jenv, (jintArray)h->obj, (jint *)h->p, mode); break;
    default: (*jenv)->ReleaseLongArrayElements(jenv, (jlongArray)h->obj, (jlong *)h->p, mode); break;
  }
  h->p = NULL;
}

/* A string input's texts during a named call (RECUR_DTYPE_STRING, since 0.7): Tensor.ofStrings
 * hands a byte[][] of NUL-terminated UTF-8; each element is held and the pointers gathered. */
typedef struct {
  jobjectArray arr;
  jsize count;
  jbyteArray *items;
  jbyte **bytes;
  const char **ptrs;
} recur_java_texts;

static int recur_java_hold_texts(JNIEnv *jenv, jobject obj, recur_java_texts *t, size_t *len) {
  jsize k;
  memset(t, 0, sizeof *t);
  *len = 0;
  if (!obj) return 1;
  t->arr = (jobjectArray)obj;
  t->count = (*jenv)->GetArrayLength(jenv, t->arr);
  t->items = (jbyteArray *)calloc((size_t)t->count + 1, sizeof *t->items);
  t->bytes = (jbyte **)calloc((size_t)t->count + 1, sizeof *t->bytes);
  t->ptrs = (const char **)calloc((size_t)t->count + 1, sizeof *t->ptrs);
  if (!t->items || !t->bytes || !t->ptrs || (*jenv)->EnsureLocalCapacity(jenv, t->count + 8) != 0) {
    recur_java_throw_plain(jenv, "java/lang/OutOfMemoryError", "recur: texts of a named call");
    return 0;
  }
  for (k = 0; k < t->count; ++k) {
    t->items[k] = (jbyteArray)(*jenv)->GetObjectArrayElement(jenv, t->arr, k);
    if (!t->items[k]) continue; /* Tensor.ofStrings never makes one: recur refuses the NULL */
    t->bytes[k] = (*jenv)->GetByteArrayElements(jenv, t->items[k], NULL);
    if (!t->bytes[k]) return 0; /* OutOfMemoryError pending */
    t->ptrs[k] = (const char *)t->bytes[k];
  }
  *len = (size_t)t->count;
  return 1;
}

static void recur_java_unhold_texts(JNIEnv *jenv, recur_java_texts *t) {
  jsize k;
  for (k = 0; t->items && k < t->count; ++k) {
    if (t->bytes && t->bytes[k]) (*jenv)->ReleaseByteArrayElements(jenv, t->items[k], t->bytes[k], JNI_ABORT);
    if (t->items[k]) (*jenv)->DeleteLocalRef(jenv, t->items[k]);
  }
  free(t->items);
  free(t->bytes);
  free(t->ptrs);
  memset(t, 0, sizeof *t);
}

/* op: 0 recur_model_run_named, 1 recur_model_output_shapes, 2 recur_model_state_step_named,
 * 3 recur_model_state_output_shapes. names/outNames: NUL-terminated UTF-8 byte[]s. dims: n x
 * RECUR_MAX_RANK values; outDims: m x RECUR_MAX_RANK, outRanks and outLengths m values, written on
 * success. */
JNIEXPORT void JNICALL Java_recur_NativeApi_named(JNIEnv *jenv, jclass cls, jint op, jlong handle,
    jobjectArray names, jintArray dtypes, jobjectArray data, jlongArray dims, jintArray ranks,
    jobjectArray masks, jobjectArray outNames, jobjectArray outBufs, jlongArray outDims, jintArray outRanks,
    jlongArray outLengths, jlong options) {
  jint n = (*jenv)->GetArrayLength(jenv, names), m = (*jenv)->GetArrayLength(jenv, outNames), i, k;
  recur_tensor *in = (recur_tensor *)calloc((size_t)n + 1, sizeof *in);
  recur_output *out = (recur_output *)calloc((size_t)m + 1, sizeof *out);
  /* Per input: name, data, mask; per output: name, buffer. */
  recur_java_held *held = (recur_java_held *)calloc((size_t)(3 * n + 2 * m) + 1, sizeof *held);
  recur_java_texts *texts = (recur_java_texts *)calloc((size_t)n + 1, sizeof *texts);
  jint *dt = NULL, *rk = NULL;
  jlong *dm = NULL;
  recur_status st = RECUR_OK;
  int ok = 1;
  if (!in || !out || !held || !texts || (*jenv)->EnsureLocalCapacity(jenv, 3 * n + 2 * m + 8) != 0) {
    free(in); free(out); free(held); free(texts);
    recur_java_throw_plain(jenv, "java/lang/OutOfMemoryError", "recur: descriptors of a named call");
    return;
  }
  dt = (*jenv)->GetIntArrayElements(jenv, dtypes, NULL);
  rk = dt ? (*jenv)->GetIntArrayElements(jenv, ranks, NULL) : NULL;
  dm = rk ? (*jenv)->GetLongArrayElements(jenv, dims, NULL) : NULL;
  ok = dm != NULL;
  for (i = 0; ok && i < n; ++i) {
    size_t len = 0, mask_len = 0, name_len = 0;
    jobject o;
    recur_tensor_init(&in[i], RECUR_TENSOR_VERSION);
    o = (*jenv)->GetObjectArrayElement(jenv, names, i);
    ok = recur_java_hold(jenv, o, 'b', &held[3 * i], &name_len);
    in[i].name = (const char *)held[3 * i].p;
    if (!ok) break;
    o = (*jenv)->GetObjectArrayElement(jenv, data, i);
    in[i].dtype = dt[i];
    if (dt[i] == RECUR_DTYPE_STRING) {
      ok = recur_java_hold_texts(jenv, o, &texts[i], &len);
      in[i].data = texts[i].ptrs;
    } else {
      ok = recur_java_hold(jenv, o, dt[i] == RECUR_DTYPE_INT64 ? 'l' : dt[i] == RECUR_DTYPE_INT32 ? 'i' : 'f',
                           &held[3 * i + 1], &len);
      in[i].data = held[3 * i + 1].p;
    }
    in[i].length = len;
    if (!ok) break;
    o = (*jenv)->GetObjectArrayElement(jenv, masks, i);
    ok = recur_java_hold(jenv, o, 'b', &held[3 * i + 2], &mask_len);
    in[i].mask = (const uint8_t *)held[3 * i + 2].p;
    in[i].mask_length = mask_len;
    in[i].rank = rk[i];
    for (k = 0; k < RECUR_MAX_RANK; ++k) in[i].dims[k] = dm[(size_t)i * RECUR_MAX_RANK + k];
  }
  for (i = 0; ok && i < m; ++i) {
    size_t len = 0, name_len = 0;
    jobject o;
    recur_output_init(&out[i], RECUR_OUTPUT_VERSION);
    o = (*jenv)->GetObjectArrayElement(jenv, outNames, i);
    ok = recur_java_hold(jenv, o, 'b', &held[3 * n + 2 * i], &name_len);
    out[i].name = (const char *)held[3 * n + 2 * i].p;
    if (!ok) break;
    o = (*jenv)->GetObjectArrayElement(jenv, outBufs, i);
    ok = recur_java_hold(jenv, o, 'f', &held[3 * n + 2 * i + 1], &len);
    out[i].data = (float *)held[3 * n + 2 * i + 1].p;
    out[i].capacity = len;
  }
  if (ok) {
    const recur_run_options *opts = (const recur_run_options *)(intptr_t)options;
    switch (op) {
      case 0: st = recur_model_run_named((const recur_model *)(intptr_t)handle, in, n, out, m, opts); break;
      case 1: st = recur_model_output_shapes((const recur_model *)(intptr_t)handle, in, n, out, m); break;
      case 2: st = recur_model_state_step_named((recur_model_state *)(intptr_t)handle, in, n, out, m, opts); break;
      case 3: st = recur_model_state_output_shapes((const recur_model_state *)(intptr_t)handle, in, n, out, m); break;
      /* 4, 5: many states (recur_model_states_step_named): handle is a statesArray. */
      case 4: {
        const int64_t *a = (const int64_t *)(intptr_t)handle;
        st = recur_model_states_step_named((recur_model_state *const *)(a + 1), (int32_t)a[0], in, n, out, m, opts);
        break;
      }
      default: {
        const int64_t *a = (const int64_t *)(intptr_t)handle;
        st = recur_model_states_output_shapes((const recur_model_state *const *)(a + 1), (int32_t)a[0], in, n, out, m);
        break;
      }
    }
  }
  for (i = 0; i < 3 * n + 2 * m; ++i)
    recur_java_unhold(jenv, &held[i], ok && st == RECUR_OK && i >= 3 * n && (i - 3 * n) % 2 == 1);
  for (i = 0; i < n; ++i) recur_java_unhold_texts(jenv, &texts[i]);
  if (dm) (*jenv)->ReleaseLongArrayElements(jenv, dims, dm, JNI_ABORT);
  if (rk) (*jenv)->ReleaseIntArrayElements(jenv, ranks, rk, JNI_ABORT);
  if (dt) (*jenv)->ReleaseIntArrayElements(jenv, dtypes, dt, JNI_ABORT);
  if (ok && st == RECUR_OK) {
    for (i = 0; i < m; ++i) {
      jint r = out[i].rank;
      jlong len = (jlong)out[i].length;
      (*jenv)->SetLongArrayRegion(jenv, outDims, (jsize)((size_t)i * RECUR_MAX_RANK), RECUR_MAX_RANK,
                                  (const jlong *)out[i].dims);
      (*jenv)->SetIntArrayRegion(jenv, outRanks, i, 1, &r);
      (*jenv)->SetLongArrayRegion(jenv, outLengths, i, 1, &len);
    }
  }
  free(in);
  free(out);
  free(held);
  free(texts);
  if (ok && st != RECUR_OK) recur_java_raise(jenv, (int)st);
}

/* The count, then the state handles, in C memory, for ops 4 and 5 of named (freeStatesArray frees it). */
JNIEXPORT jlong JNICALL Java_recur_NativeApi_statesArray(JNIEnv *jenv, jclass cls, jlongArray handles) {
  jsize n = (*jenv)->GetArrayLength(jenv, handles);
  int64_t *a = (int64_t *)malloc(sizeof *a * ((size_t)n + 1));
  if (!a) {
    recur_java_throw_plain(jenv, "java/lang/OutOfMemoryError", "recur: the state handles of a call");
    return 0;
  }
  a[0] = n;
  if (n > 0) (*jenv)->GetLongArrayRegion(jenv, handles, 0, n, (jlong *)(a + 1));
  return (jlong)(intptr_t)a;
}

JNIEXPORT void JNICALL Java_recur_NativeApi_freeStatesArray(JNIEnv *jenv, jclass cls, jlong array) {
  free((void *)(intptr_t)array);
}

/* ---- run options ---- */

JNIEXPORT jlong JNICALL Java_recur_NativeApi_optionsCreate(JNIEnv *jenv, jclass cls) {
  recur_run_options *o = NULL;
  recur_status st = recur_run_options_create(&o);
  if (st != RECUR_OK) { recur_java_raise(jenv, (int)st); return 0; }
  return (jlong)(intptr_t)o;
}

JNIEXPORT void JNICALL Java_recur_NativeApi_optionsDestroy(JNIEnv *jenv, jclass cls, jlong options) {
  recur_run_options_destroy((recur_run_options *)(intptr_t)options);
}

JNIEXPORT void JNICALL Java_recur_NativeApi_optionsCancel(JNIEnv *jenv, jclass cls, jlong options) {
  recur_status st = recur_run_options_cancel((recur_run_options *)(intptr_t)options);
  if (st != RECUR_OK) recur_java_raise(jenv, (int)st);
}

JNIEXPORT void JNICALL Java_recur_NativeApi_optionsReset(JNIEnv *jenv, jclass cls, jlong options) {
  recur_status st = recur_run_options_reset((recur_run_options *)(intptr_t)options);
  if (st != RECUR_OK) recur_java_raise(jenv, (int)st);
}

JNIEXPORT jboolean JNICALL Java_recur_NativeApi_optionsIsCancelled(JNIEnv *jenv, jclass cls, jlong options) {
  int32_t c = 0;
  recur_status st = recur_run_options_is_cancelled((const recur_run_options *)(intptr_t)options, &c);
  if (st != RECUR_OK) recur_java_raise(jenv, (int)st);
  return c ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT jlong JNICALL Java_recur_NativeApi_liveRunOptions(JNIEnv *jenv, jclass cls) {
  uint64_t n = 0;
  recur_status st = recur_live_run_options(&n);
  if (st != RECUR_OK) recur_java_raise(jenv, (int)st);
  return (jlong)n;
}

/* ---- the log callback ----
 * user_data is a global reference to the Java handler; recur.NativeApi.dispatchLog calls it and
 * catches whatever it throws. A thread that recur calls back on and that the JVM does not know is
 * attached as a daemon for the call and detached after it. An exception pending on the calling
 * thread is set aside and restored, so the callback never disturbs the Java code around it. */
static JavaVM *recur_java_vm;
static jclass recur_java_api_class;
static jmethodID recur_java_dispatch_log;
static jobject recur_java_log_handler; /* the installed handler's global ref (Recur.setLogHandler calls come one at a time) */

static void recur_java_log(void *user_data, int32_t level, const char *message) {
  JNIEnv *env = NULL;
  int attached = 0;
  jthrowable pending;
  jbyteArray bytes;
  size_t len = strlen(message);
  if ((*recur_java_vm)->GetEnv(recur_java_vm, (void **)&env, JNI_VERSION_1_6) == JNI_EDETACHED) {
    if ((*recur_java_vm)->AttachCurrentThreadAsDaemon(recur_java_vm, (void **)&env, NULL) != JNI_OK) return;
    attached = 1;
  }
  if (!env) return;
  pending = (*env)->ExceptionOccurred(env);
  if (pending) (*env)->ExceptionClear(env);
  if ((*env)->PushLocalFrame(env, 4) == 0) {
    bytes = (*env)->NewByteArray(env, (jsize)len);
    if (bytes) {
      (*env)->SetByteArrayRegion(env, bytes, 0, (jsize)len, (const jbyte *)message);
      (*env)->CallStaticVoidMethod(env, recur_java_api_class, recur_java_dispatch_log, (jobject)user_data,
                                   (jint)level, bytes);
    }
    (*env)->PopLocalFrame(env, NULL);
  }
  if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env); /* nothing escapes into recur */
  if (pending) {
    (*env)->Throw(env, pending);
    (*env)->DeleteLocalRef(env, pending);
  }
  if (attached) (*recur_java_vm)->DetachCurrentThread(recur_java_vm);
}

JNIEXPORT void JNICALL Java_recur_NativeApi_setLogHandler(JNIEnv *jenv, jclass cls, jobject handler, jint min_level) {
  jobject ref = NULL;
  recur_status st;
  if (!recur_java_vm) {
    if ((*jenv)->GetJavaVM(jenv, &recur_java_vm) != 0) {
      recur_java_throw_plain(jenv, "java/lang/IllegalStateException", "recur: GetJavaVM failed");
      return;
    }
    recur_java_api_class = (jclass)(*jenv)->NewGlobalRef(jenv, cls);
    recur_java_dispatch_log = (*jenv)->GetStaticMethodID(jenv, cls, "dispatchLog", "(Ljava/lang/Object;I[B)V");
    if (!recur_java_api_class || !recur_java_dispatch_log) { recur_java_vm = NULL; return; }
  }
  if (handler) {
    ref = (*jenv)->NewGlobalRef(jenv, handler);
    if (!ref) return;
  }
  st = recur_set_log_callback(ref ? recur_java_log : NULL, ref, min_level);
  if (st != RECUR_OK) {
    if (ref) (*jenv)->DeleteGlobalRef(jenv, ref);
    recur_java_raise(jenv, (int)st);
    return;
  }
  /* No call of the previous callback runs any more: its handler can go. */
  if (recur_java_log_handler) (*jenv)->DeleteGlobalRef(jenv, recur_java_log_handler);
  recur_java_log_handler = ref;
}
%}
