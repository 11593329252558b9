// SPDX-License-Identifier: Apache-2.0
// A GPU plugin file that is not a complete shared library (an interrupted install, a directory, an
// empty or non-ELF file) is refused before dlopen maps it (mapping a truncated library raised SIGBUS
// in the loader), with a message naming the file and what is wrong; "cuda" fails with it and
// "auto" runs on the CPU giving it as the reason. The plugin loads once per process, so each bad
// file is tried in a child process of this test binary (RECUR_CUDA_PLUGIN set), and the parent
// checks that the child exited normally and that its checks passed.
#if defined(__linux__)
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "c_api_test_util.hpp"

extern char** environ;

namespace {

const std::string kModels = RECUR_TEST_MODELS_DIR;
constexpr const char* kExpectVar = "RECUR_TEST_BAD_PLUGIN_EXPECT";

std::string getenv_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

recur_device_info info_struct() {
  recur_device_info info;
  std::memset(&info, 0, sizeof info);
  info.version = RECUR_DEVICE_INFO_VERSION;
  return info;
}

constexpr const char* kProbe = "probe";  // kExpectVar's value when the parent only checks it can start a child

// Runs in the child: RECUR_CUDA_PLUGIN names a bad file, kExpectVar the words its refusal holds.
TEST(CApiBadPluginChild, RefusedWithItsReasonAndAutoRunsOnTheCpu) {
  const std::string expect = getenv_or_empty(kExpectVar), plugin = getenv_or_empty("RECUR_CUDA_PLUGIN");
  if (expect.empty()) GTEST_SKIP() << "runs as a child of CApiBadPlugin.EveryBadFileIsRefusedWithoutACrash";
  if (expect == kProbe) return;  // the parent's check that this binary can run as its child
  EXPECT_RECUR_ERR(recur_device_check("cuda"), RECUR_ERR_UNSUPPORTED, expect);
  const std::string why = recur_last_error();
  EXPECT_NE(why.find(plugin), std::string::npos) << why;
  EXPECT_NE(why.find("RECUR_CUDA_PLUGIN"), std::string::npos) << why;  // says what to do
  int32_t n = -1;
  ASSERT_RECUR_OK(recur_device_count(&n));
  EXPECT_EQ(n, 0);
  EXPECT_RECUR_OK(recur_device_check("auto"));

  recur_layer_options o = rt::options(RECUR_LAYER_GRU, 4, 3);
  o.return_sequences = 1;
  rt::Layer l = rt::make(o);
  ASSERT_RECUR_OK(recur_layer_set_device(l.get(), "auto"));
  recur_device_info li = info_struct();
  ASSERT_RECUR_OK(recur_layer_get_device(l.get(), &li));
  EXPECT_STREQ(li.backend, "cpu");
  EXPECT_NE(std::string(li.reason).find(expect), std::string::npos) << li.reason;
  const std::vector<float> x = rt::data(2 * 5 * 3);
  std::vector<float> y(2 * 5 * 4);
  EXPECT_RECUR_OK(recur_layer_forward(l.get(), x.data(), x.size(), 2, 5, nullptr, 0, nullptr, 0, 0, 0, y.data(),
                                      y.size(), nullptr, 0));

  RECUR_SKIP_WITHOUT_FILES();
  recur_model* raw = nullptr;
  ASSERT_RECUR_OK(recur_model_open(&raw, (kModels + "/keras3/bigru.keras").c_str()));
  rt::Model m(raw);
  ASSERT_RECUR_OK(recur_model_set_device(m.get(), "auto"));
  recur_device_info mi = info_struct();
  ASSERT_RECUR_OK(recur_model_get_device(m.get(), -1, &mi));
  EXPECT_STREQ(mi.backend, "cpu");
  EXPECT_NE(std::string(mi.reason).find(expect), std::string::npos) << mi.reason;
  EXPECT_RECUR_ERR(recur_model_set_device(m.get(), "cuda"), RECUR_ERR_UNSUPPORTED, expect);
}

// The file this library was loaded from: a real shared library to cut short.
std::string this_library() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&recur_version_string), &info) == 0 || !info.dli_fname) return {};
  return info.dli_fname;
}

std::vector<char> bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const char* data, std::size_t n) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(data, static_cast<std::streamsize>(n));
}

// Runs this binary's child test with RECUR_CUDA_PLUGIN=plugin; true when it exited 0.
::testing::AssertionResult child_passes(const std::string& plugin, const std::string& expect) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string s = *e;
    if (s.rfind("RECUR_CUDA_PLUGIN=", 0) != 0 && s.rfind(std::string(kExpectVar) + "=", 0) != 0) env_strings.push_back(s);
  }
  env_strings.push_back("RECUR_CUDA_PLUGIN=" + plugin);
  env_strings.push_back(std::string(kExpectVar) + "=" + expect);
  std::vector<char*> env;
  for (std::string& s : env_strings) env.push_back(s.data());
  env.push_back(nullptr);
  std::string self = "/proc/self/exe", filter = "--gtest_filter=CApiBadPluginChild.*";
  char* argv[] = {self.data(), filter.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, env.data()) != 0)
    return ::testing::AssertionFailure() << "cannot start the child";
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return ::testing::AssertionFailure() << "waitpid failed";
  if (WIFSIGNALED(st)) return ::testing::AssertionFailure() << "the child was killed by signal " << WTERMSIG(st);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return ::testing::AssertionFailure() << "the child's checks failed (exit " << WEXITSTATUS(st) << ")";
  return ::testing::AssertionSuccess();
}

TEST(CApiBadPlugin, EveryBadFileIsRefusedWithoutACrash) {
  // Under a user-mode emulator (the ARM64 build runs its tests in qemu-aarch64) /proc/self/exe is
  // the emulator, so this binary cannot start itself as a child: nothing here could be checked.
  if (!child_passes("", kProbe))
    GTEST_SKIP() << "this test binary cannot start itself as a child process here (under a user-mode emulator "
                    "such as qemu-user, /proc/self/exe is the emulator), and each bad plugin needs a fresh process";
  const std::string lib = this_library();
  ASSERT_FALSE(lib.empty());
  const std::vector<char> elf = bytes_of(lib);
  ASSERT_GT(elf.size(), sizeof(ElfW(Ehdr)));
  ElfW(Ehdr) eh;
  std::memcpy(&eh, elf.data(), sizeof eh);
  ASSERT_EQ(std::memcmp(eh.e_ident, ELFMAG, SELFMAG), 0);
  // Cut points: inside the ELF header, inside the program headers, inside the first and the last
  // PT_LOAD segment that holds file bytes, and one byte short of the whole file (the section headers
  // come last).
  std::size_t first_load = 0, last_load = 0;
  for (int i = 0; i < eh.e_phnum; ++i) {
    ElfW(Phdr) ph;
    std::memcpy(&ph, elf.data() + eh.e_phoff + static_cast<std::size_t>(i) * sizeof ph, sizeof ph);
    if (ph.p_type != PT_LOAD || ph.p_filesz < 2) continue;
    const std::size_t middle = static_cast<std::size_t>(ph.p_offset + ph.p_filesz / 2);
    if (!first_load) first_load = middle;
    last_load = middle;
  }
  ASSERT_GT(first_load, eh.e_phoff + eh.e_phnum * sizeof(ElfW(Phdr)));
  ASSERT_GT(last_load, first_load);

  char tmpl[] = "/tmp/recur_bad_plugin_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  struct Case {
    std::string name;
    std::size_t keep;  // bytes of the library kept
    std::string expect;
  };
  const std::vector<Case> cuts = {
      {"in_elf_header", 20, "truncated inside its ELF header"},
      {"in_program_headers", static_cast<std::size_t>(eh.e_phoff) + sizeof(ElfW(Phdr)) + 7, "program headers end at byte"},
      {"in_first_load", first_load, "PT_LOAD segment"},
      {"in_last_load", last_load, "PT_LOAD segment"},
      {"one_byte_short", elf.size() - 1, "is truncated"},
  };
  for (const Case& c : cuts) {
    SCOPED_TRACE(c.name + " (" + std::to_string(c.keep) + " of " + std::to_string(elf.size()) + " bytes)");
    const std::string path = dir + "/" + c.name + ".so";
    write_file(path, elf.data(), c.keep);
    EXPECT_TRUE(child_passes(path, c.expect));
  }
  const std::string empty = dir + "/empty.so", text = dir + "/text.so", folder = dir + "/folder.so";
  write_file(empty, "", 0);
  write_file(text, "#!/bin/sh\necho not a library\n", 29);
  ASSERT_EQ(mkdir(folder.c_str(), 0700), 0);
  EXPECT_TRUE(child_passes(empty, "is empty"));
  EXPECT_TRUE(child_passes(text, "is not an ELF shared library"));
  EXPECT_TRUE(child_passes(folder, "is a directory"));
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
#endif
