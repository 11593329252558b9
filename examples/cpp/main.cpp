// SPDX-License-Identifier: Apache-2.0
// recur from C++ through recur.hpp: opens the bundled Keras model, runs the sample sequences,
// prints recur's predictions next to Keras's, runs it again by name with int64 token ids, streams
// one sequence token by token through the whole model (ModelState) and through the model's GRU
// layer with a State, the way a game or a service steps many streams.
//
// Run: recur_example_cpp examples/models [device]   (device: cpu, cuda, cuda:N or auto; default auto)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "recur/recur.hpp"

namespace {

std::vector<std::vector<float>> read_matrix(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<std::vector<float>> rows;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ss(line);
    std::vector<float> row;
    for (float v; ss >> v;) row.push_back(v);
    if (!row.empty()) rows.push_back(row);
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "examples/models";
  try {
    const auto samples = read_matrix(dir + "/sentiment_inputs.txt");
    const auto keras = read_matrix(dir + "/sentiment_keras3_keras.txt");
    const int B = static_cast<int>(samples.size()), T = static_cast<int>(samples[0].size());
    std::vector<float> ids;
    for (const auto& row : samples) ids.insert(ids.end(), row.begin(), row.end());

    recur::Model model(dir + "/sentiment_keras3.keras");
    // "auto": the GPU when one can run, else the CPU; the device says where and why.
    model.set_device(argc > 2 ? argv[2] : "auto");
    const recur::Device where = model.device();
    std::printf("device: %s (%s)\n", where.backend.c_str(), where.reason.c_str());
    const recur_model_info info = model.info();
    std::printf("recur %s: %s, Keras %s, %d layers\n", recur::version().c_str(), (dir + "/sentiment_keras3.keras").c_str(),
                info.keras_version, info.num_layers);
    const std::vector<float> y = model.run(ids, B, T);
    double worst = 0.0;
    std::printf("  sample  %-26s %-26s\n", "recur", "Keras");
    for (int b = 0; b < B; ++b) {
      std::printf("  %6d   %.9f  %.9f   %.9f  %.9f\n", b, y[b * 2], y[b * 2 + 1], keras[b][0], keras[b][1]);
      for (int j = 0; j < 2; ++j) worst = std::max(worst, std::fabs(double(y[b * 2 + j]) - keras[b][j]));
    }
    std::printf("  max abs difference to Keras: %.3g\n", worst);

    // The same model by name, with the token ids as integers (exact at any vocabulary size), and
    // streamed a token at a time through the whole model with a ModelState.
    const recur::TensorInfo input = model.inputs().at(0);
    const std::string output = model.output_names().at(0);
    const std::vector<std::int64_t> token_ids(ids.begin(), ids.end());
    const recur::Tensor named = model.run({recur::Input(input.name, token_ids, {B, T})}, {output}).at(0);
    double named_worst = 0.0;
    for (std::size_t i = 0; i < named.data.size(); ++i)
      named_worst = std::max(named_worst, std::fabs(double(named.data[i]) - y[i]));
    std::printf("by name: input '%s' (int64 ids), output '%s' (%lld, %lld): max abs difference %.3g\n", input.name.c_str(),
                output.c_str(), static_cast<long long>(named.dims[0]), static_cast<long long>(named.dims[1]), named_worst);
    recur::ModelState stream(model, 1);
    std::vector<float> streamed;
    for (int t = 0; t < T; ++t) {
      const std::vector<std::int64_t> token = {token_ids[static_cast<std::size_t>(t)]};
      streamed = stream.step({recur::Input(input.name, token, {1, 1})}, {output}).at(0).data;
    }
    std::printf("streamed sample 0 token by token: %.9f %.9f\n", streamed[0], streamed[1]);
    named_worst = std::max(named_worst, std::max(std::fabs(double(streamed[0]) - y[0]), std::fabs(double(streamed[1]) - y[1])));

    // Streaming: the GRU layer of the file, stepped one token at a time. A state carries h and
    // the last output; the layer itself is shared and read-only.
    recur::Layer gru = model.layer("gru");
    recur::State state(gru, 1);
    const recur_layer_info gi = gru.info();
    std::vector<float> out(static_cast<std::size_t>(gi.units));
    std::vector<float> embedding_input(static_cast<std::size_t>(gi.input_size), 0.5f);
    for (int t = 0; t < 3; ++t) gru.forward_state(state, embedding_input.data(), embedding_input.size(), 1, out.data(), out.size());
    std::printf("GRU streamed 3 steps (units %d): first outputs %.6f %.6f %.6f\n", gi.units, out[0], out[1], out[2]);
    if (worst > 1e-5) {
      std::fprintf(stderr, "error: recur differs from Keras by %.3g\n", worst);
      return 1;
    }
    if (named_worst > 1e-5) {
      std::fprintf(stderr, "error: the named run or the stream differs from the run by %.3g\n", named_worst);
      return 1;
    }
    std::printf("example finished\n");
  } catch (const recur::Error& e) {
    std::fprintf(stderr, "recur error %d: %s\n", static_cast<int>(e.status()), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
