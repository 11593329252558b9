// SPDX-License-Identifier: Apache-2.0
// Public API of LayerOptions (the SWIG proxy of recur_layer_options, with its own string storage).
using System;

namespace Recur {

/// <summary>Constructor arguments of a Keras recurrent layer (recur_layer_options), initialised
/// with recur's defaults. Int flags take 0/1 or <see cref="Library.Default"/>.</summary>
public sealed partial class LayerOptions {
  string activation, recurrentActivation, kernelInitializer, recurrentInitializer, biasInitializer,
         kernelRegularizer, recurrentRegularizer, biasRegularizer, activityRegularizer, kernelConstraint,
         recurrentConstraint, biasConstraint, kerasVersion, name;

  /// <summary>Options for a layer of the given type, units and input size.</summary>
  public LayerOptions(int type, int units, int inputSize) : this() {
    Type = type; Units = units; InputSize = inputSize;
  }

  internal void CheckDisposed() {
    if (Util.Disposed(swigCPtr)) throw new ObjectDisposedException("Recur.LayerOptions");
  }

  internal System.Runtime.InteropServices.HandleRef Handle {
    get { CheckDisposed(); return swigCPtr; }
  }

  public int Type { get { CheckDisposed(); return type; } set { CheckDisposed(); type = value; } }
  public int Dialect { get { CheckDisposed(); return dialect; } set { CheckDisposed(); dialect = value; } }
  public int Units { get { CheckDisposed(); return units; } set { CheckDisposed(); units = value; } }
  public int InputSize { get { CheckDisposed(); return input_size; } set { CheckDisposed(); input_size = value; } }
  public int UseBias { get { CheckDisposed(); return use_bias; } set { CheckDisposed(); use_bias = value; } }
  public int ResetAfter { get { CheckDisposed(); return reset_after; } set { CheckDisposed(); reset_after = value; } }
  public int Implementation { get { CheckDisposed(); return implementation; } set { CheckDisposed(); implementation = value; } }
  public int UnitForgetBias { get { CheckDisposed(); return unit_forget_bias; } set { CheckDisposed(); unit_forget_bias = value; } }
  public float Dropout { get { CheckDisposed(); return dropout; } set { CheckDisposed(); dropout = value; } }
  public float RecurrentDropout { get { CheckDisposed(); return recurrent_dropout; } set { CheckDisposed(); recurrent_dropout = value; } }
  public int ReturnSequences { get { CheckDisposed(); return return_sequences; } set { CheckDisposed(); return_sequences = value; } }
  public int ReturnState { get { CheckDisposed(); return return_state; } set { CheckDisposed(); return_state = value; } }
  public int GoBackwards { get { CheckDisposed(); return go_backwards; } set { CheckDisposed(); go_backwards = value; } }
  public int Stateful { get { CheckDisposed(); return stateful; } set { CheckDisposed(); stateful = value; } }
  public int TimeMajor { get { CheckDisposed(); return time_major; } set { CheckDisposed(); time_major = value; } }
  public int Unroll { get { CheckDisposed(); return unroll; } set { CheckDisposed(); unroll = value; } }
  public int ZeroOutputForMask { get { CheckDisposed(); return zero_output_for_mask; } set { CheckDisposed(); zero_output_for_mask = value; } }
  public int BatchSize { get { CheckDisposed(); return batch_size; } set { CheckDisposed(); batch_size = value; } }
  /// <summary>&gt;= 0 seeds initializers and dropout masks; -1 = random.</summary>
  public long Seed { get { CheckDisposed(); return seed; } set { CheckDisposed(); seed = value; } }
  public int Trainable { get { CheckDisposed(); return trainable; } set { CheckDisposed(); trainable = value; } }

  // String options: null = the Keras default. Initializers, regularizers and constraints take a
  // Keras name ("glorot_uniform", "l2", "max_norm") or Keras JSON.
  public string Activation { get { CheckDisposed(); return activation; } set { CheckDisposed(); set_activation(value); activation = value; } }
  public string RecurrentActivation { get { CheckDisposed(); return recurrentActivation; } set { CheckDisposed(); set_recurrent_activation(value); recurrentActivation = value; } }
  public string KernelInitializer { get { CheckDisposed(); return kernelInitializer; } set { CheckDisposed(); set_kernel_initializer(value); kernelInitializer = value; } }
  public string RecurrentInitializer { get { CheckDisposed(); return recurrentInitializer; } set { CheckDisposed(); set_recurrent_initializer(value); recurrentInitializer = value; } }
  public string BiasInitializer { get { CheckDisposed(); return biasInitializer; } set { CheckDisposed(); set_bias_initializer(value); biasInitializer = value; } }
  public string KernelRegularizer { get { CheckDisposed(); return kernelRegularizer; } set { CheckDisposed(); set_kernel_regularizer(value); kernelRegularizer = value; } }
  public string RecurrentRegularizer { get { CheckDisposed(); return recurrentRegularizer; } set { CheckDisposed(); set_recurrent_regularizer(value); recurrentRegularizer = value; } }
  public string BiasRegularizer { get { CheckDisposed(); return biasRegularizer; } set { CheckDisposed(); set_bias_regularizer(value); biasRegularizer = value; } }
  public string ActivityRegularizer { get { CheckDisposed(); return activityRegularizer; } set { CheckDisposed(); set_activity_regularizer(value); activityRegularizer = value; } }
  public string KernelConstraint { get { CheckDisposed(); return kernelConstraint; } set { CheckDisposed(); set_kernel_constraint(value); kernelConstraint = value; } }
  public string RecurrentConstraint { get { CheckDisposed(); return recurrentConstraint; } set { CheckDisposed(); set_recurrent_constraint(value); recurrentConstraint = value; } }
  public string BiasConstraint { get { CheckDisposed(); return biasConstraint; } set { CheckDisposed(); set_bias_constraint(value); biasConstraint = value; } }
  /// <summary>e.g. "2.15.0" or "3.13.0"; null = the newest of the dialect.</summary>
  public string KerasVersion { get { CheckDisposed(); return kerasVersion; } set { CheckDisposed(); set_keras_version(value); kerasVersion = value; } }
  /// <summary>Layer name used in messages.</summary>
  public string Name { get { CheckDisposed(); return name; } set { CheckDisposed(); set_name(value); name = value; } }
}

}
