// SPDX-License-Identifier: Apache-2.0
package recur;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Paths;
import java.util.EnumMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Resource limits: defaults, set and restore, bad arguments, and refusals as LimitException. */
class LimitTest {
  static final long MIB = 1L << 20, GIB = 1L << 30;
  static final Map<Limit, Long> DEFAULTS = new EnumMap<>(Limit.class);

  static {
    DEFAULTS.put(Limit.UNITS, 65536L);
    DEFAULTS.put(Limit.BATCH, 1048576L);
    DEFAULTS.put(Limit.STATE_BYTES, 256 * MIB);
    DEFAULTS.put(Limit.WEIGHT_BYTES, GIB);
    DEFAULTS.put(Limit.FILE_BYTES, 4 * GIB);
    DEFAULTS.put(Limit.TENSOR_BYTES, GIB);
    DEFAULTS.put(Limit.TOTAL_STATE_BYTES, 256 * MIB);
    DEFAULTS.put(Limit.RUN_BYTES, 512 * MIB);
    DEFAULTS.put(Limit.TIMESTEPS, 1048576L);
    DEFAULTS.put(Limit.INIT_WORK, 1L << 31);
    DEFAULTS.put(Limit.RUN_WORK, 1L << 38);
  }

  @Test
  void defaults() {
    assertEquals(11, Limit.values().length);
    for (Limit l : Limit.values()) {
      assertEquals(DEFAULTS.get(l).longValue(), Recur.defaultLimit(l), l.name());
      assertEquals(DEFAULTS.get(l).longValue(), Recur.getLimit(l), l.name());
      assertEquals(l.ordinal(), l.code(), "the enum follows recur_limit");
    }
  }

  @Test
  void setAndRestore() {
    for (Limit l : Limit.values()) {
      try {
        Recur.setLimit(l, 12345);
        assertEquals(12345, Recur.getLimit(l), l.name());
        assertEquals(DEFAULTS.get(l).longValue(), Recur.defaultLimit(l), "the default stays");
        Recur.setLimit(l, 8 * GIB);
        assertEquals(8 * GIB, Recur.getLimit(l), "above 32 bits");
      } finally {
        Recur.setLimit(l, 0);
      }
      assertEquals(DEFAULTS.get(l).longValue(), Recur.getLimit(l), "0 restores " + l.name());
    }
  }

  @Test
  void badArguments() {
    for (int bad : new int[] {-1, 11, 99}) {
      ErrorTest.raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "limit",
          () -> Recur.getLimitRaw(bad, new long[1]));
      ErrorTest.raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "limit",
          () -> Recur.defaultLimitRaw(bad, new long[1]));
      ErrorTest.raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "limit",
          () -> Recur.setLimitRaw(bad, 5));
    }
    assertThrows(NullPointerException.class, () -> Recur.getLimit(null));
    assertThrows(NullPointerException.class, () -> Recur.defaultLimit(null));
    assertThrows(NullPointerException.class, () -> Recur.setLimit(null, 5));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Recur.setLimit(Limit.UNITS, -1));
    assertTrue(e.getMessage().contains("-1"), e.getMessage());
    assertEquals(65536, Recur.getLimit(Limit.UNITS), "a refused call changes nothing");
  }

  @Test
  void unitsRefusal() {
    try (LayerOptions small = LayerOptions.of(Recur.LAYER_GRU, 8, 4);
         LayerOptions big = LayerOptions.of(Recur.LAYER_GRU, 16, 4)) {
      Recur.setLimit(Limit.UNITS, 8);
      try {
        LimitException e = ErrorTest.raises(LimitException.class, Recur.ERR_LIMIT, "units limit of 8",
            () -> Layer.create(big));
        assertTrue(e.getMessage().contains("16"), e.getMessage());
        try (Layer l = Layer.create(small)) {
          assertEquals(8, l.info().units, "a layer at the limit is made");
        }
      } finally {
        Recur.setLimit(Limit.UNITS, 0);
      }
      try (Layer l = Layer.create(big)) {
        assertEquals(16, l.info().units, "made again once the limit is restored");
      }
    }
  }

  @Test
  void batchAndModelRefusals() {
    try (LayerOptions o = LayerOptions.of(Recur.LAYER_LSTM, 4, 3); Layer l = Layer.create(o)) {
      Recur.setLimit(Limit.BATCH, 2);
      try {
        ErrorTest.raises(LimitException.class, Recur.ERR_LIMIT, "batch limit of 2", () -> new State(l, 3));
        try (State s = new State(l, 2)) {
          assertFalse(s.isClosed());
        }
      } finally {
        Recur.setLimit(Limit.BATCH, 0);
      }
    }
    String path = Paths.get(System.getProperty("recur.models", "examples/models"), "sentiment_keras3.keras").toString();
    Recur.setLimit(Limit.WEIGHT_BYTES, 1024);
    try {
      ErrorTest.raises(LimitException.class, Recur.ERR_LIMIT, "weight_bytes limit", () -> Model.open(path));
    } finally {
      Recur.setLimit(Limit.WEIGHT_BYTES, 0);
    }
    try (Model m = Model.open(path)) {
      assertTrue(m.info().runnable);
    }
  }

  @Test
  void limitExceptionIsARecurException() {
    assertTrue(RecurException.class.isAssignableFrom(LimitException.class));
    assertEquals(Recur.ERR_LIMIT, new LimitException(Recur.ERR_LIMIT, "m").status());
    assertEquals(-8, Recur.ERR_LIMIT);
  }
}
