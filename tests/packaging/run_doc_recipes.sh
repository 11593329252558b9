#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the tested recipes of docs/install.md: every ```sh block that follows a line
# `<!-- tested: NAME -->`, exactly as written, each in a fresh scratch folder that holds the
# quick-start program of its language (examples/quickstart/<lang>/) and the bundled model
# sentiment_keras3.keras, with PREFIX naming the installed tree (and FEED a folder holding the
# .nupkg, for the NuGet recipe, and DIST one holding the Python wheel, for the Python recipe). Each recipe must print the line "P0 P1", the program's two
# probabilities, within 1e-5 of Keras's prediction for that sample
# (examples/models/sentiment_keras3_keras.txt, first row).
#
# Fails when a recipe fails, prints no such line or a wrong one, or when one of the recipes below
# is missing from the page; a recipe whose toolchain is not installed is skipped, saying so.
#
# Usage: tests/packaging/run_doc_recipes.sh PREFIX [DOC]      (env: FEED, DIST, WORK)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
prefix=$(cd "${1:?usage: run_doc_recipes.sh PREFIX [DOC]}" && pwd)
doc=${2:-$src/docs/install.md}
required=(c-pkg-config c-dlopen cpp-find-package cpp-pkg-config java maven csharp nuget go python)
work=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/recur-doc-recipes.XXXXXX")}
mkdir -p "$work"
read -r want0 want1 < "$src/examples/models/sentiment_keras3_keras.txt"

# NAME<TAB>first line<TAB>last line of each marked block, from the page.
blocks=$(awk '
  /^<!-- tested: [a-z0-9-]+ -->$/ { name = $3; start = 0; next }
  name != "" && start == 0 && /^```sh$/ { start = NR + 1; next }
  name != "" && start == 0 && NF > 0 { printf "%s\t0\t0\n", name; name = ""; next }
  name != "" && start > 0 && /^```$/ { printf "%s\t%d\t%d\n", name, start, NR - 1; name = ""; next }
' "$doc")

lang_of() {
  case $1 in
    c-*) echo c ;; cpp-*) echo cpp ;; java | maven) echo java ;; csharp | nuget) echo csharp ;; *) echo "$1" ;;
  esac
}
# Prints why a recipe cannot run here, or nothing.
missing_tool() {
  local t
  case $1 in
    c-*) for t in cc; do command -v $t >/dev/null || echo "no $t"; done ;;
    cpp-find-package) for t in c++ cmake; do command -v $t >/dev/null || echo "no $t"; done ;;
    cpp-*) command -v c++ >/dev/null || echo "no c++" ;;
    java) command -v javac >/dev/null || echo "no javac"; [[ -f $prefix/share/java/recur.jar ]] || echo "no recur.jar installed" ;;
    maven)
      command -v mvn >/dev/null || echo "no mvn (Debian: apt-get install maven)"
      [[ -d /usr/share/maven-repo/org/apache/maven/plugins/maven-compiler-plugin/3.10.1 ]] ||
        echo "no Debian Maven plugins (apt-get install libmaven-compiler-plugin-java libmaven-resources-plugin-java)"
      [[ -d $prefix/share/maven-repo/dev/recur ]] || echo "no Maven layout installed" ;;
    csharp) for t in mcs mono; do command -v $t >/dev/null || echo "no $t"; done
      [[ -f $prefix/lib/cli/recur/Recur.dll ]] || echo "no Recur.dll installed" ;;
    nuget) for t in nuget mcs mono; do command -v $t >/dev/null || echo "no $t"; done
      [[ -n ${FEED:-} ]] || echo "FEED (a folder holding the .nupkg) not set" ;;
    go) command -v go >/dev/null || echo "no go"; [[ -f $prefix/share/recur/go/recur/go.mod ]] || echo "no Go module installed" ;;
    python) command -v python3 >/dev/null || echo "no python3"
      python3 -c 'import ensurepip, venv' 2>/dev/null || echo "no venv module (Debian: apt-get install python3-venv)"
      compgen -G "${DIST:-/nonexistent}/recur-*.whl" >/dev/null || echo "DIST (a folder holding the recur wheel) not set" ;;
  esac
}

failed=0 ran=0 skipped=0
for name in "${required[@]}"; do
  line=$(awk -F'\t' -v n="$name" '$1 == n' <<<"$blocks")
  if [[ -z $line ]]; then
    echo "FAILED: $doc has no '<!-- tested: $name -->' recipe" >&2; failed=$((failed + 1)); continue
  fi
  if [[ $(wc -l <<<"$line") -ne 1 ]]; then
    echo "FAILED: $doc has more than one '<!-- tested: $name -->' recipe" >&2; failed=$((failed + 1)); continue
  fi
  IFS=$'\t' read -r _ first last <<<"$line"
  if [[ $first == 0 ]]; then
    echo "FAILED: '<!-- tested: $name -->' in $doc is not followed by a \`\`\`sh block" >&2; failed=$((failed + 1)); continue
  fi
  why=$(missing_tool "$name" | paste -sd ';' -)
  if [[ -n $why ]]; then
    echo "  recipe $name: skipped ($why)"; skipped=$((skipped + 1)); continue
  fi
  dir=$work/$name
  rm -rf "$dir" && mkdir -p "$dir"
  cp -R "$src/examples/quickstart/$(lang_of "$name")/." "$dir/"
  cp "$src/examples/models/sentiment_keras3.keras" "$dir/"
  sed -n "${first},${last}p" "$doc" >"$dir/recipe.sh"
  if ! out=$(cd "$dir" && env -u LD_LIBRARY_PATH -u PKG_CONFIG_PATH -u CMAKE_PREFIX_PATH -u PYTHONPATH PREFIX="$prefix" \
             bash -euo pipefail recipe.sh 2>&1); then
    printf '%s\n' "$out" | sed 's/^/    /'
    echo "FAILED: recipe $name (lines $first-$last of $doc) exited non-zero" >&2; failed=$((failed + 1)); continue
  fi
  # Maven colours its output even with -q: the escapes are dropped before reading the line.
  got=$(sed 's/\x1b\[[0-9;]*m//g' <<<"$out" | grep -E '^[0-9.eE+-]+ [0-9.eE+-]+$' | tail -n 1 || true)
  if [[ -z $got ]] || ! awk -v g="$got" -v a="$want0" -v b="$want1" 'BEGIN {
        split(g, f, " "); d0 = f[1] - a; d1 = f[2] - b; if (d0 < 0) d0 = -d0; if (d1 < 0) d1 = -d1
        exit !(d0 <= 1e-5 && d1 <= 1e-5) }'; then
    printf '%s\n' "$out" | sed 's/^/    /'
    echo "FAILED: recipe $name printed '${got:-no line of two probabilities}', Keras: $want0 $want1 (1e-5)" >&2
    failed=$((failed + 1)); continue
  fi
  echo "  recipe $name: $got (Keras $want0 $want1)"
  ran=$((ran + 1))
done
echo "doc recipes: $ran passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
