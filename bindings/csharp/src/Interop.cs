// SPDX-License-Identifier: Apache-2.0
// Helpers the hand-written API shares around its native calls. Arrays themselves are pinned with
// `fixed` at each call (a pinning helper would need a delegate, which allocates on the streaming
// paths); what is written once here is the code around those calls.
using System;
using System.Runtime.InteropServices;

namespace Recur {

internal static class Interop {
  // The out-parameters of every recur_*_get_device call.
  internal delegate void DeviceQuery(out IntPtr requested, out IntPtr backend, out IntPtr path, out IntPtr reason,
                                     out IntPtr deviceName);

  internal static DeviceInfo Device(DeviceQuery query) {
    IntPtr requested, backend, path, reason, name;
    query(out requested, out backend, out path, out reason, out name);
    return DeviceInfo.From(requested, backend, path, reason, name);
  }

  // The allocating form of a call that writes into the caller's array: length floats, filled.
  internal static float[] Filled(long length, Action<float[]> fill) {
    var output = new float[length];
    fill(output);
    return output;
  }

  // Items 0..count-1 described by at (Inputs, Outputs, ...).
  internal static T[] Each<T>(int count, Func<int, T> at) {
    var items = new T[count];
    for (int i = 0; i < items.Length; ++i) items[i] = at(i);
    return items;
  }

  // Takes the native handle over from a temporary proxy SWIG made (a constructor then owns it): the
  // proxy is left empty and without a finalizer, so the handle is freed once, by its new owner.
  internal static IntPtr TakeOver(object proxy, ref HandleRef ptr, ref bool memOwn) {
    IntPtr p = ptr.Handle;
    memOwn = false;
    ptr = new HandleRef(null, IntPtr.Zero);
    GC.SuppressFinalize(proxy);
    return p;
  }
}

}
