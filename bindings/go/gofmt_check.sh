#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Fails when gofmt would change a Go file under the given folders: lists the files and the diff.
# Usage: gofmt_check.sh GOFMT DIR...   (GOFMT empty or missing: the check is skipped, exit 77)
gofmt=$1
shift
if [ -z "$gofmt" ] || [ ! -x "$gofmt" ]; then
  echo "skipped: gofmt not found (install the Go toolchain, Debian package golang-go, to run this check)"
  exit 77
fi
files=$("$gofmt" -l "$@") || exit 1
if [ -n "$files" ]; then
  echo "gofmt would reformat these files (run gofmt -w on them):"
  echo "$files"
  "$gofmt" -d "$@"
  exit 1
fi
echo "gofmt: every Go file under $* is formatted"
