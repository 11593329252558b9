// SPDX-License-Identifier: Apache-2.0
package recur;

/** Where a layer, state or model runs, by which route, and why (recur_device_info). */
public final class DeviceInfo {
  /** "cpu", "cuda:N" or "auto", as last set ("cpu" by default). */
  public final String requested;
  /** Where calls run now: "cpu" or "cuda:N". */
  public final String backend;
  /** "cpu", "cudnn" or "kernel" (a state: "cpu" or "device-resident"). */
  public final String path;
  /** Why this backend and path, e.g. why "auto" stayed on the CPU. */
  public final String reason;
  /** The GPU's name and cuDNN version, or "" on the CPU. */
  public final String deviceName;

  DeviceInfo(String requested, String backend, String path, String reason, String deviceName) {
    this.requested = requested;
    this.backend = backend;
    this.path = path;
    this.reason = reason;
    this.deviceName = deviceName;
  }

  /** A raw get_device call, which fills one-element arrays. */
  interface Query {
    void run(String[] requested, String[] backend, String[] path, String[] reason, String[] deviceName);
  }

  static DeviceInfo query(Query q) {
    String[] requested = new String[1], backend = new String[1], path = new String[1], reason = new String[1],
             deviceName = new String[1];
    q.run(requested, backend, path, reason, deviceName);
    return new DeviceInfo(requested[0], backend[0], path[0], reason[0], deviceName[0]);
  }

  @Override
  public String toString() {
    return backend + " (" + path + (deviceName.isEmpty() ? "" : ", " + deviceName) + "): " + reason;
  }
}
