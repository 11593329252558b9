// SPDX-License-Identifier: Apache-2.0

//go:build recur_no_pkgconfig

package recurswig

// Built with -tags recur_no_pkgconfig: no pkg-config; the include and library paths come from
// CGO_CFLAGS (-I<prefix>/include) and CGO_LDFLAGS (-L<libdir> -Wl,-rpath,<libdir>).

// #cgo LDFLAGS: -lrecur
import "C"
