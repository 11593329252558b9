// SPDX-License-Identifier: Apache-2.0
package recur;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A small JSON reader for the fixture files: objects -> Map, arrays -> List, numbers -> Double. */
final class MiniJson {
  private final String s;
  private int i;

  private MiniJson(String s) {
    this.s = s;
  }

  static Object parse(String s) {
    MiniJson p = new MiniJson(s);
    Object v = p.value();
    p.ws();
    if (p.i != s.length()) throw new IllegalArgumentException("trailing data at " + p.i);
    return v;
  }

  /** Re-serializes a parsed value (for the "layer" objects handed to Layer.fromJson). */
  static String write(Object v) {
    StringBuilder b = new StringBuilder();
    write(v, b);
    return b.toString();
  }

  @SuppressWarnings("unchecked")
  private static void write(Object v, StringBuilder b) {
    if (v == null) b.append("null");
    else if (v instanceof String) {
      b.append('"');
      for (char c : ((String) v).toCharArray()) {
        if (c == '"' || c == '\\') b.append('\\').append(c);
        else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
        else b.append(c);
      }
      b.append('"');
    } else if (v instanceof Double) {
      double d = (Double) v;
      if (d == Math.rint(d) && Math.abs(d) < 1e15) b.append((long) d);
      else b.append(d);
    } else if (v instanceof Boolean) b.append(v);
    else if (v instanceof List) {
      b.append('[');
      boolean first = true;
      for (Object o : (List<Object>) v) {
        if (!first) b.append(',');
        first = false;
        write(o, b);
      }
      b.append(']');
    } else {
      b.append('{');
      boolean first = true;
      for (Map.Entry<String, Object> e : ((Map<String, Object>) v).entrySet()) {
        if (!first) b.append(',');
        first = false;
        write(e.getKey(), b);
        b.append(':');
        write(e.getValue(), b);
      }
      b.append('}');
    }
  }

  private void ws() {
    while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
  }

  private Object value() {
    ws();
    char c = s.charAt(i);
    if (c == '{') {
      i++;
      Map<String, Object> m = new LinkedHashMap<>();
      ws();
      if (s.charAt(i) == '}') { i++; return m; }
      for (;;) {
        ws();
        String k = string();
        ws();
        expect(':');
        m.put(k, value());
        ws();
        if (s.charAt(i) == ',') { i++; continue; }
        expect('}');
        return m;
      }
    }
    if (c == '[') {
      i++;
      List<Object> l = new ArrayList<>();
      ws();
      if (s.charAt(i) == ']') { i++; return l; }
      for (;;) {
        l.add(value());
        ws();
        if (s.charAt(i) == ',') { i++; continue; }
        expect(']');
        return l;
      }
    }
    if (c == '"') return string();
    if (s.startsWith("true", i)) { i += 4; return Boolean.TRUE; }
    if (s.startsWith("false", i)) { i += 5; return Boolean.FALSE; }
    if (s.startsWith("null", i)) { i += 4; return null; }
    int st = i;
    while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
    if (st == i) throw new IllegalArgumentException("unexpected '" + c + "' at " + i);
    return Double.parseDouble(s.substring(st, i)); // NaN/Infinity do not occur in the fixtures
  }

  private String string() {
    expect('"');
    StringBuilder b = new StringBuilder();
    for (;;) {
      char c = s.charAt(i++);
      if (c == '"') return b.toString();
      if (c == '\\') {
        char e = s.charAt(i++);
        switch (e) {
          case 'n': b.append('\n'); break;
          case 't': b.append('\t'); break;
          case 'r': b.append('\r'); break;
          case 'b': b.append('\b'); break;
          case 'f': b.append('\f'); break;
          case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
          default: b.append(e);
        }
      } else b.append(c);
    }
  }

  private void expect(char c) {
    if (s.charAt(i) != c) throw new IllegalArgumentException("expected '" + c + "' at " + i);
    i++;
  }
}
