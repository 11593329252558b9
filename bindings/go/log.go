// SPDX-License-Identifier: Apache-2.0

package recur

// The library's log (recur 0.6): what recur decided and why, delivered to a Go function.

import (
	"runtime/cgo"
	"strconv"
	"sync"

	"recur.dev/recur/internal/recurswig"
)

// LogLevel is the level of a log message (the C ABI's recur_log_level).
type LogLevel int

const (
	LogDebug   LogLevel = 0
	LogInfo    LogLevel = 1
	LogWarning LogLevel = 2 // fallbacks: "auto" that stays on the CPU, a GPU plugin that did not load
	LogError   LogLevel = 3
)

var logLevelNames = [...]string{"debug", "info", "warning", "error"}

// String is "debug", "info", "warning" or "error".
func (l LogLevel) String() string {
	if l >= 0 && int(l) < len(logLevelNames) {
		return logLevelNames[l]
	}
	return "LogLevel(" + strconv.Itoa(int(l)) + ")"
}

var (
	logMu      sync.Mutex
	logHandler cgo.Handle // of the function installed; 0 for none
)

// SetLogHandler installs handler as the process-wide receiver of recur's log: the CPU kernel set
// and why (once, on installing), each layer's and model's device and route and why, fallbacks, a
// summary of each model opened, limits set. Messages below minLevel are not built. nil turns the
// log off. handler may be called from any goroutine or library thread, several at once: it must
// be safe for that and return promptly. It must not call SetLogHandler (that deadlocks); other
// recur calls are fine. A panic in handler is recovered and dropped. When SetLogHandler returns,
// the previous handler is neither running nor called again. A minLevel that is not a LogLevel
// fails with ErrInvalidArgument and changes nothing.
func SetLogHandler(handler func(level LogLevel, message string), minLevel LogLevel) error {
	logMu.Lock()
	defer logMu.Unlock()
	var h cgo.Handle
	if handler != nil {
		h = cgo.NewHandle(recurswig.LogHandler(func(level int, message string) { handler(LogLevel(level), message) }))
	}
	if err := recurswig.Recur_go_set_log_handler(int64(h), int(clampInt32(int(minLevel)))); err != nil {
		if h != 0 {
			h.Delete()
		}
		return err
	}
	if logHandler != 0 {
		logHandler.Delete()
	}
	logHandler = h
	return nil
}
