// SPDX-License-Identifier: Apache-2.0
/* ModelState: one stream (a batch of rows) through a whole model. */
%typemap(javacode) RecurModelState %{
  private int batch, numInputs, numOutputs; // copied at creation (the state outlives its model)
  private java.util.List<String> outputNames;

  /**
   * A stream state for batch rows through model, all states zero. Any number of states may step
   * one model from any number of threads (each state by one thread at a time). It stays valid
   * after the model is closed.
   * @throws UnsupportedException the model does not stream; the message names the layer (see {@link Model#streamable()})
   * @throws InvalidArgumentException batch &lt;= 0, or not the batch_size of the model's stateful layers
   */
  public ModelState(Model model, int batch) {
    this(take(createRaw(checkedModel(model), batch)), true);
    this.batch = batch;
    this.numInputs = model.numInputs();
    this.numOutputs = model.numOutputs();
    this.outputNames = model.outputNames();
  }

  private static Model checkedModel(Model model) {
    if (model == null) throw new NullPointerException("model");
    model.ptr();
    return model;
  }

  private static long take(ModelState s) {
    long p = s.swigCPtr;
    s.swigCMemOwn = false;
    s.swigCPtr = 0;
    return p;
  }

  long ptr() {
    long p = swigCPtr;
    if (p == 0) throw new ClosedException("recur: this ModelState is closed");
    return p;
  }

  /** Frees the native state. Idempotent. */
  @Override
  public void close() {
    delete();
  }

  /** Rows of the stream. */
  public int batch() {
    ptr();
    return batch;
  }

  /** Floats {@link #step(float[], int, byte[], float[])} reads for timesteps steps (every input, concatenated). */
  public int inputsLength(int timesteps) {
    long[] in = new long[1], out = new long[1];
    lengthsRaw(timesteps, in, out);
    return Buffers.length(in[0]);
  }

  /** Floats a step of timesteps steps writes (every output, concatenated). */
  public int outputsLength(int timesteps) {
    long[] in = new long[1], out = new long[1];
    lengthsRaw(timesteps, in, out);
    return Buffers.length(out[0]);
  }

  /**
   * The dims of output index of a step of timesteps steps (recur_model_state_output_dims):
   * sequence outputs hold those steps, the others are what the model outputs after them.
   * @throws InvalidArgumentException index out of range, or timesteps &lt; 1
   */
  public long[] outputDims(int index, int timesteps) {
    int[] rank = new int[1];
    long[] dims = new long[Recur.MAX_RANK];
    outputDimsRaw(index, timesteps, rank, dims);
    return java.util.Arrays.copyOf(dims, rank[0]);
  }

  /** The dims of every output of a step of timesteps steps. */
  public long[][] outputDims(int timesteps) {
    ptr();
    long[][] d = new long[numOutputs][];
    for (int i = 0; i < d.length; ++i) d[i] = outputDims(i, timesteps);
    return d;
  }

  /** {@link #step(float[][], int, byte[][])} without masks. */
  public float[][] step(float[][] inputs, int timesteps) {
    return step(inputs, timesteps, null);
  }

  /**
   * Feeds the next timesteps (&gt;= 1) steps of every sequence input (inputs without a timesteps
   * axis are given whole on every call) and returns what the model outputs for them, one array per
   * output. Feeding a sequence in pieces gives the outputs of one {@link Model#run} over all of it.
   * @param masks null, or one entry per input: a (batch, timesteps) mask for a sequence input, or null
   */
  public float[][] step(float[][] inputs, int timesteps, byte[][] masks) {
    ptr();
    float[] in = Buffers.concat(inputs, numInputs, "inputs");
    byte[] m = Buffers.concatMasks(masks, numInputs);
    long[][] dims = outputDims(timesteps);
    float[] out = new float[outputsLength(timesteps)];
    stepRaw(timesteps, in, m, out);
    return Buffers.split(out, dims);
  }

  /** The C ABI's form of step: every input concatenated, masks null or concatenated, every output concatenated into outputs (no allocation). */
  public void step(float[] inputs, int timesteps, byte[] masks, float[] outputs) {
    Buffers.needArray(inputs, "inputs");
    Buffers.needArray(outputs, "outputs");
    stepRaw(timesteps, inputs, masks, outputs);
  }

  /** {@link #step(float[], int, byte[], float[])} on direct buffers (zero copy). */
  public void step(java.nio.FloatBuffer inputs, int timesteps, java.nio.ByteBuffer masks, java.nio.FloatBuffer outputs) {
    stepRaw(timesteps, Buffers.in(inputs), Buffers.mask(masks), Buffers.out(outputs));
  }

  // ---- snapshots (since 0.9) --------------------------------------------------------------

  /**
   * Everything the stream carries to its next step (recurrent states, causal layers' past
   * inputs), as versioned little-endian bytes (recur_model_state_save): {@link #load(byte[])}
   * into a new state of the same model and batch goes on with bit-identical outputs. The bytes
   * are the same on every platform; keep them in a checkpoint, a database, another process.
   */
  public byte[] save() {
    long[] len = new long[1];
    if (lastSaveSize > 0) {  // a stream's snapshots keep their size: one native call, not two
      byte[] out = new byte[lastSaveSize];
      try {
        saveRaw(out, len);
        return len[0] == out.length ? out : java.util.Arrays.copyOf(out, Buffers.length(len[0]));
      } catch (ShapeException grew) {
        // fall through: ask the size
      }
    }
    saveSizeRaw(len);
    byte[] out = new byte[Buffers.length(len[0])];
    saveRaw(out, len);
    lastSaveSize = out.length;
    return out;
  }
  private int lastSaveSize;

  /**
   * Loads bytes from {@link #save()} (all or nothing: on an error the state is unchanged).
   * @throws InvalidArgumentException not a snapshot (truncated, corrupt, another format version),
   *         or saved at another batch
   * @throws StateException saved by another model or model version; the message names the layer
   */
  public void load(byte[] bytes) {
    if (bytes == null) throw new NullPointerException("bytes");
    loadRaw(bytes);
  }

  // ---- named steps (since 0.6) ------------------------------------------------------------

  /** {@link #step(java.util.Map, java.util.Collection, RunOptions)} of every output, without options. */
  public java.util.Map<String, ModelOutput> step(java.util.Map<String, Tensor> inputs) {
    return step(inputs, null, null);
  }

  /**
   * Feeds the next steps of the stream by name: every sequence input holds the same number of
   * steps (its dims[1]; dims[0] is this state's batch), inputs without a timesteps axis are given
   * whole. Integer ids work as in {@link Model#run(java.util.Map, java.util.Collection, RunOptions)}.
   * @param outputs the outputs wanted (null: every output, {@link Model#outputNames()}); sequence
   *        outputs hold the steps fed, the others their value after them
   * @param options null, or {@link RunOptions} to cancel the step from another thread
   * @throws CancelledException options were cancelled; the stream is exactly as before the call
   */
  public java.util.Map<String, ModelOutput> step(java.util.Map<String, Tensor> inputs, java.util.Collection<String> outputs,
                                                 RunOptions options) {
    return NamedRun.run(NativeApi.STATE_SHAPES, NativeApi.STEP, ptr(), inputs, outputs != null ? outputs : outputNames,
                        options);
  }

  /** {@link #step(java.util.Map, java.util.Collection, RunOptions)} into the caller's buffers (see {@link Model#runInto}). */
  public void stepInto(java.util.Map<String, Tensor> inputs, java.util.Map<String, OutputBuffer> outputs, RunOptions options) {
    NamedRun.runInto(NativeApi.STEP, ptr(), inputs, outputs, options);
  }

  /** The dims of each requested output (null: every output) of a step with these inputs, without stepping. */
  public java.util.Map<String, long[]> outputShapes(java.util.Map<String, Tensor> inputs, java.util.Collection<String> outputs) {
    return NamedRun.shapes(NativeApi.STATE_SHAPES, ptr(), inputs, outputs != null ? outputs : outputNames);
  }
%}
