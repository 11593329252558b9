// SPDX-License-Identifier: Apache-2.0
// Reads the parity cases written by extract_fixtures.py and runs them through the binding.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using Recur;

namespace RecurTests {

sealed class Tensor {
  public int[] Shape;
  public float[] Data;
}

sealed class FixtureCall {
  public string Reset = "none";
  public int ResetStates;
  public float[] ResetValues;
  public Tensor Input;
  public byte[] Mask;
  public int NumInit;
  public float[] Init;
  public bool Training;
  public List<KeyValuePair<string, float[]>> Outputs = new List<KeyValuePair<string, float[]>>();
}

sealed class FixtureCase {
  public int Dialect;
  public string Name;
  public double Tolerance;
  public string KerasVersion;
  public string Json;
  public int InputSize;
  public List<float[]> Weights = new List<float[]>();
  public List<FixtureCall> Calls = new List<FixtureCall>();

  public static List<FixtureCase> Load(string path) {
    var cases = new List<FixtureCase>();
    FixtureCase c = null;
    FixtureCall call = null;
    foreach (var raw in File.ReadAllLines(path)) {
      if (raw.Length == 0) continue;
      if (raw.StartsWith("json ")) { c.Json = raw.Substring(5); continue; }
      var t = raw.Split(' ');
      int p = 1;
      switch (t[0]) {
        case "case":
          c = new FixtureCase { Dialect = int.Parse(t[1]), Name = t[2], Tolerance = D(t[3]), KerasVersion = t[4] };
          cases.Add(c);
          break;
        case "input_size": c.InputSize = int.Parse(t[1]); break;
        case "weight": p = 2; c.Weights.Add(ReadTensor(t, ref p).Data); break;
        case "call": call = new FixtureCall(); c.Calls.Add(call); break;
        case "reset":
          call.Reset = t[1];
          if (t[1] == "set") { call.ResetStates = int.Parse(t[2]); p = 3; call.ResetValues = Floats(t, ref p); }
          break;
        case "input": call.Input = ReadTensor(t, ref p); break;
        case "mask":
          if (t[1] != "none") {
            int n = int.Parse(t[1]);
            call.Mask = new byte[n];
            for (int i = 0; i < n; ++i) call.Mask[i] = (byte)(t[2 + i] == "1" ? 1 : 0);
          }
          break;
        case "init": call.NumInit = int.Parse(t[1]); p = 2; call.Init = Floats(t, ref p); break;
        case "training": call.Training = t[1] == "1"; break;
        case "output": p = 2; call.Outputs.Add(new KeyValuePair<string, float[]>(t[1], Floats(t, ref p))); break;
        case "end": c = null; call = null; break;
        default: throw new InvalidDataException("unknown record " + t[0]);
      }
    }
    return cases;
  }

  static double D(string s) { return double.Parse(s, CultureInfo.InvariantCulture); }

  static float[] Floats(string[] t, ref int p) {
    int n = int.Parse(t[p++]);
    var v = new float[n];
    for (int i = 0; i < n; ++i) v[i] = (float)D(t[p++]);
    return v;
  }

  static Tensor ReadTensor(string[] t, ref int p) {
    int nd = int.Parse(t[p++]);
    var shape = new int[nd];
    for (int i = 0; i < nd; ++i) shape[i] = int.Parse(t[p++]);
    return new Tensor { Shape = shape, Data = Floats(t, ref p) };
  }

  /// Runs the case; returns the largest absolute difference to Keras over all outputs.
  public double Run() {
    double worst = 0;
    using (var layer = Layer.FromJson(Json, InputSize, Dialect, KerasVersion)) {
      for (int i = 0; i < Weights.Count; ++i) layer.SetWeight(i, Weights[i]);
      var info = layer.Info;
      foreach (var call in Calls) {
        if (call.Reset == "zero") layer.ResetStates();
        else if (call.Reset == "set") layer.SetStates(call.ResetValues, call.ResetStates);
        float[] output, states;
        int batch;
        if (info.IsCell) {
          batch = call.Input.Shape[0];
          output = new float[batch * info.Units];
          states = new float[info.NumStates * batch * info.Units];
          layer.CellCall(call.Input.Data, batch, call.Init, call.NumInit, call.Training, output, states);
        } else {
          batch = info.TimeMajor ? call.Input.Shape[1] : call.Input.Shape[0];
          int steps = info.TimeMajor ? call.Input.Shape[0] : call.Input.Shape[1];
          output = new float[layer.OutputLength(batch, steps)];
          states = new float[info.NumStates * batch * info.Units];
          layer.Forward(call.Input.Data, batch, steps, call.Mask, call.NumInit > 0 ? call.Init : null, call.NumInit,
                        call.Training, output, states);
        }
        int each = batch * info.Units;
        foreach (var o in call.Outputs) {
          float[] got = output;
          int offset = 0;
          if (o.Key == "state_h") got = states;
          if (o.Key == "state_c") { got = states; offset = each; }
          if (o.Value.Length + offset > got.Length)
            throw new Exception(Name + ": output " + o.Key + " has " + o.Value.Length + " values, recur " + got.Length);
          for (int i = 0; i < o.Value.Length; ++i) worst = Math.Max(worst, Math.Abs(got[offset + i] - o.Value[i]));
        }
      }
    }
    return worst;
  }
}

}
