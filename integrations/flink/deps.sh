#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fetches Flink 2.x's jars for recur-flink's build and tests: PyPI's apache-flink-libraries
# (installed --no-deps; its pyflink/lib holds flink-dist and log4j) into DEST/site, and JDK 17
# (Debian's openjdk-17-jdk-headless) when javac 17 is missing. Idempotent and quiet when both are
# there. Never fails the caller's build: without them the flink_* tests skip, saying why.
#
#   integrations/flink/deps.sh [DEST]     DEST defaults to build/flink-deps
set -uo pipefail
cd "$(dirname "$0")/../.."
dest=${1:-build/flink-deps}
version=${RECUR_FLINK_VERSION:-2.3.0}
lib=$dest/site/pyflink/lib

if ! javac -version 2>&1 | grep -Eq 'javac (1[7-9]|[2-9][0-9])'; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "flink deps: installing openjdk-17-jdk-headless"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jdk-headless >/dev/null ||
      echo "flink deps: WARNING: could not install openjdk-17-jdk-headless; the flink tests will skip" >&2
  else
    echo "flink deps: WARNING: no javac 17 (apt-get install openjdk-17-jdk-headless); the flink tests will skip" >&2
  fi
fi

if compgen -G "$lib/flink-dist-$version.jar" >/dev/null; then exit 0; fi
echo "flink deps: apache-flink-libraries==$version (Flink's jars) into $dest/site"
rm -rf "$dest/site"
mkdir -p "$dest"
if ! python3 -m pip install -q --disable-pip-version-check --no-deps --target "$dest/site" \
       "apache-flink-libraries==$version" 2>"$dest/pip.log"; then
  echo "flink deps: WARNING: pip could not install apache-flink-libraries==$version (see $dest/pip.log);" \
       "the flink tests will skip" >&2
  rm -rf "$dest/site"
  exit 0
fi
compgen -G "$lib/flink-dist-*.jar" >/dev/null ||
  echo "flink deps: WARNING: apache-flink-libraries==$version has no $lib/flink-dist-*.jar; the flink tests will skip" >&2
exit 0
