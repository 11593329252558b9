#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# README.md quotes the quick-start programs: every fenced code block that follows a line
# `<!-- snippet: examples/quickstart/<path> -->` must be that file, byte for byte. Prints a diff
# and fails when one differs or names a file that does not exist; passes when there are none.
#
# Usage: tests/packaging/check_readme_snippets.sh [README]
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
readme=${1:-$src/README.md}
work=$(mktemp -d "${TMPDIR:-/tmp}/recur-snippets.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Writes each quoted block to $work/<n>.block and lists "<n> <path> <line>".
awk -v out="$work" '
  /^<!-- snippet: [^ ]+ -->$/ { path = $3; at = NR; open = 0; next }
  path != "" && !open && /^```/ { open = 1; n++; file = out "/" n ".block"; printf "" > file; next }
  path != "" && !open && NF > 0 { printf "%d %s %d none\n", 0, path, at; path = ""; next }
  open && /^```$/ { close(file); printf "%d %s %d\n", n, path, at; path = ""; open = 0; next }
  open { print > file }
' "$readme" >"$work/list"
checked=0 failed=0
while read -r n path at rest; do
  if [[ $path != examples/quickstart/* ]]; then
    echo "FAILED: $readme:$at: a snippet marker names $path, not a file under examples/quickstart/" >&2
    failed=$((failed + 1)); continue
  fi
  if [[ $n == 0 ]]; then
    echo "FAILED: $readme:$at: the snippet marker for $path is not followed by a fenced code block" >&2
    failed=$((failed + 1)); continue
  fi
  if [[ ! -f $src/$path ]]; then
    echo "FAILED: $readme:$at: $path does not exist" >&2; failed=$((failed + 1)); continue
  fi
  if ! diff -u --label "$path" --label "README.md:$at" "$src/$path" "$work/$n.block"; then
    echo "FAILED: $readme:$at: the block quoting $path differs from the file (diff above); copy the file into README.md" >&2
    failed=$((failed + 1)); continue
  fi
  checked=$((checked + 1))
done <"$work/list"
echo "README snippets: $checked passed, $failed failed"
[[ $failed -eq 0 ]]
