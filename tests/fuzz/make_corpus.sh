#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates the seed corpora tests/fuzz/corpus/<target>/ from the committed fixtures (Python's
# standard library only). The output depends only on the fixtures: rerunning it gives the same
# files. Keep the corpora small (they are committed and replayed by ctest): small models only,
# a sample of the layer fixtures.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=tests/fuzz/corpus
rm -rf "$out"
mkdir -p "$out"

python3 - "$out" <<'PY'
import glob, hashlib, json, os, random, sys, zipfile

out = sys.argv[1]

def put(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

def small_files(patterns, limit):
    seen, files = set(), []
    for pattern in patterns:
        for f in sorted(glob.glob(pattern)):
            data = open(f, "rb").read()
            h = hashlib.sha1(data).hexdigest()
            if len(data) <= limit and h not in seen:
                seen.add(h)
                files.append((f, data))
    return files

def flat(path):
    return path.replace("tests/keras/", "").replace("tests/cli/", "cli/").replace("examples/", "").replace("/", "_")

# fuzz_layer_json: 3 leading bytes (dialect: 2 or 3, input size, version + training), then a layer's JSON.
# Up to 8 layers of each fixture file, spread over the file; byte 1 = 1 takes the input size from
# the JSON, 9 says 8.
for f in sorted(glob.glob("tests/keras/fixtures/*/*.json")):
    fixture = json.load(open(f))
    dialect = 2 if "/keras2/" in f else 3
    cases = fixture["cases"]
    step = max(1, len(cases) // 8)
    for i, case in enumerate(cases[::step][:8]):
        size = 1 if i % 2 == 0 else int(case.get("input_size", 8)) % 33 + 1
        prefix = bytes([dialect, size, 0x80 if i % 3 == 0 else 0])
        put("fuzz_layer_json", "%s_%s_%s" % (dialect, os.path.basename(f)[:-5], case["name"]),
            prefix + json.dumps(case["layer"]).encode())

# fuzz_keras / fuzz_h5: the small model files as they are.
graphs = ["tests/keras/graphs/keras3/*", "tests/keras/graphs/keras2/*", "tests/cli/models/keras3/*",
          "tests/cli/models/keras2/*", "tests/keras/models/keras2/*"]
for f, data in small_files([g + ".keras" for g in graphs], 24000)[:16]:
    put("fuzz_keras", flat(f), data)
for f, data in small_files([g + ".h5" for g in graphs], 22000)[:12]:
    put("fuzz_h5", flat(f), data)
# and the smallest file of each layer family's suite, in each format
for suite in sorted(glob.glob("tests/keras/graphs/*/")):
    for ext, target in (("keras", "fuzz_keras"), ("h5", "fuzz_h5")):
        files = small_files([suite + "keras3/*." + ext, suite + "keras2/*." + ext], 40000)
        if files:
            f, data = min(files, key=lambda fd: len(fd[1]))
            put(target, flat(f), data)

# fuzz_model_graph: the config.json of every graph model (keras3_jax's graphs are keras3's).
configs = []
# Every suite's (graphs/<suite>/keras[23]/), so the fuzzer starts from each layer family's configs.
for f in (sorted(glob.glob("tests/keras/graphs/keras[23]/*.keras")) + sorted(glob.glob("tests/keras/graphs/*/keras[23]/*.keras"))
          + sorted(glob.glob("tests/cli/models/*/*.keras"))):
    configs.append((f, zipfile.ZipFile(f).read("config.json")))
seen = set()
for f, data in configs:
    h = hashlib.sha1(data).hexdigest()
    if h not in seen:
        seen.add(h)
        put("fuzz_model_graph", flat(f) + ".json", data)

# fuzz_keras_structured: FuzzedDataProvider reads integers from the end: the last byte picks the
# fixture model (base_models() in fuzz_common.hpp, 32 of them), the one before it the config
# mode (2: the fixture's own config), the one before that the other parts' edits (0: none). So
# [0, 2, i] is fixture i unchanged; the rest are a few random programs of edits.
for i in range(32):
    put("fuzz_keras_structured", "fixture_%02d" % i, bytes([0, 2, i]))
rng = random.Random(1)
for i in range(12):
    put("fuzz_keras_structured", "edits_%02d" % i, bytes(rng.randrange(256) for _ in range(rng.randrange(8, 96))))

# fuzz_npy: byte 0 even = a .npy image, odd = a .npz archive.
for f, data in small_files(["tests/cli/models/*/*.npy", "examples/models/*.npy"], 4096):
    put("fuzz_npy", flat(f), b"\x00" + data)
for f, data in small_files(["tests/cli/models/*/*.npz"], 4096):
    put("fuzz_npy", flat(f), b"\x01" + data)
# byte 0 = 2: a .txt of texts for a string input, one per line
for i, text in enumerate(["the cat sat\nOn the mat!\r\n\n", "caf\u00e9 \u00dcber na\u00efve\n\u4e2d\u6587\ttab",
                          "one line without an end", "\r\n\r\n"]):
    put("fuzz_npy", "texts_%02d.txt" % i, b"\x02" + text.encode("utf-8"))

# fuzz_c_api: random call programs (the target reads every byte as a choice).
rng = random.Random(2)
for i in range(24):
    put("fuzz_c_api", "program_%02d" % i, bytes(rng.randrange(256) for _ in range(rng.randrange(64, 1024))))
PY

du -sh "$out"/* | sed 's|tests/fuzz/corpus/||'
