// SPDX-License-Identifier: Apache-2.0

//go:build !asan

package recur

// asanBuild says the package was built with -asan (native allocations are tracked).
const asanBuild = false

// nativeLeakCheck needs the AddressSanitizer runtime; without -asan it does not run.
func nativeLeakCheck() (ran, leaked bool) { return false, false }
