// SPDX-License-Identifier: Apache-2.0
package recur.flink;

import java.io.Serializable;

/**
 * Turns an event into one timestep of the model's inputs: every input's floats for one row and
 * one step, concatenated in the model's input order ({@code ModelState.inputsLength(1)} floats).
 */
@FunctionalInterface
public interface InputMapper<IN> extends Serializable {
  float[] toInputs(IN event) throws Exception;
}
