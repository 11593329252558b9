// SPDX-License-Identifier: Apache-2.0
// Public API of Model (a Keras .keras or .h5 file).
using System;

namespace Recur {

/// <summary>What a model file holds (recur_model_info).</summary>
public sealed class ModelInfo {
  public int Dialect { get; internal set; }
  public string KerasVersion { get; internal set; }
  /// <summary>Entries of the model config, InputLayer included.</summary>
  public int NumLayers { get; internal set; }
  /// <summary>True if <see cref="Model.Run(float[], int, int, byte[])"/> can run the whole chain.</summary>
  public bool Runnable { get; internal set; }
  /// <summary>Why not ("" if runnable).</summary>
  public string Unsupported { get; internal set; }
  public int InputSize { get; internal set; }
  public bool TakesTokenIds { get; internal set; }
  public int OutputSize { get; internal set; }
  public bool ReturnsSequences { get; internal set; }
  public int NumOutputs { get; internal set; }
}

/// <summary>One entry of a model's config (recur_model_layer).</summary>
public sealed class ModelLayer {
  public string Name { get; internal set; }
  public string ClassName { get; internal set; }
  public string ConfigJson { get; internal set; }
  public int InputSize { get; internal set; }
  public int OutputSize { get; internal set; }
  /// <summary>True for layers <see cref="Model.GetLayer"/> can return.</summary>
  public bool Recurrent { get; internal set; }
}

/// <summary>A Keras model file (.keras zip or legacy .h5, Keras 2 or 3). Dispose it; layers
/// taken from it stay valid.</summary>
public sealed partial class Model {
  /// <summary>Opens a model file. Throws RecurException (Status.IO for a missing or corrupt file).</summary>
  public static Model Open(string path) {
    Util.NotNull(path, "path");
    NativeLoader.Load();
    return open(path);
  }

  internal void CheckDisposed() {
    if (Util.Disposed(swigCPtr)) throw new ObjectDisposedException("Recur.Model");
  }

  public bool IsDisposed { get { return Util.Disposed(swigCPtr); } }

  public ModelInfo Info {
    get {
      CheckDisposed();
      using (var n = new NativeModelInfo()) {
        get_info(n);
        return new ModelInfo {
          Dialect = n.dialect, KerasVersion = n.keras_version, NumLayers = n.num_layers, Runnable = n.runnable != 0,
          Unsupported = n.unsupported, InputSize = n.input_size, TakesTokenIds = n.takes_token_ids != 0,
          OutputSize = n.output_size, ReturnsSequences = n.returns_sequences != 0, NumOutputs = n.num_outputs
        };
      }
    }
  }

  /// <summary>Entry <paramref name="index"/> of the model config.</summary>
  public ModelLayer LayerAt(int index) {
    CheckDisposed();
    IntPtr name, cls, config;
    int inputSize, outputSize, recurrent;
    layer(index, out name, out cls, out config, out inputSize, out outputSize, out recurrent);
    return new ModelLayer {
      Name = Util.Str(name), ClassName = Util.Str(cls), ConfigJson = Util.Str(config), InputSize = inputSize,
      OutputSize = outputSize, Recurrent = recurrent != 0
    };
  }

  /// <summary>A new, independent layer with the config and weights of the recurrent layer
  /// <paramref name="name"/> ("name/forward" or "name/backward" for a Bidirectional).</summary>
  public Layer GetLayer(string name) {
    CheckDisposed();
    Util.NotNull(name, "name");
    return get_layer(name);
  }

  /// <summary>Moves every layer the model runs to <paramref name="device"/> ("cpu", "cuda", "cuda:N"
  /// or "auto"); the whole chain then runs there. Status.Unsupported for a GPU that cannot run
  /// (the model stays where it was).</summary>
  public void SetDevice(string device) {
    CheckDisposed();
    Util.NotNull(device, "device");
    set_device(device);
  }

  /// <summary>Where the model runs, and why.</summary>
  public DeviceInfo Device { get { return LayerDevice(-1); } }

  /// <summary>Where entry <paramref name="index"/> of the model config runs (-1: the model; layers
  /// without weights report the model's backend).</summary>
  public DeviceInfo LayerDevice(int index) {
    CheckDisposed();
    return Interop.Device((out IntPtr requested, out IntPtr backend, out IntPtr path, out IntPtr reason,
                           out IntPtr name) => get_device(index, out requested, out backend, out path, out reason,
                                                          out name));
  }

  /// <summary><see cref="Layer.NumThreads"/> of every layer the model runs, and of the layers
  /// <see cref="GetLayer"/> returns afterwards (1 by default, 0 = one per core). Setting a negative
  /// value or one above 1024 throws RecurException with Status.InvalidArgument.</summary>
  public int NumThreads {
    get {
      CheckDisposed();
      int n;
      get_num_threads(out n);
      return n;
    }
    set {
      CheckDisposed();
      set_num_threads(value);
    }
  }

  /// <summary><see cref="Layer.Precision"/> of every recurrent layer the model runs, and of the layers
  /// <see cref="GetLayer"/> returns afterwards; the other layers stay float32. Status.Unsupported on
  /// a GPU or, for "bf16" and "int8", for a model without recurrent layers.</summary>
  public string Precision {
    get {
      CheckDisposed();
      return get_precision();
    }
    set {
      CheckDisposed();
      set_precision(value);
    }
  }

  /// <summary>Floats <see cref="Run(float[], int, int, float[], byte[])"/> writes for B sequences of T steps.</summary>
  public long OutputLength(int batch, int timesteps) {
    CheckDisposed();
    ulong n;
    output_length(batch, timesteps, out n);
    return (long)n;
  }

  /// <summary>Runs the model: input (B, T, input_size) floats (token ids as floats for an
  /// Embedding), optional (B, T) mask, output of <see cref="OutputLength"/> floats.</summary>
  public unsafe void Run(float[] input, int batch, int timesteps, float[] output, byte[] mask = null) {
    CheckDisposed();
    Util.NotNull(input, "input");
    Util.NotNull(output, "output");
    fixed (float* i = input) fixed (byte* m = mask) fixed (float* o = output) {
      run((IntPtr)i, (ulong)input.LongLength, batch, timesteps, (IntPtr)m, Util.Len(mask), (IntPtr)o,
          (ulong)output.LongLength);
    }
  }

  public float[] Run(float[] input, int batch, int timesteps, byte[] mask = null) {
    return Interop.Filled(OutputLength(batch, timesteps), output => Run(input, batch, timesteps, output, mask));
  }
}

}
