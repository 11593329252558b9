// SPDX-License-Identifier: Apache-2.0
/* State: h (and c) of a batch of streams. */
%typemap(javacode) RecurState %{
  private int numStates, batch, units; // cached shape (immutable for a state)

  /** A zero state of batch streams shaped for layer (the state does not reference the layer afterwards). */
  public State(Layer layer, int batch) {
    this(take(createRaw(checkedLayer(layer), batch)), true);
    int[] n = new int[1], b = new int[1], u = new int[1];
    shapeRaw(n, b, u);
    this.numStates = n[0];
    this.batch = b[0];
    this.units = u[0];
  }

  private static Layer checkedLayer(Layer layer) {
    if (layer == null) throw new NullPointerException("layer");
    layer.ptr();
    return layer;
  }

  private static long take(State s) {
    long p = s.swigCPtr;
    s.swigCMemOwn = false;
    s.swigCPtr = 0;
    return p;
  }

  static State checked(State s) {
    if (s == null) throw new NullPointerException("state");
    s.ptr();
    return s;
  }

  long ptr() {
    long p = swigCPtr;
    if (p == 0) throw new ClosedException("recur: this State is closed");
    return p;
  }

  /** The native addresses of states, for Layer.forwardStates (duplicates are the library's to report). */
  static long[] handles(State[] states) {
    if (states == null) throw new NullPointerException("states");
    long[] h = new long[states.length];
    for (int i = 0; i < states.length; ++i) {
      if (states[i] == null) throw new NullPointerException("states[" + i + "]");
      h[i] = states[i].ptr();
    }
    return h;
  }

  /** Frees the native state. Idempotent. */
  @Override
  public void close() {
    delete();
  }

  /** Number of state tensors: 1 (h) or 2 (h, c). */
  public int numStates() { ptr(); return numStates; }
  /** Number of streams. */
  public int batch() { ptr(); return batch; }
  /** Units of the layer the state was made for. */
  public int units() { ptr(); return units; }
  /** numStates * batch * units. */
  public int length() { ptr(); return numStates * batch * units; }

  /** A copy of the states: numStates x (batch, units) concatenated. */
  public float[] get() {
    float[] out = new float[length()];
    getRaw(out);
    return out;
  }

  /** Copies the states into out. */
  public void get(float[] out) {
    Buffers.needArray(out, "out");
    getRaw(out);
  }

  /** Copies the states into a direct buffer. */
  public void get(java.nio.FloatBuffer out) {
    getRaw(Buffers.out(out));
  }

  /** Sets the states (numStates x (batch, units)); starts a new stream. */
  public void set(float[] values, int numStates) {
    Buffers.needArray(values, "values");
    setRaw(values, numStates);
  }

  /**
   * Moves the states to device ("cpu", "cuda", "cuda:N" or "auto") now; they also move when a
   * layer on another device steps them.
   * @throws UnsupportedException a GPU that cannot run (the state stays where it was)
   */
  public void setDevice(String device) {
    if (device == null) throw new NullPointerException("device");
    setDeviceRaw(device);
  }

  /** Where the states live: "cpu", or "device-resident" on the GPU of the layer that last stepped them. */
  public DeviceInfo device() {
    return DeviceInfo.query(this::getDeviceRaw);
  }

  /** Sets the states from a direct buffer. */
  public void set(java.nio.FloatBuffer values, int numStates) {
    setRaw(Buffers.in(values), numStates);
  }
%}
