// SPDX-License-Identifier: Apache-2.0
/* LayerOptions: the generated field accessors (getUnits/setUnits, setActivation, ...) plus close(). */
%typemap(javacode) RecurLayerOptions %{
  /** Frees the native options. Idempotent. */
  @Override
  public void close() {
    delete();
  }

  /** Whether {@link #close()} has been called. */
  public boolean isClosed() {
    return swigCPtr == 0;
  }

  long ptr() {
    long p = swigCPtr;
    if (p == 0) throw new ClosedException("recur: this LayerOptions is closed");
    return p;
  }

  /** Options of a layer of the given type (Recur.LAYER_GRU, ...), units and input size; the rest keeps Keras's defaults. */
  public static LayerOptions of(int type, int units, int inputSize) {
    LayerOptions o = new LayerOptions();
    o.setType(type);
    o.setUnits(units);
    o.setInputSize(inputSize);
    return o;
  }
%}
