// SPDX-License-Identifier: Apache-2.0

//go:build !recur_no_pkgconfig

package recurswig

// The C library as installed: recur.pc gives the include path, -lrecur and, for a prefix other
// than /usr, -Wl,-rpath,<libdir>, so that the program runs without LD_LIBRARY_PATH (set
// PKG_CONFIG_PATH when recur is installed under a prefix pkg-config does not search).

// #cgo pkg-config: recur
import "C"
