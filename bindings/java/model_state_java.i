/* ModelState: one stream (a batch of rows) through a whole model. */
%typemap(javacode) RecurModelState %{
  private int batch, numInputs;
  private long[][] outputDims; // the model's output dims, copied at creation (the state outlives its model)

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
    java.util.List<ModelTensor> outs = model.outputs();
    outputDims = new long[outs.size()][];
    for (int i = 0; i < outputDims.length; ++i) outputDims[i] = outs.get(i).dims();
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
   * The dims of each output of a step of timesteps steps: sequence outputs (rank 3 or more) hold
   * those steps, the others are what the model outputs after them.
   */
  public long[][] outputDims(int timesteps) {
    int total = outputsLength(timesteps);
    long[][] d = new long[outputDims.length][];
    long sum = 0;
    for (int i = 0; i < d.length; ++i) {
      d[i] = outputDims[i].clone();
      d[i][0] = batch;
      if (d[i].length >= 3) d[i][1] = timesteps;
      for (long v : d[i])
        if (v < 0) throw new IllegalStateException("recur: output " + i + " has an axis of unknown size in a stream");
      sum += Buffers.product(d[i]);
    }
    if (sum != total)
      throw new IllegalStateException("recur: the outputs of a step are " + total + " floats, not " + sum);
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
%}
