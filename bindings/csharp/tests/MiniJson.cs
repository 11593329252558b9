// SPDX-License-Identifier: Apache-2.0
// A small JSON reader for the Keras graph fixtures (tests/keras/graphs/*.json): objects become
// Dictionary<string, object>, arrays List<object>, numbers double, true/false bool, null null.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace RecurTests {

sealed class MiniJson {
  readonly string s;
  int i;

  MiniJson(string s) { this.s = s; }

  public static object Parse(string text) {
    var p = new MiniJson(text);
    var v = p.Value();
    p.Ws();
    if (p.i != text.Length) throw new FormatException("trailing data at " + p.i);
    return v;
  }

  void Ws() {
    while (i < s.Length && char.IsWhiteSpace(s[i])) i++;
  }

  void Expect(char c) {
    if (s[i] != c) throw new FormatException("expected '" + c + "' at " + i);
    i++;
  }

  object Value() {
    Ws();
    char c = s[i];
    if (c == '{') {
      i++;
      var m = new Dictionary<string, object>();
      Ws();
      if (s[i] == '}') { i++; return m; }
      for (;;) {
        Ws();
        string k = Str();
        Ws();
        Expect(':');
        m[k] = Value();
        Ws();
        if (s[i] == ',') { i++; continue; }
        Expect('}');
        return m;
      }
    }
    if (c == '[') {
      i++;
      var l = new List<object>();
      Ws();
      if (s[i] == ']') { i++; return l; }
      for (;;) {
        l.Add(Value());
        Ws();
        if (s[i] == ',') { i++; continue; }
        Expect(']');
        return l;
      }
    }
    if (c == '"') return Str();
    if (string.CompareOrdinal(s, i, "true", 0, 4) == 0) { i += 4; return true; }
    if (string.CompareOrdinal(s, i, "false", 0, 5) == 0) { i += 5; return false; }
    if (string.CompareOrdinal(s, i, "null", 0, 4) == 0) { i += 4; return null; }
    int st = i;
    while (i < s.Length && "+-0123456789.eE".IndexOf(s[i]) >= 0) i++;
    if (st == i) throw new FormatException("unexpected '" + c + "' at " + i);
    return double.Parse(s.Substring(st, i - st), NumberStyles.Float, CultureInfo.InvariantCulture);
  }

  string Str() {
    Expect('"');
    var b = new StringBuilder();
    for (;;) {
      char c = s[i++];
      if (c == '"') return b.ToString();
      if (c != '\\') { b.Append(c); continue; }
      char e = s[i++];
      switch (e) {
        case 'n': b.Append('\n'); break;
        case 't': b.Append('\t'); break;
        case 'r': b.Append('\r'); break;
        case 'b': b.Append('\b'); break;
        case 'f': b.Append('\f'); break;
        case 'u': b.Append((char)int.Parse(s.Substring(i, 4), NumberStyles.HexNumber)); i += 4; break;
        default: b.Append(e); break;
      }
    }
  }
}

}
