/* Model: a Keras .keras or .h5 file. */
%typemap(javacode) RecurModel %{
  long ptr() {
    long p = swigCPtr;
    if (p == 0) throw new ClosedException("recur: this Model is closed");
    return p;
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
%}
