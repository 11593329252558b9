// SPDX-License-Identifier: Apache-2.0
package recur.flink;

import java.io.Serializable;

/**
 * Turns the model's outputs for one event (every output of one row and one step, concatenated in
 * the model's output order) into the record the operator emits; null emits nothing.
 */
@FunctionalInterface
public interface OutputMapper<K, IN, OUT> extends Serializable {
  OUT toOutput(K key, IN event, float[] outputs) throws Exception;
}
