#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Packaging tests on an already built folder (default: build), run by scripts/test.sh after the
# Release suite; nothing is compiled again but the consumers.
#
# 1. Install and consume: `cmake --install` into a scratch prefix, then move the whole tree
#    elsewhere (recur.pc and the CMake package must follow it), and build and run consumers
#    against it as integrators would: find_package(recur) (C++ example, embedded-model example),
#    pkg-config (the same two, by hand), the jar (javac + java from share/java; a Maven build
#    that depends on dev.recur:recur from the installed Maven layout), the C# assembly (mcs +
#    mono), the NuGet package (nuget install from a local folder, then mcs + mono), and the Go
#    module (go build through `#cgo pkg-config: recur`), and the Python wheel (built from the
#    build folder, installed into a venv by docs/install.md's recipe).
#    Every consumer runs the bundled model on its sample inputs and exits non-zero when it
#    differs from Keras's predictions (examples/models/sentiment_keras3_keras.txt) by over 1e-5.
#    Then the recipes of docs/install.md, exactly as written (tests/packaging/run_doc_recipes.sh),
#    a C# program whose librecur.so.0 is missing (its error must name it), and the README's quotes
#    of the quick-start programs (tests/packaging/check_readme_snippets.sh).
# 2. The .deb packages: cpack builds them, lintian checks them (errors and warnings fail, but for
#    the tags tests/packaging/lintian-overrides accepts), then they are installed for real with
#    dpkg -i, used (recur verify against Keras's .npy, the C++ example through pkg-config, Java,
#    C#, and docs/install.md's recipes with PREFIX=/usr), and purged with dpkg --purge. A real install rather than `dpkg -x` into a folder: it is the only
#    way to check what a user gets, i.e. that the Depends between the packages and on Debian's
#    are satisfiable, that files land where the loader, pkg-config, java.library.path and mono
#    look without any environment, and that the packages remove cleanly. It changes the system,
#    so it runs only as root (CI runs as root on a throwaway machine), and not when a recur
#    package is already installed (it would replace and then remove someone's install).
#
# Usage: scripts/package-test.sh [BUILD_DIR]     RECUR_SKIP_DEB=1 skips part 2.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=$(cd "${1:-build}" && pwd)
models=$src/examples/models
work=$(mktemp -d "${TMPDIR:-/tmp}/recur-package-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$SECONDS
step() { printf '\n== %s (%ds)\n' "$*" $((SECONDS - start)); }
# Runs a consumer and requires its "example finished" line (printed only after the Keras check).
expect_finished() {
  local out
  out=$("$@" 2>&1) || { printf '%s\n' "$out"; echo "FAILED: $*" >&2; return 1; }
  printf '%s\n' "$out" | grep -E "max abs difference|example finished" | sed 's/^/    /'
  grep -q "example finished" <<<"$out" || { printf '%s\n' "$out"; echo "FAILED (no 'example finished'): $*" >&2; return 1; }
}
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
# GNUInstallDirs caches an empty DATADIR (it means DATAROOTDIR, "share" unless set).
libdir_rel=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
datadir_rel=$(sed -n 's/^CMAKE_INSTALL_DATADIR:PATH=//p' "$build/CMakeCache.txt")
datadir_rel=${datadir_rel:-$(sed -n 's/^CMAKE_INSTALL_DATAROOTDIR:PATH=//p' "$build/CMakeCache.txt")}
datadir_rel=${datadir_rel:-share}
have() { [[ -e "$1" ]]; }

# ---------------------------------------------------------------------------------------------
step "install into a scratch prefix, then move it"
cmake --install "$build" --prefix "$work/staged" >"$work/install.log"
mkdir -p "$work/moved"
mv "$work/staged" "$work/moved/prefix"
prefix=$work/moved/prefix
libdir=$prefix/$libdir_rel
( cd "$prefix" && find . -type f -o -type l | sort | sed 's/^\.\//    /' )

step "pkg-config follows the moved tree"
export PKG_CONFIG_PATH=$libdir/pkgconfig
pc_inc=$(pkg-config --variable=includedir recur)
pc_libs=$(pkg-config --libs recur)
echo "    includedir=$pc_inc  libs: $pc_libs"
[[ -f $pc_inc/recur/recur.h ]] || { echo "FAILED: recur.pc's includedir $pc_inc has no recur/recur.h" >&2; exit 1; }
[[ $(pkg-config --modversion recur) == "$version" ]] || { echo "FAILED: recur.pc version" >&2; exit 1; }
case "$(pkg-config --cflags recur)" in *"$work/moved/prefix"*) ;; *)
  echo "FAILED: pkg-config --cflags does not name the moved prefix: $(pkg-config --cflags recur)" >&2; exit 1;; esac
# Programs linked with these flags run without LD_LIBRARY_PATH: Libs carries the libdir's rpath.
case "$pc_libs" in *"-Wl,-rpath,$work/moved/prefix"*) ;; *)
  echo "FAILED: pkg-config --libs has no -Wl,-rpath to the moved libdir: $pc_libs" >&2; exit 1;; esac

step "the CLI runs from the moved tree (RUNPATH \$ORIGIN/../<libdir>)"
env -u LD_LIBRARY_PATH "$prefix/bin/recur" verify "$models/sentiment_keras3.keras" -i "$models/sentiment_inputs.npy" \
  --expected "$models/sentiment_keras3_keras.npy" | tail -n 3 | sed 's/^/    /'

step "find_package(recur): C++ example and embedded-model example"
cmake -S "$src/tests/packaging/cmake_consumer" -B "$work/cmake-consumer" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DRECUR_EXAMPLES="$src/examples" >"$work/consumer-configure.log" \
  || { cat "$work/consumer-configure.log"; exit 1; }
grep "recur $version from" "$work/consumer-configure.log" | sed 's/^-- /    /'
cmake --build "$work/cmake-consumer" -j"$(nproc)" >"$work/consumer-build.log" || { cat "$work/consumer-build.log"; exit 1; }
expect_finished "$work/cmake-consumer/consumer_cpp" "$models" cpu
(cd "$work" && expect_finished "$work/cmake-consumer/consumer_embed" "$models")

step "pkg-config: the same two by hand, and the dlopen C example on the installed library"
mkdir -p "$work/pc"
cmake -DINPUT="$models/sentiment_keras3.keras" -DOUTPUT="$work/pc/model_data.c" -DNAME=recur_model_data \
  -P "$src/cmake/EmbedFile.cmake"
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
cc -std=c99 -O2 -Wall -o "$work/pc/embed" "$src/examples/embed/main.c" "$work/pc/model_data.c" \
  $(pkg-config --cflags --libs recur) -lm
# shellcheck disable=SC2046
c++ -std=c++17 -O2 -o "$work/pc/cpp" "$src/examples/cpp/main.cpp" $(pkg-config --cflags --libs recur)
# shellcheck disable=SC2046
cc -std=c99 -O2 -o "$work/pc/dlopen" "$src/examples/c/main.c" $(pkg-config --cflags recur) -ldl -lm
expect_finished env -u LD_LIBRARY_PATH "$work/pc/embed" "$models"
expect_finished env -u LD_LIBRARY_PATH "$work/pc/cpp" "$models" cpu
expect_finished "$work/pc/dlopen" "$libdir/librecur.so.0" "$models"

jar=$prefix/$datadir_rel/java/recur.jar
if have "$jar" && command -v javac >/dev/null; then
  step "Java: javac + java against share/java/recur.jar and the installed JNI library"
  mkdir -p "$work/java"
  javac -d "$work/java" -cp "$jar" "$src/examples/java/SentimentExample.java"
  # recur.library names the JNI library to load: the installed one in <libdir>/jni, which finds
  # librecur.so.0 through its RUNPATH $ORIGIN/.. (without it the jar falls back to its own copies).
  expect_finished env -u LD_LIBRARY_PATH java -Drecur.library="$libdir/jni/librecur_java.so" \
    -cp "$work/java:$jar" SentimentExample "$models"

  # Without recur.library nor java.library.path: a copy of the jar without its native libraries,
  # beside the installed one, can only load <libdir>/jni/librecur_java.so, found from its location.
  mkdir -p "$work/java-strip" && (cd "$work/java-strip" && jar xf "$jar" && rm -rf native/linux-x86-64 && jar cf "$prefix/$datadir_rel/java/recur-no-native.jar" recur native)
  expect_finished env -u LD_LIBRARY_PATH java -cp "$work/java:$prefix/$datadir_rel/java/recur-no-native.jar" SentimentExample "$models"
  rm "$prefix/$datadir_rel/java/recur-no-native.jar"
  listing=$(jar tf "$jar")
  for want in META-INF/LICENSE META-INF/THIRD_PARTY; do
    grep -qx "$want" <<<"$listing" || { echo "FAILED: recur.jar lacks $want" >&2; exit 1; }
  done

  step "Maven layout: share/maven-repo/dev/recur/recur/$version"
  mvn_dir=$prefix/$datadir_rel/maven-repo/dev/recur/recur/$version
  pom=$mvn_dir/recur-$version.pom
  for want in "<groupId>dev.recur</groupId>" "<artifactId>recur</artifactId>" "<version>$version</version>" \
              "<name>Apache-2.0</name>"; do
    grep -q "$want" "$pom" || { echo "FAILED: $pom lacks $want" >&2; exit 1; }
  done
  # A Maven build that depends on dev.recur:recur, resolved from the installed repository, with
  # Debian's packaged Maven plugins (tests/packaging/maven_consumer); Maven then runs nothing
  # else, so the example runs with java on the class path Maven resolved.
  if command -v mvn >/dev/null && [[ -d /usr/share/maven-repo/org/apache/maven/plugins/maven-compiler-plugin ]]; then
    mkdir -p "$work/maven"
    cp "$src/tests/packaging/maven_consumer/pom.xml" "$src/tests/packaging/maven_consumer/settings.xml" "$work/maven/"
    mvn -o -B -f "$work/maven/pom.xml" -s "$work/maven/settings.xml" -Daether.offline.protocols=file \
      -Dmaven.repo.local="$work/m2" -Drecur.repo="file://$prefix/$datadir_rel/maven-repo" -Drecur.version="$version" \
      -Drecur.sources="$src/examples/java" compile >"$work/mvn.log" 2>&1 || { cat "$work/mvn.log"; exit 1; }
    if grep -q "The POM for dev.recur:recur.* is invalid" "$work/mvn.log"; then
      grep "The POM for" "$work/mvn.log"; echo "FAILED: Maven finds the installed pom invalid" >&2; exit 1
    fi
    resolved=$work/m2/dev/recur/recur/$version/recur-$version.jar
    echo "    mvn -o compile: resolved $(basename "$resolved") from the installed repository"
    expect_finished env -u LD_LIBRARY_PATH java -cp "$work/maven/target/classes:$resolved" SentimentExample "$models"
  else
    # Without Maven: the artifact as a plain jar on the class path, from its Maven path.
    echo "    mvn or Debian's Maven plugins not found: no Maven build, javac + java on the jar's Maven" \
         "path instead (Debian: apt-get install maven libmaven-compiler-plugin-java libmaven-resources-plugin-java)"
    rm -rf "$work/java" && mkdir -p "$work/java"
    javac -d "$work/java" -cp "$mvn_dir/recur-$version.jar" "$src/examples/java/SentimentExample.java"
    expect_finished env -u LD_LIBRARY_PATH java -cp "$work/java:$mvn_dir/recur-$version.jar" SentimentExample "$models"
  fi
else
  step "Java: skipped (no jar installed or no javac: the build found no JDK)"
fi

cs_dir=$prefix/lib/cli/recur
if have "$cs_dir/Recur.dll" && command -v mcs >/dev/null && command -v mono >/dev/null; then
  step "C#: mcs + mono against lib/cli/recur/Recur.dll"
  mkdir -p "$work/cs"
  mcs -nologo -out:"$work/cs/RecurExample.exe" -r:"$cs_dir/Recur.dll" "$src/examples/csharp/Program.cs"
  # MONO_PATH finds Recur.dll; its NativeLoader loads librecur_csharp.so from the assembly's folder.
  expect_finished env -u LD_LIBRARY_PATH MONO_PATH="$cs_dir" mono "$work/cs/RecurExample.exe" "$models"
  echo 'class V { static void Main(string[] a) { System.Console.WriteLine(System.Reflection.AssemblyName.GetAssemblyName(a[0]).Version); } }' \
    >"$work/cs/version.cs"
  mcs -nologo -out:"$work/cs/version.exe" "$work/cs/version.cs"
  assembly_version=$(mono "$work/cs/version.exe" "$cs_dir/Recur.dll")
  [[ $assembly_version == "$version.0" ]] || { echo "FAILED: Recur.dll's AssemblyVersion is $assembly_version, not $version.0" >&2; exit 1; }
  echo "    Recur.dll: AssemblyVersion $assembly_version"

  step "C#: an application folder without librecur.so.0 gets an error that names it"
  mkdir -p "$work/cs-missing"
  cp "$cs_dir/Recur.dll" "$cs_dir/librecur_csharp.so" "$work/cs/RecurExample.exe" "$work/cs-missing/"
  if out=$(env -u LD_LIBRARY_PATH -u RECUR_LIBRARY_PATH mono "$work/cs-missing/RecurExample.exe" "$models" 2>&1); then
    printf '%s\n' "$out"; echo "FAILED: the example ran without librecur.so.0" >&2; exit 1
  fi
  for want in "RecurNativeLoadException" "librecur.so.0 was not found" "Searched, in order:" "RECUR_LIBRARY_PATH"; do
    grep -qF "$want" <<<"$out" || { printf '%s\n' "$out"; echo "FAILED: the load error lacks '$want'" >&2; exit 1; }
  done
  grep -m1 "RecurNativeLoadException" <<<"$out" | cut -c1-150 | sed 's/^/    /'
  expect_finished env -u LD_LIBRARY_PATH RECUR_LIBRARY_PATH="$libdir" mono "$work/cs-missing/RecurExample.exe" "$models"

  if command -v nuget >/dev/null; then
    step "NuGet: pack, install from a local folder source, build and run a consumer"
    cmake --build "$build" --target recur_nupkg >"$work/nupkg.log" || { cat "$work/nupkg.log"; exit 1; }
    nupkg=$build/bindings/csharp/Recur.$version.nupkg
    # python3 builds the package (bindings/csharp/nupkg_license.py), so it is here.
    listing=$(python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$nupkg")
    sed 's/^/    /' <<<"$listing"
    for want in LICENSE THIRD_PARTY; do
      grep -qx "$want" <<<"$listing" || { echo "FAILED: $nupkg lacks $want" >&2; exit 1; }
    done
    nuspec=$(python3 -c 'import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read("Recur.nuspec").decode())' "$nupkg")
    grep -qF '<license type="expression">Apache-2.0</license>' <<<"$nuspec" ||
      { echo "FAILED: the nuspec in $nupkg has no <license type=\"expression\">Apache-2.0</license>" >&2; exit 1; }
    mkdir -p "$work/feed" && cp "$nupkg" "$work/feed/"
    HOME=$work nuget install Recur -Version "$version" -Source "$work/feed" -OutputDirectory "$work/packages" \
      -NonInteractive >"$work/nuget.log" || { cat "$work/nuget.log"; exit 1; }
    pkg=$work/packages/Recur.$version
    mkdir -p "$work/nuget-app"
    mcs -nologo -out:"$work/nuget-app/RecurExample.exe" -r:"$pkg/lib/net45/Recur.dll" "$src/examples/csharp/Program.cs"
    # What a .NET build does with the package: the assembly and runtimes/<rid>/native beside the app.
    cp "$pkg/lib/net45/Recur.dll" "$pkg"/runtimes/linux-x64/native/* "$work/nuget-app/"
    expect_finished env -u LD_LIBRARY_PATH mono "$work/nuget-app/RecurExample.exe" "$models"
  else
    step "NuGet: skipped (no nuget; Debian: apt-get install nuget)"
  fi
else
  step "C#: skipped (no Recur.dll installed, or no mcs/mono)"
fi

go_module=$prefix/$datadir_rel/recur/go/recur
if have "$go_module/go.mod" && command -v go >/dev/null; then
  step "Go: go build against the installed module, cgo through pkg-config"
  mkdir -p "$work/go"
  cp "$src/examples/go/main.go" "$src/examples/go/go.mod" "$work/go/"
  gobuild=$build/bindings/go
  (cd "$work/go" && GOPROXY=off GOFLAGS=-mod=mod go mod edit -replace=recur.dev/recur="$go_module")
  # No CGO_LDFLAGS: the rpath comes from recur.pc.
  (cd "$work/go" && env -u CGO_CFLAGS -u CGO_LDFLAGS GOPROXY=off GOFLAGS=-mod=mod CGO_ENABLED=1 \
     GOCACHE="$gobuild/gocache" GOPATH="$gobuild/gopath" go build -o recur-example-go .)
  expect_finished env -u LD_LIBRARY_PATH "$work/go/recur-example-go" "$models"
else
  step "Go: skipped (no Go module installed, or no go)"
fi

# The wheel of the Python package the build folder holds, for the Python recipe: built from that
# folder (nothing is compiled), for the Python its extension is built for.
python_exe=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt")
if compgen -G "$build/bindings/python/recur/_native*.so" >/dev/null && [[ -n $python_exe ]] &&
   "$python_exe" -c 'import ensurepip, venv' 2>/dev/null; then
  step "Python: the wheel, from this build folder (scripts/python-wheel.sh)"
  "$src/scripts/python-wheel.sh" --python "$python_exe" --build-dir "$build" --out "$work/wheels" \
    >"$work/wheel.log" 2>&1 || { cat "$work/wheel.log"; exit 1; }
  grep '^wheel: ' "$work/wheel.log" | sed 's/^/    /'
else
  step "Python: skipped (no Python package in $build, or no venv module for its Python)"
fi

# The recipes of docs/install.md, as written, with PREFIX the moved tree. FEED: the NuGet package
# built above, if any; DIST: the Python wheel, if any. The Go build cache of the build folder saves
# compiling cgo's runtime again.
run_recipes() {
  local feed="" dist=""
  [[ -f $work/feed/Recur.$version.nupkg ]] && feed=$work/feed
  compgen -G "$work/wheels/recur-*.whl" >/dev/null && dist=$work/wheels
  env FEED="$feed" DIST="$dist" WORK="$work/recipes-$2" GOPROXY=off GOCACHE="$build/bindings/go/gocache" \
    GOPATH="$build/bindings/go/gopath" "$src/tests/packaging/run_doc_recipes.sh" "$1"
}
step "docs/install.md: every tested recipe, as written"
run_recipes "$prefix" prefix

step "README.md quotes the quick-start programs as they are"
"$src/tests/packaging/check_readme_snippets.sh"

step "install and consume: done"

# ---------------------------------------------------------------------------------------------
if [[ "${RECUR_SKIP_DEB:-0}" == 1 ]]; then
  step ".deb packages: skipped (RECUR_SKIP_DEB=1)"; exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  step ".deb packages: skipped (dpkg -i needs root)"; exit 0
fi
installed=$(dpkg-query -W -f='${Package} ${Status}\n' 'librecur*' 'recur-tools' 'golang-recur-dev' 2>/dev/null \
  | awk '$NF == "installed" {print $1}' || true)
if [[ -n $installed ]]; then
  step ".deb packages: skipped (already installed here: $installed; dpkg --purge them to run this)"; exit 0
fi

step "cpack -G DEB"
(cd "$build" && cpack -G DEB -B "$work/debs" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; exit 1; }
debs=("$work"/debs/*.deb)

if command -v lintian >/dev/null; then
  step "lintian (errors and warnings fail; accepted tags: tests/packaging/lintian-overrides)"
  # Debian's own build runs lintian as a user; as root it refuses unless told to go on.
  lintian --allow-root --fail-on error,warning --suppress-tags-from-file "$src/tests/packaging/lintian-overrides" \
    --tag-display-limit 0 "${debs[@]}" >"$work/lintian.log" 2>&1 || { cat "$work/lintian.log"; echo "FAILED: lintian" >&2; exit 1; }
  sed 's/^/    /' "$work/lintian.log"
  echo "    lintian: no errors or warnings in ${#debs[@]} packages"
else
  step "lintian: skipped (not installed; Debian: apt-get install lintian)"
fi
names=()
for deb in "${debs[@]}"; do
  names+=("$(dpkg-deb -f "$deb" Package)")
  printf '    %-40s %s\n' "$(basename "$deb")" "Depends: $(dpkg-deb -f "$deb" Depends)"
done
for want in librecur0 librecur-dev recur-tools; do
  [[ " ${names[*]} " == *" $want "* ]] || { echo "FAILED: no $want package" >&2; exit 1; }
done

step "dpkg -i"
remove() { dpkg --purge "${names[@]}" >/dev/null || echo "warning: dpkg --purge ${names[*]} failed" >&2; rm -rf "$work"; }
trap remove EXIT
dpkg -i "${debs[@]}" >"$work/dpkg.log" || { cat "$work/dpkg.log"; exit 1; }

step "use the installed packages (no environment variables)"
unset PKG_CONFIG_PATH
env -u LD_LIBRARY_PATH recur info "$models/sentiment_keras3.keras" | head -n 4 | sed 's/^/    /'
env -u LD_LIBRARY_PATH recur verify "$models/sentiment_keras3.keras" -i "$models/sentiment_inputs.npy" \
  --expected "$models/sentiment_keras3_keras.npy" | tail -n 3 | sed 's/^/    /'
mkdir -p "$work/deb-use"
# The loader searches /usr/lib/<multiarch> itself: the packaged recur.pc carries no rpath.
case "$(pkg-config --libs recur)" in *-rpath*)
  echo "FAILED: the packaged recur.pc has an rpath: $(pkg-config --libs recur)" >&2; exit 1;; esac
# shellcheck disable=SC2046
c++ -std=c++17 -O2 -o "$work/deb-use/cpp" "$src/examples/cpp/main.cpp" $(pkg-config --cflags --libs recur)
expect_finished env -u LD_LIBRARY_PATH "$work/deb-use/cpp" "$models" cpu
if [[ " ${names[*]} " == *" librecur-java "* ]]; then
  # System.loadLibrary finds /usr/lib/<multiarch>/jni/librecur_java.so on Debian's default java.library.path.
  expect_finished env -u LD_LIBRARY_PATH java -cp /usr/share/java/recur.jar "$src/examples/java/SentimentExample.java" "$models"
  # Again with a copy of the jar without its native libraries: only the package's
  # /usr/lib/<multiarch>/jni/librecur_java.so can serve then.
  (cd "$work/deb-use" && jar xf /usr/share/java/recur.jar && rm -rf native && jar cf recur-no-native.jar recur)
  expect_finished env -u LD_LIBRARY_PATH java -cp "$work/deb-use/recur-no-native.jar" \
    "$src/examples/java/SentimentExample.java" "$models"
fi
if [[ " ${names[*]} " == *" librecur-cil "* ]]; then
  mcs -nologo -out:"$work/deb-use/RecurExample.exe" -r:/usr/lib/cli/recur/Recur.dll "$src/examples/csharp/Program.cs"
  expect_finished env -u LD_LIBRARY_PATH MONO_PATH=/usr/lib/cli/recur mono "$work/deb-use/RecurExample.exe" "$models"
fi

step "docs/install.md's recipes with PREFIX=/usr"
run_recipes /usr deb

step "dpkg --purge"
trap 'rm -rf "$work"' EXIT
dpkg --purge "${names[@]}" >"$work/dpkg-r.log" || { cat "$work/dpkg-r.log"; exit 1; }
# Purged, not only removed: nothing of them stays in dpkg's database (a removed library with a
# postrm would stay as "config-files").
left=$(dpkg-query -W -f='${Package} ${Status}\n' "${names[@]}" 2>/dev/null | awk '$NF != "not-installed"' || true)
[[ -z $left ]] || { echo "FAILED: still known to dpkg: $left" >&2; exit 1; }
step "packages: done"
