// SPDX-License-Identifier: Apache-2.0
/* Model: a Keras .keras or .h5 file: a graph with any number of inputs and outputs. */
%typemap(javacode) RecurModel %{
  long ptr() {
    long p = swigCPtr;
    if (p == 0) throw new ClosedException("recur: this Model is closed");
    return p;
  }

  // ---- named runs (since 0.6) ------------------------------------------------------------

  /**
   * The names that address every output, in Keras's model.outputs order: the output's name, or
   * "name:k" for the k-th output of a Keras 3 layer whose outputs share one name.
   */
  public java.util.List<String> outputNames() {
    return NamedRun.outputNames(this);
  }

  /** {@link #run(java.util.Map, java.util.Collection, RunOptions)} of every output, without options. */
  public java.util.Map<String, ModelOutput> run(java.util.Map<String, Tensor> inputs) {
    return run(inputs, null, null);
  }

  /** {@link #run(java.util.Map, java.util.Collection, RunOptions)} without options. */
  public java.util.Map<String, ModelOutput> run(java.util.Map<String, Tensor> inputs, java.util.Collection<String> outputs) {
    return run(inputs, outputs, null);
  }

  /**
   * Runs the model on named inputs (Keras's model.predict on one batch): every model input exactly
   * once, in any order, each with its own dims (the timesteps of a sequence input are its dims[1]).
   * @param outputs the outputs wanted, in the order the returned map iterates them ("name:k" for
   *        the k-th output of a Keras 3 layer with several); null: {@link #outputNames()}
   * @param options null, or {@link RunOptions} to cancel the run from another thread
   * @return each requested output by name, with its dims and a new float[]
   * @throws InvalidArgumentException an unknown, missing or repeated input name, an unknown or
   *         repeated output name, a token id out of range (the message names the input, the id and the range)
   * @throws ShapeException dims, batch, length or mask length that do not fit (the message names the input)
   * @throws CancelledException options were cancelled; nothing changed
   */
  public java.util.Map<String, ModelOutput> run(java.util.Map<String, Tensor> inputs, java.util.Collection<String> outputs,
                                                RunOptions options) {
    return NamedRun.run(NativeApi.MODEL_SHAPES, NativeApi.RUN, ptr(), inputs, outputs != null ? outputs : outputNames(),
                        options);
  }

  /**
   * Runs the model into the caller's buffers (no allocation of outputs): each key of outputs names
   * an output, its buffer holds at least that output's size ({@link #outputShapes}); after the
   * call each buffer's {@link OutputBuffer#dims()} says what was written. On any error nothing is written.
   * @throws ShapeException a buffer too small (the message names the output, expected vs got)
   */
  public void runInto(java.util.Map<String, Tensor> inputs, java.util.Map<String, OutputBuffer> outputs, RunOptions options) {
    NamedRun.runInto(NativeApi.RUN, ptr(), inputs, outputs, options);
  }

  /**
   * The dims of each requested output (null: every output) for these inputs, without running the
   * model; the inputs' values are not read, but their lengths must fit their dims.
   */
  public java.util.Map<String, long[]> outputShapes(java.util.Map<String, Tensor> inputs, java.util.Collection<String> outputs) {
    return NamedRun.shapes(NativeApi.MODEL_SHAPES, ptr(), inputs, outputs != null ? outputs : outputNames());
  }

  /** Frees the native model. Idempotent; layers taken with getLayer stay valid. */
  @Override
  public void close() {
    delete();
  }

  /** Opens a .keras or legacy .h5 Keras model file. */
  public static Model open(String path) {
    if (path == null) throw new NullPointerException("path");
    return openRaw(path);
  }

  /** What the file holds. */
  public ModelInfo info() {
    ptr();
    ModelInfoRaw raw = new ModelInfoRaw();
    try {
      getInfoRaw(raw);
      return new ModelInfo(raw);
    } finally {
      raw.delete();
    }
  }

  /** Entry index of the model config (InputLayer included). */
  public ModelLayer layer(int index) {
    String[] name = new String[1], cls = new String[1], cfg = new String[1];
    int[] in = new int[1], out = new int[1], rec = new int[1];
    layerRaw(index, name, cls, cfg, in, out, rec);
    return new ModelLayer(index, name[0], cls[0], cfg[0], in[0], out[0], rec[0] != 0);
  }

  /** A new, independent layer with the config and weights of the recurrent layer name ("name/forward" for a Bidirectional). */
  public Layer getLayer(String name) {
    if (name == null) throw new NullPointerException("name");
    return getLayerRaw(name);
  }

  /**
   * Moves every layer the model runs to device ("cpu", "cuda", "cuda:N" or "auto"); the whole
   * chain then runs there.
   * @throws UnsupportedException a GPU that cannot run (the model stays where it was)
   */
  public void setDevice(String device) {
    if (device == null) throw new NullPointerException("device");
    setDeviceRaw(device);
  }

  /** Where the model runs, and why. */
  public DeviceInfo device() {
    return device(-1);
  }

  /** Where entry layerIndex of the model config runs (layers without weights report the model's backend). */
  public DeviceInfo device(int layerIndex) {
    return DeviceInfo.query((requested, backend, path, reason, deviceName) ->
                                getDeviceRaw(layerIndex, requested, backend, path, reason, deviceName));
  }

  /**
   * Sets {@link Layer#setNumThreads(int)} on every layer the model runs, and on the layers
   * {@link #getLayer(String)} returns afterwards (1 by default, 0 = one per core).
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
   * Sets {@link Layer#setPrecision(String)} on every recurrent layer the model runs (and on the
   * layers {@link #getLayer(String)} returns afterwards); the other layers stay float32.
   * @throws InvalidArgumentException an unknown name
   * @throws UnsupportedException the model is on a GPU, or has no recurrent layer (bf16, int8)
   */
  public void setPrecision(String precision) {
    setPrecisionRaw(precision);
  }

  /** The precision as last set ("float32" by default). */
  public String getPrecision() {
    return getPrecisionRaw();
  }

  /** Floats that run writes for batch sequences of timesteps steps. */
  public int outputLength(int batch, int timesteps) {
    long[] n = new long[1];
    outputLengthRaw(batch, timesteps, n);
    return Buffers.length(n[0]);
  }

  /** Runs the model on (B, T, input_size) floats (token ids as floats for an Embedding); returns a new array. */
  public float[] run(float[] input, int batch, int timesteps) {
    float[] out = new float[outputLength(batch, timesteps)];
    run(input, batch, timesteps, null, out);
    return out;
  }

  /** Runs the model with an optional (B, T) mask into output (no allocation). */
  public void run(float[] input, int batch, int timesteps, byte[] mask, float[] output) {
    Buffers.needArray(input, "input");
    Buffers.needArray(output, "output");
    runRaw(input, batch, timesteps, mask, output);
  }

  /** Runs the model on direct buffers (zero copy). */
  public void run(java.nio.FloatBuffer input, int batch, int timesteps, java.nio.ByteBuffer mask,
                  java.nio.FloatBuffer output) {
    runRaw(Buffers.in(input), batch, timesteps, Buffers.mask(mask), Buffers.out(output));
  }

  // ---- graphs: several inputs and outputs (since 0.4) -----------------------------------------

  /**
   * Opens a model from the bytes of a .keras or legacy .h5 file (copied during the call).
   * @throws IoException not a Keras file, truncated or corrupt (the message says "&lt;memory&gt;: ...")
   */
  public static Model open(byte[] bytes) {
    return open(bytes, null);
  }

  /** {@link #open(byte[])} with name standing for the file in messages (null: "&lt;memory&gt;"). */
  public static Model open(byte[] bytes, String name) {
    if (bytes == null) throw new NullPointerException("bytes");
    return openMemoryRaw(bytes, name);
  }

  /** {@link #open(byte[], String)} from a direct ByteBuffer (its bytes between position and limit, no copy on the Java side). */
  public static Model open(java.nio.ByteBuffer bytes, String name) {
    if (bytes == null) throw new NullPointerException("bytes");
    return openMemoryRaw(Buffers.mask(bytes), name);
  }

  /** Reads a .keras or .h5 file image from in to its end (in is not closed) and opens it. */
  public static Model open(java.io.InputStream in) throws java.io.IOException {
    return open(in, null);
  }

  /** {@link #open(java.io.InputStream)} with name standing for the file in messages. */
  public static Model open(java.io.InputStream in, String name) throws java.io.IOException {
    if (in == null) throw new NullPointerException("in");
    return open(in.readAllBytes(), name);
  }

  /** Number of model inputs (Keras's model.inputs). */
  public int numInputs() {
    int[] n = new int[1];
    numInputsRaw(n);
    return n[0];
  }

  /** Number of model outputs (Keras's model.outputs). */
  public int numOutputs() {
    int[] n = new int[1];
    numOutputsRaw(n);
    return n[0];
  }

  /**
   * Input index: its name, dims (-1 for the batch unless a stateful model fixes it, and for a
   * timesteps axis given at run time), whether it takes token ids and whether it is a sequence.
   * @throws InvalidArgumentException index out of range
   */
  public ModelTensor input(int index) {
    String[] name = new String[1];
    int[] rank = new int[1], ids = new int[1];
    long[] dims = new long[Recur.MAX_RANK];
    inputRaw(index, name, rank, ids, dims);
    int[] dtype = new int[1];
    inputDtypeRaw(index, dtype);
    return new ModelTensor(index, name[0], java.util.Arrays.copyOf(dims, rank[0]), ids[0] != 0, isSequence(index),
                           dtype[0] == Tensor.DType.STRING.code);
  }

  /**
   * Whether input index has a timesteps axis (axis 1): its length comes from the run's timesteps,
   * masks address it, and {@link ModelState#step} feeds it a few steps at a time (the others are
   * given whole on every step).
   * @throws InvalidArgumentException index out of range
   */
  public boolean isSequence(int index) {
    int[] s = new int[1];
    inputSequenceRaw(index, s);
    return s[0] != 0;
  }

  /** Output index: its name (Keras's model.output_names) and dims (-1 where they depend on the call). */
  public ModelTensor output(int index) {
    String[] name = new String[1];
    int[] rank = new int[1];
    long[] dims = new long[Recur.MAX_RANK];
    outputRaw(index, name, rank, dims);
    return new ModelTensor(index, name[0], java.util.Arrays.copyOf(dims, rank[0]), false, false, false);
  }

  /** Every input, in Keras's model.inputs order. */
  public java.util.List<ModelTensor> inputs() {
    int n = numInputs();
    java.util.List<ModelTensor> l = new java.util.ArrayList<>(n);
    for (int i = 0; i < n; ++i) l.add(input(i));
    return java.util.Collections.unmodifiableList(l);
  }

  /** Every output, in Keras's model.outputs order. */
  public java.util.List<ModelTensor> outputs() {
    int n = numOutputs();
    java.util.List<ModelTensor> l = new java.util.ArrayList<>(n);
    for (int i = 0; i < n; ++i) l.add(output(i));
    return java.util.Collections.unmodifiableList(l);
  }

  /** timesteps as the C ABI takes them: null means every input's shape is fixed (zeros). */
  private int[] steps(int[] timesteps) {
    return timesteps != null ? timesteps : new int[numInputs()];
  }

  /**
   * The dims of output index for batch rows and timesteps[i] steps of input i (null: every input's
   * length is fixed by the model).
   * @throws ShapeException the timesteps do not fit the graph (e.g. an Add of sequences of different lengths)
   */
  public long[] outputDims(int index, int batch, int[] timesteps) {
    int[] rank = new int[1];
    long[] dims = new long[Recur.MAX_RANK];
    outputDimsRaw(index, batch, steps(timesteps), rank, dims);
    return java.util.Arrays.copyOf(dims, rank[0]);
  }

  /** The dims of every output for those shapes. */
  public long[][] outputDims(int batch, int[] timesteps) {
    int n = numOutputs();
    long[][] d = new long[n][];
    for (int i = 0; i < n; ++i) d[i] = outputDims(i, batch, timesteps);
    return d;
  }

  /** Floats {@link #runInputs} reads: every input for those shapes, concatenated. */
  public int inputsLength(int batch, int[] timesteps) {
    long[] n = new long[1];
    inputsLengthRaw(batch, steps(timesteps), n);
    return Buffers.length(n[0]);
  }

  /** Floats {@link #runInputs} writes: every output for those shapes, concatenated. */
  public int outputsLength(int batch, int[] timesteps) {
    long[] n = new long[1];
    outputsLengthRaw(batch, steps(timesteps), n);
    return Buffers.length(n[0]);
  }

  /** {@link #run(float[][], int, int[], byte[][])} without masks. */
  public float[][] run(float[][] inputs, int batch, int[] timesteps) {
    return run(inputs, batch, timesteps, null);
  }

  /**
   * Runs the graph (Keras's model.predict on one batch).
   * @param inputs one row-major array per model input (token ids as floats)
   * @param timesteps timesteps[i] = the steps of input i (ignored for inputs of a fixed length); null if every input's length is fixed
   * @param masks null, or one entry per input: the (B, T_i) mask of a sequence input (nonzero = valid) or null; give masks for every sequence input or none
   * @return one array per model output, shaped as {@link #outputDims(int, int[])}
   * @throws UnsupportedException a layer recur cannot run (the message names its class and name)
   * @throws ShapeException a length that does not fit
   */
  public float[][] run(float[][] inputs, int batch, int[] timesteps, byte[][] masks) {
    int n = numInputs();
    float[] in = Buffers.concat(inputs, n, "inputs");
    byte[] m = Buffers.concatMasks(masks, n);
    int[] ts = steps(timesteps);
    float[] out = new float[outputsLength(batch, ts)];
    runInputsRaw(batch, ts, in, m, out);
    return Buffers.split(out, outputDims(batch, ts));
  }

  /** The C ABI's form of run: every input concatenated, masks null or concatenated, every output concatenated into outputs (no allocation). */
  public void runInputs(float[] inputs, int batch, int[] timesteps, byte[] masks, float[] outputs) {
    Buffers.needArray(inputs, "inputs");
    Buffers.needArray(outputs, "outputs");
    runInputsRaw(batch, steps(timesteps), inputs, masks, outputs);
  }

  /** {@link #runInputs(float[], int, int[], byte[], float[])} on direct buffers (zero copy). */
  public void runInputs(java.nio.FloatBuffer inputs, int batch, int[] timesteps, java.nio.ByteBuffer masks,
                        java.nio.FloatBuffer outputs) {
    runInputsRaw(batch, steps(timesteps), Buffers.in(inputs), Buffers.mask(masks), Buffers.out(outputs));
  }

  /** Whether some layer is stateful: runs then carry its states from call to call, as in Keras. */
  public boolean isStateful() {
    int[] s = new int[1];
    isStatefulRaw(s);
    return s[0] != 0;
  }

  /** Number of stateful layers (Bidirectional halves count one each). */
  public int numStatefulLayers() {
    int[] n = new int[1];
    numStatefulLayersRaw(n);
    return n[0];
  }

  /**
   * Stateful layer index, in config order: the name {@link #getStates(String)} takes and its
   * states' shape (numStates, batch, units).
   * @throws InvalidArgumentException index out of range
   */
  public StatefulLayer statefulLayer(int index) {
    String[] name = new String[1];
    int[] ns = new int[1], batch = new int[1], units = new int[1];
    statefulLayerRaw(index, name, ns, batch, units);
    return new StatefulLayer(index, name[0], ns[0], batch[0], units[0]);
  }

  /** Every stateful layer, in config order (empty for a model that is not stateful). */
  public java.util.List<StatefulLayer> statefulLayers() {
    int n = numStatefulLayers();
    java.util.List<StatefulLayer> l = new java.util.ArrayList<>(n);
    for (int i = 0; i < n; ++i) l.add(statefulLayer(i));
    return java.util.Collections.unmodifiableList(l);
  }

  /** Floats of the states of stateful layer layer ("name/forward" or "name/backward" for a Bidirectional half). */
  public int statesLength(String layer) {
    if (layer == null) throw new NullPointerException("layer");
    long[] n = new long[1];
    statesLengthRaw(layer, n);
    return Buffers.length(n[0]);
  }

  /**
   * The states of stateful layer layer: numStates x (batch_size, units), h then c.
   * @throws InvalidArgumentException no such layer, or it is not stateful
   */
  public float[] getStates(String layer) {
    float[] out = new float[statesLength(layer)];
    getStatesRaw(layer, out);
    return out;
  }

  /** Copies them into out (statesLength(layer) floats). */
  public void getStates(String layer, float[] out) {
    if (layer == null) throw new NullPointerException("layer");
    Buffers.needArray(out, "out");
    getStatesRaw(layer, out);
  }

  /**
   * Sets all the states of stateful layer layer (statesLength(layer) floats). Not thread-safe with runs.
   * @throws ShapeException another length
   */
  public void setStates(String layer, float[] states) {
    if (layer == null) throw new NullPointerException("layer");
    Buffers.needArray(states, "states");
    setStatesRaw(layer, states);
  }

  /**
   * Keras 3 backend semantics for every layer: "tensorflow" (the default, also torch's) or "jax"
   * (also numpy's); they differ at masked steps before the first valid one.
   * @throws InvalidArgumentException another name
   * @throws UnsupportedException "jax" for a Keras 2 model
   */
  public void setKerasBackend(String backend) {
    if (backend == null) throw new NullPointerException("backend");
    setKerasBackendRaw(backend);
  }

  /** "" when the model streams ({@link ModelState}), else why not, naming the layer. */
  public String streamable() {
    String[] why = new String[1];
    streamableRaw(why);
    return why[0] == null ? "" : why[0];
  }

  /** Whether {@link #streamable()} is "". */
  public boolean canStream() {
    return streamable().isEmpty();
  }

  // ---- many states in one step (since 0.8) ------------------------------------------------

  /**
   * Steps many states of this model in one call, as one batch (one matrix product per layer per
   * timestep for all of them): the numbers of calling {@link ModelState#step(java.util.Map)} on each
   * with its own rows. The inputs hold the rows of every state one after another in the order of
   * {@code states} (dims[0] = the sum of their batches), masks likewise; so do the outputs. Each
   * state appears once and was made on this model. On any error (a RecurException naming the
   * argument) every state is left exactly as before the call. The states must not be used by
   * other threads during the call.
   */
  public java.util.Map<String, ModelOutput> stepStates(java.util.List<ModelState> states,
                                                       java.util.Map<String, Tensor> inputs) {
    return stepStates(states, inputs, null, null);
  }

  /** {@link #stepStates(java.util.List, java.util.Map)} for the outputs named (all when null), cancellable. */
  public java.util.Map<String, ModelOutput> stepStates(java.util.List<ModelState> states, java.util.Map<String, Tensor> inputs,
                                                       java.util.Collection<String> outputs, RunOptions options) {
    java.util.Collection<String> names = outputs != null ? outputs : outputNames();
    long array = statesArray(states);
    try {
      return NamedRun.run(NativeApi.STATES_SHAPES, NativeApi.STEP_STATES, array, inputs, names, options);
    } finally {
      NativeApi.freeStatesArray(array);
    }
  }

  private static long statesArray(java.util.List<ModelState> states) {
    if (states == null) throw new NullPointerException("states");
    long[] h = new long[states.size()];
    for (int i = 0; i < h.length; ++i) {
      ModelState s = states.get(i);
      if (s == null) throw new NullPointerException("states[" + i + "]");
      h[i] = s.ptr();
    }
    return NativeApi.statesArray(h);
  }
%}
