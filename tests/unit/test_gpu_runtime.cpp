// SPDX-License-Identifier: Apache-2.0
// Loading the GPU plugin: a plugin from another build, of another ABI, without the entry symbol or
// without a driver is refused with a message that says which, and asking for a GPU that cannot run
// fails cleanly while "auto" falls back to the CPU with the same results.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>
#if defined(__linux__)
#include <elf.h>
#include <link.h>
#include <unistd.h>
#endif

#include "gpu/runtime.hpp"
#include "recur/device.hpp"
#include "recur/error.hpp"
#include "recur/layer.hpp"

namespace recur {
namespace {

std::string fake(const char* name) {
  return std::string(RECUR_FAKE_PLUGIN_DIR) + "/librecur_fake_" + name + RECUR_FAKE_PLUGIN_SUFFIX;
}

void expect_refused(const gpu::PluginLoad& p, const std::string& words) {
  EXPECT_NE(p.why.find(words), std::string::npos) << "message: " << p.why;
  EXPECT_EQ(p.device_count, 0);
}

TEST(GpuPluginLoad, MissingFileSaysItDidNotLoad) {
  const gpu::PluginLoad p = gpu::load_plugin(fake("does_not_exist"));
  EXPECT_EQ(p.table, nullptr);
  expect_refused(p, "did not load");
  expect_refused(p, "RECUR_CUDA_PLUGIN");
}

TEST(GpuPluginLoad, LibraryWithoutEntryIsNotAPlugin) {
  const gpu::PluginLoad p = gpu::load_plugin(fake("no_entry"));
  EXPECT_EQ(p.table, nullptr);
  expect_refused(p, "is not a recur GPU plugin");
}

TEST(GpuPluginLoad, PluginThatRefusesOurAbi) {
  const gpu::PluginLoad p = gpu::load_plugin(fake("refuses"));
  EXPECT_EQ(p.table, nullptr);
  expect_refused(p, "refused plugin ABI");
}

TEST(GpuPluginLoad, OtherAbiVersionIsRefused) {
  const gpu::PluginLoad p = gpu::load_plugin(fake("wrong_abi"));
  EXPECT_EQ(p.table, nullptr);
  expect_refused(p, "implements GPU plugin ABI 999");
}

TEST(GpuPluginLoad, TruncatedTableIsRefused) {
  const gpu::PluginLoad p = gpu::load_plugin(fake("small_table"));
  EXPECT_EQ(p.table, nullptr);
  expect_refused(p, "table of 16 bytes");
}

TEST(GpuPluginLoad, OtherBuildIsRefused) {
  const gpu::PluginLoad p = gpu::load_plugin(fake("wrong_build"));
  EXPECT_EQ(p.table, nullptr);
  expect_refused(p, "comes from another build of recur (\"recur 0.0.1 abi 1\"");
  expect_refused(p, gpu::expected_build_id());
}

TEST(GpuPluginLoad, NoDriverIsReported) {
  const gpu::PluginLoad p = gpu::load_plugin(fake("no_driver"));
  EXPECT_NE(p.table, nullptr);  // a valid plugin, with nothing to run on
  expect_refused(p, "no usable NVIDIA driver: CUDA driver version is insufficient");
}

TEST(GpuPluginLoad, ValidPluginWithoutDevices) {
  const gpu::PluginLoad p = gpu::load_plugin(fake("valid"));
  EXPECT_NE(p.table, nullptr);
  expect_refused(p, "no NVIDIA GPU");
}

#if defined(__linux__)
// A copy of the valid fake plugin with its ELF header edited: each edit is refused before dlopen
// with what is wrong (the truncated files are covered by the C ABI tests, one process each).
gpu::PluginLoad load_with_header(const std::function<void(ElfW(Ehdr)&)>& edit, const char* tag) {
  std::ifstream in(fake("valid"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_GT(bytes.size(), sizeof(ElfW(Ehdr)));
  ElfW(Ehdr) eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  edit(eh);
  std::memcpy(bytes.data(), &eh, sizeof eh);
  const std::string path = ::testing::TempDir() + "recur_edited_plugin_" + tag + "_" + std::to_string(::getpid()) + ".so";
  std::ofstream(path, std::ios::binary) << bytes;
  gpu::PluginLoad p = gpu::load_plugin(path);
  std::remove(path.c_str());
  return p;
}

TEST(GpuPluginLoad, ElfHeaderOfAnotherKindIsRefusedBeforeLoading) {
  struct Case {
    const char* tag;
    std::function<void(ElfW(Ehdr)&)> edit;
    const char* words;
  };
  const Case cases[] = {
      {"machine", [](ElfW(Ehdr)& e) { e.e_machine = e.e_machine == EM_SPARC ? EM_MIPS : EM_SPARC; }, "is built for another processor"},
      {"class", [](ElfW(Ehdr)& e) { e.e_ident[EI_CLASS] = sizeof(void*) == 8 ? ELFCLASS32 : ELFCLASS64; }, "ELF file; this process is"},
      {"order", [](ElfW(Ehdr)& e) { e.e_ident[EI_DATA] = e.e_ident[EI_DATA] == ELFDATA2LSB ? ELFDATA2MSB : ELFDATA2LSB; }, "other byte order"},
      {"type", [](ElfW(Ehdr)& e) { e.e_type = ET_EXEC; }, "is not a shared library (ELF type 2, expected ET_DYN)"},
      {"phentsize", [](ElfW(Ehdr)& e) { e.e_phentsize = 7; }, "has no usable program headers"},
      {"phoff", [](ElfW(Ehdr)& e) { e.e_phoff = ~static_cast<decltype(e.e_phoff)>(0) - 8; }, "is truncated: its program headers"},
      {"shoff", [](ElfW(Ehdr)& e) { e.e_shoff += 1u << 30; }, "its section headers end at byte"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.tag);
    const gpu::PluginLoad p = load_with_header(c.edit, c.tag);
    EXPECT_EQ(p.table, nullptr);
    expect_refused(p, c.words);
    expect_refused(p, "RECUR_CUDA_PLUGIN");
  }
}
#endif

LayerConfig gru_config() {
  LayerConfig c = LayerConfig::defaults(LayerKind::gru, DialectInfo::latest(Dialect::keras3));
  c.units = 4;
  c.input_size = 3;
  c.seed = 5;
  return c;
}

std::vector<float> run(Layer& layer) {
  const std::vector<float> x{0.1f, -0.2f, 0.3f, 0.5f, 0.4f, -0.6f};
  std::vector<float> y(4);
  LayerCall c;
  c.input = x.data();
  c.input_len = x.size();
  c.batch = 1;
  c.timesteps = 2;
  c.output = y.data();
  c.output_len = y.size();
  layer.call(c);
  return y;
}

TEST(GpuDeviceChoice, CudaWithoutAGpuFailsCleanlyAndAutoFallsBack) {
  if (gpu_device_count() > 0) GTEST_SKIP() << "a GPU (or the emulator plugin) is present: " << gpu::device_name(0);
  Layer layer(gru_config());
  const std::vector<float> before = run(layer);
  try {
    layer.set_device(DeviceRequest::parse("cuda", "device"));
    FAIL() << "cuda placement succeeded without a GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Error::Code::unsupported);
    EXPECT_NE(std::string(e.what()).find("cuda:0: "), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("cuda:0: " + gpu::plugin().why), 0u) << e.what();
  }
  EXPECT_EQ(layer.placement().backend, "cpu");
  EXPECT_EQ(run(layer), before);

  layer.set_device(DeviceRequest::parse("auto", "device"));
  const Placement p = layer.placement();
  EXPECT_EQ(p.requested, "auto");
  EXPECT_EQ(p.backend, "cpu");
  EXPECT_EQ(p.path, "cpu");
  EXPECT_NE(p.reason.find("auto: "), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find(gpu::plugin().why), std::string::npos) << p.reason;
  EXPECT_EQ(run(layer), before);
  EXPECT_THROW(check_device(DeviceRequest::parse("cuda:1", "device")), Error);
  EXPECT_NO_THROW(check_device(DeviceRequest::parse("auto", "device")));
}

}  // namespace
}  // namespace recur
