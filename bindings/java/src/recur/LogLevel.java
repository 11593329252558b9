// SPDX-License-Identifier: Apache-2.0
package recur;

/** The levels of recur's log messages (recur_log_level), least severe first. */
public enum LogLevel {
  DEBUG(0), INFO(1), WARNING(2), ERROR(3);

  private final int code;

  LogLevel(int code) {
    this.code = code;
  }

  /** The recur_log_level value. */
  public int code() {
    return code;
  }

  static LogLevel of(int code) {
    for (LogLevel l : values())
      if (l.code == code) return l;
    return code < 0 ? DEBUG : ERROR;
  }
}
