#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every source, build and script file of the project names its licence in an SPDX line near its
# top. The quick-start programs are left out: the README quotes them whole, for users to copy.
set -euo pipefail
cd "$(dirname "$0")/../.."
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files)
else
  mapfile -t files < <(find . -type f -not -path './build*' -not -path './.git/*' | sed 's|^\./||')
fi
missing=()
checked=0
for f in "${files[@]}"; do
  case "$f" in
    examples/quickstart/*|tests/fuzz/corpus/*|tests/fuzz/regressions/*|*/fixtures/*) continue ;;
  esac
  case "$f" in
    *.c|*.h|*.cpp|*.hpp|*.cu|*.cuh|*.java|*.cs|*.go|*.i|*.sh|*.py|*.cmake|*CMakeLists.txt|.ci/run) ;;
    *) continue ;;
  esac
  [[ -f "$f" ]] || continue
  checked=$((checked + 1))
  head -n 3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' || missing+=("$f")
done
if ((${#missing[@]})); then
  printf 'no "SPDX-License-Identifier: Apache-2.0" in the first 3 lines of:\n' >&2
  printf '  %s\n' "${missing[@]}" >&2
  echo "Add the line as the first line (after a #! line), in the file's comment syntax." >&2
  exit 1
fi
echo "SPDX headers: $checked files checked, all carry the Apache-2.0 line"
