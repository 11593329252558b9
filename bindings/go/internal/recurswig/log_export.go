// SPDX-License-Identifier: Apache-2.0

package recurswig

// The log callback's way into Go: librecur calls recur_go_log_trampoline (recur_go.i), which
// calls recurGoLog with the handle of the Go function installed, on whatever thread logs. C holds
// only that integer handle, never a Go pointer.

// #include <stdint.h>
import "C"

import "runtime/cgo"

// LogHandler receives one log message: level is a recur_log_level, message one line of text.
type LogHandler func(level int, message string)

//export recurGoLog
func recurGoLog(handler C.uintptr_t, level C.int32_t, message *C.char) {
	// A panic must not unwind into librecur's C++ frames: the handler's panics are dropped.
	defer func() { _ = recover() }()
	if f, ok := cgo.Handle(handler).Value().(LogHandler); ok {
		f(int(level), C.GoString(message))
	}
}
