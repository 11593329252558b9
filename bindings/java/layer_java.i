// SPDX-License-Identifier: Apache-2.0
/* Layer: typed public methods over the package-private raw ones. */
%typemap(javacode) RecurLayer %{
  long ptr() {
    long p = swigCPtr;
    if (p == 0) throw new ClosedException("recur: this Layer is closed");
    return p;
  }

  /** Frees the native layer. Idempotent; States created from it stay valid. */
  @Override
  public void close() {
    delete();
  }

  // ---- factories -------------------------------------------------------------------------

  /** A new layer or cell from constructor options, with weights from its initializers. */
  public static Layer create(LayerOptions options) {
    if (options == null) throw new NullPointerException("options");
    options.ptr();
    return createRaw(options);
  }

  /**
   * A layer or cell from the JSON Keras writes for it ({"class_name": "GRU", "config": {...}}).
   * @param inputSize size of the last input axis, or 0 to take it from the JSON
   * @param dialect Recur.DIALECT_AUTO, DIALECT_KERAS2 or DIALECT_KERAS3
   * @param kerasVersion e.g. "2.15.0", or null for the newest of the dialect
   */
  public static Layer fromJson(String json, int inputSize, int dialect, String kerasVersion) {
    if (json == null) throw new NullPointerException("json");
    return createFromJsonRaw(json, inputSize, dialect, kerasVersion);
  }

  /** {@link #fromJson(String, int, int, String)} with the input size from the JSON and the dialect detected. */
  public static Layer fromJson(String json) {
    return fromJson(json, 0, Recur.DIALECT_AUTO, null);
  }

  // ---- description -------------------------------------------------------------------------

  /** What the layer is, after defaults were resolved. */
  public LayerInfo info() {
    ptr();
    LayerInfoRaw raw = new LayerInfoRaw();
    try {
      getInfoRaw(raw);
      return new LayerInfo(raw);
    } finally {
      raw.delete();
    }
  }

  /** Floats that forward writes for this batch and timestep count. */
  public int outputLength(int batch, int timesteps) {
    long[] n = new long[1];
    outputLengthRaw(batch, timesteps, n);
    return Buffers.length(n[0]);
  }

  // ---- forward -----------------------------------------------------------------------------

  /** Keras layer call on (B, T, F) input without mask or initial state; returns a new output array. */
  public float[] forward(float[] input, int batch, int timesteps) {
    return forward(input, batch, timesteps, null);
  }

  /** Keras layer call with an optional (B, T) mask (nonzero = valid step); returns a new output array. */
  public float[] forward(float[] input, int batch, int timesteps, byte[] mask) {
    Buffers.needArray(input, "input");
    float[] out = new float[outputLength(batch, timesteps)];
    forwardRaw(input, batch, timesteps, mask, null, 0, 0, out, null);
    return out;
  }

  /**
   * The full Keras layer call, writing into caller buffers (no allocation).
   * @param mask null or (B, T) bytes
   * @param initialState null or numInitialStates tensors (B, units) concatenated ([h] or [h, c])
   * @param output outputLength(batch, timesteps) floats
   * @param finalState null or numStates x (B, units) floats
   */
  public void forward(float[] input, int batch, int timesteps, byte[] mask, float[] initialState,
                      int numInitialStates, boolean training, float[] output, float[] finalState) {
    Buffers.needArray(input, "input");
    Buffers.needArray(output, "output");
    forwardRaw(input, batch, timesteps, mask, initialState, numInitialStates, training ? 1 : 0, output, finalState);
  }

  /** The full Keras layer call on direct buffers (zero copy; each buffer's position..limit is used). */
  public void forward(java.nio.FloatBuffer input, int batch, int timesteps, java.nio.ByteBuffer mask,
                      java.nio.FloatBuffer initialState, int numInitialStates, boolean training,
                      java.nio.FloatBuffer output, java.nio.FloatBuffer finalState) {
    forwardRaw(Buffers.in(input), batch, timesteps, Buffers.mask(mask), Buffers.in(initialState), numInitialStates,
               training ? 1 : 0, Buffers.out(output), Buffers.out(finalState));
  }

  // ---- streaming ---------------------------------------------------------------------------

  /** Advances state through timesteps steps of input; returns a new output array. */
  public float[] forwardState(State state, float[] input, int timesteps) {
    Buffers.needArray(input, "input");
    float[] out = new float[outputLength(state.batch(), timesteps)];
    forwardState(state, input, timesteps, null, out);
    return out;
  }

  /** Advances state through timesteps steps of input (optional mask) into output (no allocation). */
  public void forwardState(State state, float[] input, int timesteps, byte[] mask, float[] output) {
    Buffers.needArray(input, "input");
    Buffers.needArray(output, "output");
    forwardStateRaw(State.checked(state), input, timesteps, mask, output);
  }

  /** Advances state through timesteps steps on direct buffers (zero copy, no allocation). */
  public void forwardState(State state, java.nio.FloatBuffer input, int timesteps, java.nio.ByteBuffer mask,
                           java.nio.FloatBuffer output) {
    forwardStateRaw(State.checked(state), Buffers.in(input), timesteps, Buffers.mask(mask), Buffers.out(output));
  }

  /** One streaming step (T=1, no mask) on direct buffers: the hot path. */
  public void forwardState(State state, java.nio.FloatBuffer input, java.nio.FloatBuffer output) {
    forwardStateRaw(State.checked(state), Buffers.in(input), 1, null, Buffers.out(output));
  }

  /** One streaming step (T=1, no mask) on arrays. */
  public void forwardState(State state, float[] input, float[] output) {
    Buffers.needArray(input, "input");
    Buffers.needArray(output, "output");
    forwardStateRaw(State.checked(state), input, 1, null, output);
  }

  /**
   * One step (T=1) for many independent streams as one batch, on the layer's device: input holds
   * the rows of every state in order (sum of their batches x inputSize), mask null or one byte per
   * row, output (rows, units). Equals forwardState on each state with one timestep; a state may
   * appear once.
   */
  public void forwardStates(State[] states, float[] input, byte[] mask, float[] output) {
    Buffers.needArray(input, "input");
    Buffers.needArray(output, "output");
    try {
      forwardStatesRaw(State.handles(states), input, mask, output);
    } finally {
      java.lang.ref.Reference.reachabilityFence(states); // the raw call sees only their addresses
    }
  }

  /** {@link #forwardStates(State[], float[], byte[], float[])} on direct buffers (zero copy). */
  public void forwardStates(State[] states, java.nio.FloatBuffer input, java.nio.ByteBuffer mask,
                            java.nio.FloatBuffer output) {
    try {
      forwardStatesRaw(State.handles(states), Buffers.in(input), Buffers.mask(mask), Buffers.out(output));
    } finally {
      java.lang.ref.Reference.reachabilityFence(states);
    }
  }

  // ---- devices -----------------------------------------------------------------------------

  /**
   * Moves the layer (its weights, and a stateful layer's states) to device: "cpu", "cuda",
   * "cuda:N" or "auto" (a GPU when one can run, else the CPU; {@link #device()} says why).
   * @throws UnsupportedException a GPU that cannot run (the layer stays where it was)
   */
  public void setDevice(String device) {
    if (device == null) throw new NullPointerException("device");
    setDeviceRaw(device);
  }

  /** Where the layer runs, by which route, and why. */
  public DeviceInfo device() {
    return DeviceInfo.query(this::getDeviceRaw);
  }

  /**
   * {@link #forward(float[], int, int, byte[], float[], int, boolean, float[], float[])} on CUDA
   * device memory of the layer's GPU, for callers with a CUDA interop library: the addresses are
   * device pointers (dInitialState and dFinalState may be 0), cudaStream a cudaStream_t (0: the
   * default stream); mask stays a host array (or null). Returns once the outputs are written.
   * @throws StateException the layer is not on a GPU
   */
  public void forwardDevice(long cudaStream, long dInput, int batch, int timesteps, byte[] mask, long dInitialState,
                            int numInitialStates, long dOutput, long dFinalState) {
    forwardDeviceRaw(cudaStream, dInput, batch, timesteps, mask, dInitialState, numInitialStates, dOutput,
                     dFinalState);
  }

  /**
   * {@link #forwardStates(State[], float[], byte[], float[])} on CUDA device memory of the layer's
   * GPU, for callers with a CUDA interop library (the serving case of many streams per step): the
   * states (each on the layer's GPU) are stepped by one timestep as one batch, dInput (rows x
   * inputSize) and dOutput (rows x units) are device pointers with rows the sum of the states'
   * batches, cudaStream a cudaStream_t (0: recur's own stream for the calling thread); mask stays
   * a host array (or null: one byte per row). No host copy is made; returns once dOutput is
   * written. The same numbers as forwardStates; a state may appear once.
   * @throws StateException the layer is not on a GPU (see {@link #setDevice(String)})
   * @throws InvalidArgumentException dInput or dOutput 0, no states, a state twice
   */
  public void forwardStatesDevice(long cudaStream, State[] states, long dInput, byte[] mask, long dOutput) {
    try {
      forwardStatesDeviceRaw(cudaStream, State.handles(states), dInput, mask, dOutput);
    } finally {
      java.lang.ref.Reference.reachabilityFence(states); // the raw call sees only their addresses
    }
  }

  // ---- CPU threads -------------------------------------------------------------------------

  /**
   * Threads one call on this layer may use on the CPU (forward, forwardState, forwardStates,
   * cellCall): 1, the default, runs on the calling thread only; 0 means one per core. Results
   * are bitwise the same for every count; small calls stay on the calling thread whatever the
   * count, and calls on a GPU ignore it. See also {@link Recur#cpuKernels()}.
   * @throws InvalidArgumentException numThreads negative or above 1024
   */
  public void setNumThreads(int numThreads) {
    setNumThreadsRaw(numThreads);
  }

  /** The thread count as set (0 stays 0). */
  public int getNumThreads() {
    int[] n = new int[1];
    getNumThreadsRaw(n);
    return n[0];
  }

  /**
   * The precision of the kernel and recurrent kernel in this layer's matrix products on the CPU:
   * "float32" (the default, Keras's numbers), "bf16" or "int8" (faster; the outputs then differ
   * from Keras's, see docs/precision.md). The float32 weights are kept: getWeights is unchanged
   * and "float32" again gives exactly the float32 numbers.
   * @throws InvalidArgumentException an unknown name (the message lists the valid ones)
   * @throws UnsupportedException the layer is on a GPU (float32 only)
   */
  public void setPrecision(String precision) {
    setPrecisionRaw(precision);
  }

  /** "float32", "bf16" or "int8". */
  public String getPrecision() {
    return getPrecisionRaw();
  }

  // ---- stateful layers ---------------------------------------------------------------------

  /**
   * Keras 3 backend semantics: "tensorflow" (the default, also torch's) or "jax" (also numpy's).
   * They differ at masked steps before the first valid one (JAX outputs the initial state,
   * TensorFlow zeros) and in that JAX's unroll=True ignores zero_output_for_mask.
   * @throws InvalidArgumentException another name
   * @throws UnsupportedException "jax" for a Keras 2 layer
   */
  public void setKerasBackend(String backend) {
    if (backend == null) throw new NullPointerException("backend");
    setKerasBackendRaw(backend);
  }

  /** Sets a stateful layer's states (Keras 2 reset_states(states)): numStates x (batch_size, units). */
  public void setStates(float[] states, int numStates) {
    Buffers.needArray(states, "states");
    setStatesRaw(states, numStates);
  }

  /** A stateful layer's current states, numStates x (batch_size, units) concatenated. */
  public float[] getStates() {
    LayerInfo i = info();
    float[] out = new float[i.numStates * i.batchSize * i.units];
    getStatesRaw(out);
    return out;
  }

  /** Copies a stateful layer's states into out. */
  public void getStates(float[] out) {
    Buffers.needArray(out, "out");
    getStatesRaw(out);
  }

  // ---- cells -------------------------------------------------------------------------------

  /** One cell step: input (B, F), states numStates x (B, units), output (B, units), newStates null or like states. */
  public void cellCall(float[] input, int batch, float[] states, int numStates, boolean training, float[] output,
                       float[] newStates) {
    Buffers.needArray(input, "input");
    Buffers.needArray(output, "output");
    cellCallRaw(input, batch, states, numStates, training ? 1 : 0, output, newStates);
  }

  /** One cell step on direct buffers (zero copy). */
  public void cellCall(java.nio.FloatBuffer input, int batch, java.nio.FloatBuffer states, int numStates,
                       boolean training, java.nio.FloatBuffer output, java.nio.FloatBuffer newStates) {
    cellCallRaw(Buffers.in(input), batch, Buffers.in(states), numStates, training ? 1 : 0, Buffers.out(output),
                Buffers.out(newStates));
  }

  /** One inference cell step; returns {output, newStates}. */
  public float[][] cellCall(float[] input, int batch, float[] states) {
    LayerInfo i = info();
    float[] out = new float[batch * i.units];
    float[] ns = new float[i.numStates * batch * i.units];
    cellCall(input, batch, states, i.numStates, false, out, ns);
    return new float[][] {out, ns};
  }

  /** The cell's cached input dropout masks for a batch: count x (batch, input_size) concatenated (empty without dropout). */
  public float[] dropoutMask(int batch, boolean training) {
    int[] count = new int[1];
    dropoutMaskRaw(batch, training ? 1 : 0, null, count);
    float[] out = new float[count[0] * batch * info().inputSize];
    if (out.length > 0) dropoutMaskRaw(batch, training ? 1 : 0, out, count);
    return out;
  }

  /** The cell's cached recurrent dropout masks: count x (batch, units) concatenated. */
  public float[] recurrentDropoutMask(int batch, boolean training) {
    int[] count = new int[1];
    recurrentDropoutMaskRaw(batch, training ? 1 : 0, null, count);
    float[] out = new float[count[0] * batch * info().units];
    if (out.length > 0) recurrentDropoutMaskRaw(batch, training ? 1 : 0, out, count);
    return out;
  }

  // ---- weights -----------------------------------------------------------------------------

  /** Number of weight tensors (2 without bias, else 3). */
  public int numWeights() {
    int[] n = new int[1];
    numWeightsRaw(n);
    return n[0];
  }

  /** Shape of weight index: one or two dimensions. */
  public long[] weightShape(int index) {
    long[] d0 = new long[1], d1 = new long[1];
    int[] nd = new int[1];
    weightShapeRaw(index, d0, d1, nd);
    return nd[0] == 1 ? new long[] {d0[0]} : new long[] {d0[0], d1[0]};
  }

  /** "kernel", "recurrent_kernel" or "bias". */
  public String weightName(int index) {
    String[] s = new String[1];
    weightNameRaw(index, s);
    return s[0];
  }

  /** A copy of weight index (row-major). */
  public float[] getWeight(int index) {
    long n = 1;
    for (long d : weightShape(index)) n *= d;
    float[] out = new float[Buffers.length(n)];
    getWeightRaw(index, out);
    return out;
  }

  /** Copies weight index into out (its exact length). */
  public void getWeight(int index, float[] out) {
    Buffers.needArray(out, "out");
    getWeightRaw(index, out);
  }

  /** Sets weight index (row-major, its exact length). */
  public void setWeight(int index, float[] data) {
    Buffers.needArray(data, "data");
    setWeightRaw(index, data);
  }

  /** Total floats of all weights. */
  public int weightsLength() {
    long[] n = new long[1];
    weightsLengthRaw(n);
    return Buffers.length(n[0]);
  }

  /** All weights concatenated in Keras get_weights order. */
  public float[] getWeights() {
    float[] out = new float[weightsLength()];
    getWeightsRaw(out);
    return out;
  }

  /** Copies all weights into out. */
  public void getWeights(float[] out) {
    Buffers.needArray(out, "out");
    getWeightsRaw(out);
  }

  /** Sets all weights (Keras set_weights order, concatenated). */
  public void setWeights(float[] data) {
    Buffers.needArray(data, "data");
    setWeightsRaw(data);
  }

  // ---- losses ------------------------------------------------------------------------------

  /** Keras layer.losses: activity penalties of the last call, then the weight penalties. */
  public float[] losses() {
    int[] count = new int[1];
    getLossesRaw(null, count);
    float[] out = new float[count[0]];
    if (out.length > 0) getLossesRaw(out, count);
    return out;
  }

  /** Name of loss index: "activity:output", "kernel", ... */
  public String lossName(int index) {
    String[] s = new String[1];
    lossNameRaw(index, s);
    return s[0];
  }
%}
