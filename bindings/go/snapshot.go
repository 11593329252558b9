// SPDX-License-Identifier: Apache-2.0

package recur

import "recur.dev/recur/internal/recurswig"

// Save returns everything the stream carries to its next step (recurrent states, causal layers'
// past inputs) as versioned little-endian bytes (recur_model_state_save): Load of them into a new
// ModelState of the same model and batch goes on with bit-identical outputs.
func (s *ModelState) Save() ([]byte, error) {
	var out []byte
	err := s.locked(func(h recurswig.SwigcptrModelState) error {
		var n uint64
		if err := h.Save_size(&n); err != nil {
			return err
		}
		out = make([]byte, n)
		return h.Save(out, len(out), &n)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Load takes bytes from Save back (all or nothing: on an error the state is unchanged).
// ErrInvalidArgument for bytes that are not a snapshot (truncated, corrupt, another format
// version) or were saved at another batch; ErrState for another model's or model version's.
func (s *ModelState) Load(data []byte) error {
	return s.locked(func(h recurswig.SwigcptrModelState) error { return h.Load(data, len(data)) })
}
