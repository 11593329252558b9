// SPDX-License-Identifier: Apache-2.0
// The values a named run or step passes and gets back: NamedTensor (an input by name),
// OutputBuffer (an output by name in the caller's array) and ModelOutput (an output the binding
// allocated). The C descriptors they become are in NamedRun.cs.
using System;
using System.Text;

namespace Recur {

/// <summary>Element types of a <see cref="NamedTensor"/> (recur_dtype).</summary>
public enum ElementType {
  /// <summary>float: read as it is (token ids as floats must be whole numbers, exact up to 2^24).</summary>
  Float32 = 1,
  /// <summary>int: token ids for an Embedding reach it as integers; elsewhere cast to float as Keras does.</summary>
  Int32 = 2,
  /// <summary>long: as Int32, exact at any size.</summary>
  Int64 = 3,
  /// <summary>string: texts for a string model input (Keras dtype "string"; since 0.7).</summary>
  String = 4
}

/// <summary>One model input of <see cref="Model.Run(System.Collections.Generic.IEnumerable{NamedTensor}, System.Collections.Generic.IEnumerable{string}, RunOptions)"/>
/// or <see cref="ModelState.Step(System.Collections.Generic.IEnumerable{NamedTensor}, System.Collections.Generic.IEnumerable{string}, RunOptions)"/>:
/// the input's name (<see cref="Model.Inputs"/>), row-major data of float, int or long, its dims
/// (batch first; a sequence input's dims[1] is its timesteps) and an optional (batch, timesteps)
/// mask (nonzero = a valid step). The tensor refers to the arrays, it does not copy them: change
/// their contents and pass the same NamedTensor to the next call.</summary>
public sealed class NamedTensor {
  readonly long[] dims;
  internal readonly byte[] NameUtf8;  // NUL-terminated, encoded once (a run then allocates nothing for it)

  /// <summary>The model input's name.</summary>
  public string Name { get; private set; }
  /// <summary>The type of <see cref="Data"/>.</summary>
  public ElementType ElementType { get; private set; }
  /// <summary>The float[], int[], long[] or string[] given.</summary>
  public Array Data { get; private set; }
  /// <summary>The mask given, or null.</summary>
  public byte[] Mask { get; private set; }
  /// <summary>A copy of the dims.</summary>
  public long[] Dims { get { return (long[])dims.Clone(); } }
  internal long[] DimsRef { get { return dims; } }

  /// <summary>Float values (token ids as floats for an Embedding).</summary>
  public NamedTensor(string name, float[] data, long[] dims, byte[] mask = null)
      : this(name, ElementType.Float32, data, dims, mask) {}
  /// <summary>32-bit integers: token ids for an Embedding, passed as integers.</summary>
  public NamedTensor(string name, int[] data, long[] dims, byte[] mask = null)
      : this(name, ElementType.Int32, data, dims, mask) {}
  /// <summary>64-bit integers: token ids for an Embedding, exact at any size.</summary>
  public NamedTensor(string name, long[] data, long[] dims, byte[] mask = null)
      : this(name, ElementType.Int64, data, dims, mask) {}

  /// <summary>Texts for a string model input (<see cref="ModelTensor.Strings"/>: Keras dtype
  /// "string", read by StringLookup or TextVectorization), row-major over dims, e.g. {batch, 1}
  /// for a TextVectorization (since 0.7). Unlike the numeric overloads, the texts are encoded to
  /// UTF-8 here, once: later changes to the array are not seen. A null text, or one holding
  /// '\0' (which the C ABI's NUL-terminated strings cannot carry), is refused.</summary>
  public NamedTensor(string name, string[] texts, long[] dims)
      : this(name, ElementType.String, texts, dims, null) {
    var offsets = new int[texts.Length];
    int size = 0;
    for (int i = 0; i < texts.Length; ++i) {
      if (texts[i] == null) throw new ArgumentNullException("texts", "texts[" + i + "] is null");
      if (texts[i].IndexOf('\0') >= 0)
        throw new ArgumentException("texts[" + i + "] holds a NUL character, which a text input cannot carry", "texts");
      offsets[i] = size;
      size += Encoding.UTF8.GetByteCount(texts[i]) + 1;
    }
    var blob = new byte[size];
    for (int i = 0; i < texts.Length; ++i) Encoding.UTF8.GetBytes(texts[i], 0, texts[i].Length, blob, offsets[i]);
    TextBlob = blob;
    TextOffsets = offsets;
  }

  // The texts of a String tensor: NUL-terminated UTF-8, one after another, and where each starts.
  internal readonly byte[] TextBlob;
  internal readonly int[] TextOffsets;

  NamedTensor(string name, ElementType type, Array data, long[] dims, byte[] mask) {
    Util.NotNull(name, "name");
    Util.NotNull(data, "data");
    Util.NotNull(dims, "dims");
    if (dims.Length < 1 || dims.Length > NamedRun.MaxRank)
      throw new ArgumentException("dims: expected 1 to " + NamedRun.MaxRank + " dims (batch first), got " + dims.Length +
                                  "; pass the input's shape with its batch, e.g. {batch, timesteps, features}", "dims");
    Name = name;
    NameUtf8 = NamedRun.Utf8(name);
    ElementType = type;
    Data = data;
    this.dims = (long[])dims.Clone();
    Mask = mask;
  }

  public override string ToString() {
    return Name + " " + ElementType + " (" + string.Join(", ", dims) + ")" + (Mask == null ? "" : " masked");
  }
}

/// <summary>One requested output of <see cref="Model.RunInto(System.Collections.Generic.IReadOnlyList{NamedTensor}, System.Collections.Generic.IReadOnlyList{OutputBuffer}, RunOptions)"/>
/// or <see cref="ModelState.StepInto(System.Collections.Generic.IReadOnlyList{NamedTensor}, System.Collections.Generic.IReadOnlyList{OutputBuffer}, RunOptions)"/>:
/// the output's name ("name:k" for the k-th output of a Keras 3 layer with several) and the
/// caller's float array, at least the output's length (<see cref="Model.OutputShapes(System.Collections.Generic.IReadOnlyList{NamedTensor}, System.Collections.Generic.IReadOnlyList{OutputBuffer})"/>
/// fills <see cref="Length"/> without running). A successful call writes the output to the start
/// of <see cref="Buffer"/> and sets <see cref="Rank"/>, <see cref="Dim"/> and <see cref="Length"/>;
/// a failed one changes none of them. Reuse it across calls: nothing is allocated per call.</summary>
public sealed class OutputBuffer {
  internal readonly long[] DimsRef = new long[NamedRun.MaxRank];
  internal readonly byte[] NameUtf8;

  /// <summary>The output's name.</summary>
  public string Name { get; private set; }
  /// <summary>Where the output is written; may be set between calls (null only for OutputShapes).</summary>
  public float[] Buffer { get; set; }
  /// <summary>Dims the last successful call wrote (0 before).</summary>
  public int Rank { get; internal set; }
  /// <summary>Floats the last successful call wrote (or would write, after OutputShapes).</summary>
  public long Length { get; internal set; }

  public OutputBuffer(string name, float[] buffer = null) {
    Util.NotNull(name, "name");
    Name = name;
    NameUtf8 = NamedRun.Utf8(name);
    Buffer = buffer;
  }

  /// <summary>Dim <paramref name="axis"/> (0 = batch) of the last call's output.</summary>
  public long Dim(int axis) {
    if (axis < 0 || axis >= Rank)
      throw new ArgumentOutOfRangeException("axis", axis, "axis: expected 0 to " + (Rank - 1) + " (the output's rank is " + Rank + ")");
    return DimsRef[axis];
  }

  /// <summary>A copy of the last call's dims.</summary>
  public long[] Dims {
    get {
      var d = new long[Rank];
      Array.Copy(DimsRef, d, Rank);
      return d;
    }
  }
}

/// <summary>One output of a named run or step: its name, dims and values (row-major floats).</summary>
public sealed class ModelOutput {
  public string Name { get; private set; }
  public long[] Dims { get; private set; }
  public float[] Values { get; private set; }

  internal ModelOutput(string name, long[] dims, float[] values) {
    Name = name;
    Dims = dims;
    Values = values;
  }

  public override string ToString() { return Name + " (" + string.Join(", ", Dims) + ")"; }
}

}
