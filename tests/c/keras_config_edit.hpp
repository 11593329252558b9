// SPDX-License-Identifier: Apache-2.0
// Hostile layer configs for tests: a copy of a Keras-saved .keras file whose config.json is edited
// (a value of the wrong type, a negative or huge size, a missing key), opened through the C ABI.
// Uses libzip, so its tests are built where the hostile-file tests are (not in cross builds):
// name them tests/c/test_model_hostile_*.cpp.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <recur/recur.h>
#include <unistd.h>
#include <zip.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace keras_edit {

using json = nlohmann::json;

struct Opened {
  recur_status status = RECUR_OK;
  std::string message;  // recur_last_error() after a failure
  std::string path;     // the edited file (removed by the time the caller sees it)
};

inline std::vector<std::pair<std::string, std::string>> read_members(const std::string& path) {
  std::vector<std::pair<std::string, std::string>> out;
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &err);
  EXPECT_NE(z, nullptr) << path;
  if (!z) return out;
  const zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &st);
    std::string data(static_cast<std::size_t>(st.size), '\0');
    zip_file_t* f = zip_fopen_index(z, static_cast<zip_uint64_t>(i), 0);
    EXPECT_EQ(zip_fread(f, data.data(), st.size), static_cast<zip_int64_t>(st.size));
    zip_fclose(f);
    out.emplace_back(st.name, std::move(data));
  }
  zip_discard(z);
  return out;
}

inline void write_members(const std::string& path, const std::vector<std::pair<std::string, std::string>>& members,
                          bool deflate = false) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(z, nullptr) << path;
  for (const auto& [name, data] : members) {
    zip_source_t* src = zip_source_buffer(z, data.data(), data.size(), 0);
    const zip_int64_t idx = zip_file_add(z, name.c_str(), src, ZIP_FL_OVERWRITE);
    ASSERT_GE(idx, 0) << name << ": " << zip_strerror(z);
    zip_set_file_compression(z, static_cast<zip_uint64_t>(idx), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  ASSERT_EQ(zip_close(z), 0) << zip_strerror(z);
}

// The first layer entry named `name` anywhere in a model config (nested models and wrappers
// included); fails the test when there is none.
inline json* find_layer(json& node, const std::string& name) {
  if (node.is_object()) {
    if (node.contains("config") && node["config"].is_object() && node["config"].value("name", "") == name &&
        node.contains("class_name"))
      return &node;
    for (auto& [k, v] : node.items())
      if (json* hit = find_layer(v, name)) return hit;
  } else if (node.is_array()) {
    for (auto& v : node)
      if (json* hit = find_layer(v, name)) return hit;
  }
  return nullptr;
}

inline json& layer(json& config, const std::string& name) {
  json* hit = find_layer(config, name);
  if (!hit) {
    ADD_FAILURE() << "no layer named " << name << " in the config";
    static json none = json::object();
    return none;
  }
  return *hit;
}

// Runs one batch of zeros (batch 3; each sequence input as long as it declares, else 4 steps):
// RECUR_OK or the first failing call's status and message.
inline Opened run_zeros(recur_model* m) {
  Opened r;
  int32_t n = 0;
  r.status = recur_model_num_inputs(m, &n);
  std::vector<int32_t> steps;
  for (int32_t i = 0; r.status == RECUR_OK && i < n; ++i) {
    int32_t rank = 0;
    int64_t dims[RECUR_MAX_RANK];
    r.status = recur_model_input(m, i, nullptr, &rank, dims, nullptr);
    steps.push_back(rank >= 2 && dims[1] > 0 ? static_cast<int32_t>(dims[1]) : 4);
  }
  size_t in_len = 0, out_len = 0;
  if (r.status == RECUR_OK) r.status = recur_model_inputs_length(m, 3, steps.data(), n, &in_len);
  if (r.status == RECUR_OK) r.status = recur_model_outputs_length(m, 3, steps.data(), n, &out_len);
  if (r.status == RECUR_OK) {
    std::vector<float> in(in_len), out(out_len);
    r.status = recur_model_run_inputs(m, 3, steps.data(), n, in.data(), in.size(), nullptr, 0, out.data(), out.size());
  }
  if (r.status != RECUR_OK) r.message = recur_last_error();
  return r;
}

// Writes a copy of `keras_file` whose config.json went through `edit` to a fresh temporary path
// (the caller removes it).
inline std::string write_edited(const std::string& keras_file, const std::function<void(json&)>& edit) {
  static std::atomic<int> counter{0};
  const std::filesystem::path p = std::filesystem::temp_directory_path() /
      ("recur_hostile_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + ".keras");
  auto members = read_members(keras_file);
  bool found = false;
  for (auto& [name, data] : members)
    if (name == "config.json") {
      json config = json::parse(data);
      edit(config);
      data = config.dump();
      found = true;
    }
  EXPECT_TRUE(found) << keras_file << " has no config.json";
  write_members(p.string(), members);
  return p.string();
}

// Opens a copy of `keras_file` whose config.json went through `edit` and, when it opens, runs
// one batch of zeros through it (run_zeros): the first failure's status and message, or RECUR_OK.
// A failed open must leave *out NULL.
inline Opened open_edited(const std::string& keras_file, const std::function<void(json&)>& edit) {
  const std::filesystem::path p = write_edited(keras_file, edit);
  Opened r;
  recur_model* m = nullptr;
  r.status = recur_model_open(&m, p.string().c_str());
  if (r.status == RECUR_OK) {
    r = run_zeros(m);
    recur_model_destroy(m);
  } else {
    r.message = recur_last_error();
    EXPECT_EQ(m, nullptr) << "a failed open must leave *out NULL";
  }
  r.path = p.string();
  std::error_code ec;
  std::filesystem::remove(p, ec);
  return r;
}

// Sets layer `layer`'s config[key] to each of `bad`: every one fails, with a message naming `needle`.
inline void expect_refused(const std::string& file, const std::string& layer, const std::string& key,
                           const std::vector<json>& bad, const std::string& needle) {
  for (const json& v : bad) {
    const auto r = open_edited(file, [&](json& c) { keras_edit::layer(c, layer)["config"][key] = v; });
    EXPECT_NE(r.status, RECUR_OK) << key << "=" << v.dump();
    EXPECT_NE(r.message.find(needle), std::string::npos) << key << "=" << v.dump() << ": " << r.message;
  }
}

// Edits layer `layer`'s entry with `edit` (`what` says how): it fails, naming each of `needles`.
inline void expect_refused(const std::string& file, const std::string& layer, const std::function<void(json&)>& edit,
                           const std::vector<std::string>& needles, const std::string& what) {
  const auto r = open_edited(file, [&](json& c) { edit(keras_edit::layer(c, layer)); });
  EXPECT_NE(r.status, RECUR_OK) << what;
  for (const std::string& w : needles) EXPECT_NE(r.message.find(w), std::string::npos) << what << ": " << r.message;
}

}  // namespace keras_edit
