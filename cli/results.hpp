// SPDX-License-Identifier: Apache-2.0
// A run's arrays as text for people and as JSON for programs: what `recur run` and `recur stream`
// print to stdout and write to .txt / .json files.
//
// Text: per array a header "NAME: (dims)", then one line per row of the last axis, led by the
// row's index over the other axes: "  [0]  v v v" for (B, F), "  [0, 2]  v v" for (B, T, F).
// JSON: {"NAME": {"dims": [...], "values": [...]}, ...} with "values" nested like the dims (what
// numpy.array() of it gives back). Values are written with 9 significant digits (%.9g: each
// float32 reads back exactly); NaN and infinities, which JSON cannot hold, as null.
#ifndef RECUR_CLI_RESULTS_HPP
#define RECUR_CLI_RESULTS_HPP

#include <cstddef>
#include <string>
#include <vector>

#include "npy.hpp"

namespace recur_cli {

// "%.9g" of v.
std::string format_value(float v);

// The arrays as text, in order.
std::string text_of(const NamedArrays& arrays);

// The arrays as one JSON object on one line (no newline at the end).
std::string json_of(const NamedArrays& arrays);

// The bytes a safe name keeps at most (before ".npy"; file systems allow 255).
constexpr std::size_t kMaxFileNameBytes = 120;

// Names from a model file (layer and output names, which Keras lets hold any character but '/')
// made safe as file names on every OS and as .npz member names: path separators ('/', '\\'),
// control bytes, bytes that are not UTF-8, and the characters Windows refuses (: * ? " < > |)
// become '_', as do leading dots ("..", hidden files) and trailing dots and spaces; a Windows
// device name (CON, NUL, COM1, ...) gets a leading '_'; each is cut to `max_bytes` bytes (whole
// characters) and an empty one is "output". Names that end up equal, ignoring ASCII case (as
// Windows and macOS compare file names), get _1, _2, ... in order. One result per name.
std::vector<std::string> safe_file_names(const std::vector<std::string>& names, std::size_t max_bytes = kMaxFileNameBytes);

}  // namespace recur_cli

#endif
