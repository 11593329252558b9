// SPDX-License-Identifier: Apache-2.0

//go:build asan

package recur

// With `go test -asan`, the native side (librecur and the SWIG glue) allocates through the
// AddressSanitizer runtime, but Go exits without running LeakSanitizer's check at exit: the tests
// ask for the check themselves once every handle is closed.

// int __lsan_do_recoverable_leak_check(void);
import "C"

// asanBuild says the package was built with -asan (native allocations are tracked).
const asanBuild = true

// nativeLeakCheck runs LeakSanitizer over the process and reports whether it found leaks (it
// prints them to stderr).
func nativeLeakCheck() (ran, leaked bool) {
	return true, C.__lsan_do_recoverable_leak_check() != 0
}
