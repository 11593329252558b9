// SPDX-License-Identifier: Apache-2.0
#include "gpu/runtime.hpp"

#if defined(_WIN32)
#ifndef NOMINMAX
#define NOMINMAX
#endif
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#else
#include <dlfcn.h>
#endif
#if defined(__linux__)
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "recur/error.hpp"
#include "recur/log.hpp"

#define RECUR_STR_(x) #x
#define RECUR_STR(x) RECUR_STR_(x)

namespace recur::gpu {
namespace {

// The platform's loader: dlopen on ELF systems, LoadLibrary on Windows (where no CUDA plugin is
// built yet, so a "cuda" device reports that recur_cuda.dll did not load).
#if defined(_WIN32)
constexpr const char* kPluginFile = "recur_cuda.dll";

std::string directory_of_this_library() {
  HMODULE self = nullptr;
  if (!GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                          reinterpret_cast<LPCSTR>(&expected_build_id), &self))
    return {};
  char buf[MAX_PATH];
  const DWORD n = GetModuleFileNameA(self, buf, sizeof buf);
  if (n == 0 || n >= sizeof buf) return {};
  const std::string path(buf, n);
  const auto slash = path.find_last_of("\\/");
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

void* open_library(const std::string& path, std::string& error) {
  HMODULE h = LoadLibraryA(path.c_str());
  if (!h) error = "LoadLibrary error " + std::to_string(GetLastError());
  return reinterpret_cast<void*>(h);
}

recur_gpu_plugin_entry_fn find_entry(void* library) {
  FARPROC f = GetProcAddress(reinterpret_cast<HMODULE>(library), RECUR_GPU_PLUGIN_ENTRY);
  return reinterpret_cast<recur_gpu_plugin_entry_fn>(reinterpret_cast<void (*)()>(f));
}
#else
constexpr const char* kPluginFile = "librecur_cuda.so";

std::string directory_of_this_library() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&expected_build_id), &info) == 0 || !info.dli_fname) return {};
  std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

void* open_library(const std::string& path, std::string& error) {
  // RTLD_LOCAL keeps CUDA's symbols out of the process's global namespace.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    error = e ? e : "unknown dlopen error";
  }
  return handle;
}

recur_gpu_plugin_entry_fn find_entry(void* library) {
  return reinterpret_cast<recur_gpu_plugin_entry_fn>(dlsym(library, RECUR_GPU_PLUGIN_ENTRY));
}
#endif

#if defined(__linux__)
// dlopen maps a plugin's segments without checking them against the file's size, and the first
// touch of a page past the end raises SIGBUS, killing the process (an interrupted install leaves
// such a file). So the ELF headers are read with ordinary reads first, and a file whose headers or
// segments do not lie within it, or that is not a shared library this process can load, is
// refused with what is wrong. Returns "" for a file that looks loadable, and for one that cannot
// be opened (dlopen then says why, as for a missing file).
std::string elf_problem(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == EISDIR) return "is a directory, not a shared library";
    return {};
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0) return std::string("cannot be examined: ") + std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "is a directory, not a shared library";
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  const auto size = static_cast<std::uint64_t>(st.st_size);
  const auto read_at = [&](void* to, std::size_t n, std::uint64_t at) {
    std::size_t done = 0;
    while (done < n) {
      const ssize_t r = ::pread(fd, static_cast<char*>(to) + done, n - done, static_cast<off_t>(at + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      done += static_cast<std::size_t>(r);
    }
    return true;
  };
  const std::string bytes = " (the file has " + std::to_string(size) + " bytes)";
  if (size == 0) return "is empty (0 bytes)";
  unsigned char ident[EI_NIDENT] = {0};
  if (!read_at(ident, size < EI_NIDENT ? size : EI_NIDENT, 0) || size < SELFMAG ||
      std::memcmp(ident, ELFMAG, SELFMAG) != 0)
    return "is not an ELF shared library (it does not start with \\x7F\"ELF\")";
  using Ehdr = ElfW(Ehdr);
  using Phdr = ElfW(Phdr);
  using Shdr = ElfW(Shdr);
  constexpr unsigned char own_class = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  constexpr unsigned char own_data = ELFDATA2MSB;
#else
  constexpr unsigned char own_data = ELFDATA2LSB;
#endif
  if (size < EI_NIDENT) return "is truncated inside its ELF header" + bytes;
  if (ident[EI_CLASS] != own_class)
    return std::string("is a ") + (ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : ident[EI_CLASS] == ELFCLASS64 ? "64-bit" : "unknown-class") +
           " ELF file; this process is " + (own_class == ELFCLASS64 ? "64-bit" : "32-bit");
  if (ident[EI_DATA] != own_data) return "is an ELF file of the other byte order than this process";
  if (size < sizeof(Ehdr)) return "is truncated inside its ELF header" + bytes + ", shorter than the header's " + std::to_string(sizeof(Ehdr)) + " bytes";
  Ehdr eh{};
  if (!read_at(&eh, sizeof eh, 0)) return "cannot be read: " + std::string(std::strerror(errno));
  if (eh.e_type != ET_DYN) return "is not a shared library (ELF type " + std::to_string(eh.e_type) + ", expected ET_DYN)";
#if defined(__x86_64__)
  constexpr int own_machine = EM_X86_64;
#elif defined(__aarch64__)
  constexpr int own_machine = EM_AARCH64;
#elif defined(__i386__)
  constexpr int own_machine = EM_386;
#elif defined(__arm__)
  constexpr int own_machine = EM_ARM;
#elif defined(__powerpc64__)
  constexpr int own_machine = EM_PPC64;
#elif defined(__riscv)
  constexpr int own_machine = EM_RISCV;
#elif defined(__s390x__)
  constexpr int own_machine = EM_S390;
#else
  constexpr int own_machine = -1;  // not checked here; dlopen refuses another machine cleanly
#endif
  if (own_machine >= 0 && eh.e_machine != own_machine)
    return "is built for another processor (ELF machine " + std::to_string(eh.e_machine) + ", this process is " +
           std::to_string(own_machine) + ")";
  if (eh.e_phnum == 0 || eh.e_phentsize != sizeof(Phdr))
    return "has no usable program headers (" + std::to_string(eh.e_phnum) + " of " + std::to_string(eh.e_phentsize) +
           " bytes; expected entries of " + std::to_string(sizeof(Phdr)) + " bytes)";
  // Sizes are at most 16 bits times 16 bits here and offsets are 64-bit: compared by subtraction.
  const auto within = [&](std::uint64_t offset, std::uint64_t length) { return offset <= size && length <= size - offset; };
  // Where a range past the end ends (or, when that overflows, starts).
  const auto end_of = [](std::uint64_t offset, std::uint64_t length) {
    return offset > UINT64_MAX - length ? "start at byte " + std::to_string(offset)
                                        : "end at byte " + std::to_string(offset + length);
  };
  const std::uint64_t ph_bytes = std::uint64_t{eh.e_phnum} * eh.e_phentsize;
  if (!within(eh.e_phoff, ph_bytes))
    return "is truncated: its program headers " + end_of(eh.e_phoff, ph_bytes) + bytes;
  int loads = 0;
  bool dynamic = false;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Phdr ph{};
    if (!read_at(&ph, sizeof ph, eh.e_phoff + std::uint64_t{i} * sizeof(Phdr)))
      return "cannot be read: " + std::string(std::strerror(errno));
    if (ph.p_type == PT_LOAD) {
      ++loads;
      if (ph.p_filesz > ph.p_memsz)
        return "has a malformed PT_LOAD segment " + std::to_string(i) + " (" + std::to_string(ph.p_filesz) +
               " bytes in the file, more than its " + std::to_string(ph.p_memsz) + " in memory)";
    }
    dynamic = dynamic || ph.p_type == PT_DYNAMIC;
    if (ph.p_filesz != 0 && !within(ph.p_offset, ph.p_filesz))
      return "is truncated: its " + std::string(ph.p_type == PT_LOAD ? "PT_LOAD " : "") + "segment " + std::to_string(i) +
             " should " + end_of(ph.p_offset, ph.p_filesz) + bytes;
  }
  if (eh.e_shnum != 0 || eh.e_shoff != 0) {
    if (eh.e_shentsize != sizeof(Shdr))
      return "has section headers of " + std::to_string(eh.e_shentsize) + " bytes; expected " + std::to_string(sizeof(Shdr));
    const std::uint64_t sh_bytes = std::uint64_t{eh.e_shnum} * eh.e_shentsize;
    if (!within(eh.e_shoff, sh_bytes))
      return "is truncated: its section headers " + end_of(eh.e_shoff, sh_bytes) + bytes;
  }
  if (loads == 0) return "has no PT_LOAD segment, so it is not a loadable library";
  if (!dynamic) return "has no PT_DYNAMIC segment, so it is not a shared library";
  return {};
}
#endif

std::string message_of(const char* buf) { return buf[0] ? std::string(buf) : std::string("no message"); }

}  // namespace

const char* expected_build_id() { return "recur " RECUR_PROJECT_VERSION " abi " RECUR_STR(RECUR_GPU_PLUGIN_ABI_VERSION); }

PluginLoad load_plugin(const std::string& path) {
  PluginLoad out;
  out.path = path;
  // The handle is never closed because CUDA runtimes do not survive being unloaded.
#if defined(__linux__)
  const std::string bad = elf_problem(path);
  if (!bad.empty()) {
    out.why = "the GPU plugin " + path + " " + bad +
              "; it was not loaded (an interrupted install leaves such a file): reinstall recur's GPU plugin "
              "(librecur0-cuda), or point RECUR_CUDA_PLUGIN at a complete plugin from the same build";
    return out;
  }
#endif
  std::string error;
  void* handle = open_library(path, error);
  if (!handle) {
    out.why = "the GPU plugin " + path + " did not load: " + error +
              " (it needs the CUDA runtime and cuDNN 9; build recur with the CUDA toolkit, or point "
              "RECUR_CUDA_PLUGIN at a plugin)";
    return out;
  }
  const recur_gpu_plugin_entry_fn entry = find_entry(handle);
  if (!entry) {
    out.why = path + " is not a recur GPU plugin: it has no " RECUR_GPU_PLUGIN_ENTRY " symbol";
    return out;
  }
  const recur_gpu_plugin* table = entry(RECUR_GPU_PLUGIN_ABI_VERSION);
  if (!table) {
    out.why = path + " refused plugin ABI " RECUR_STR(RECUR_GPU_PLUGIN_ABI_VERSION) +
              std::string(" (it was built for another version of recur); use the plugin from the same build");
    return out;
  }
  if (table->abi_version != RECUR_GPU_PLUGIN_ABI_VERSION || table->struct_size < sizeof(recur_gpu_plugin)) {
    out.why = path + " implements GPU plugin ABI " + std::to_string(table->abi_version) + " (table of " +
              std::to_string(table->struct_size) + " bytes), but this library needs ABI " +
              RECUR_STR(RECUR_GPU_PLUGIN_ABI_VERSION) + " (" + std::to_string(sizeof(recur_gpu_plugin)) +
              " bytes); use the plugin from the same build";
    return out;
  }
  const std::string id = table->build_id ? table->build_id : "";
  if (id != expected_build_id()) {
    out.why = path + " comes from another build of recur (\"" + id + "\"; this library is \"" + expected_build_id() +
              "\"); use the plugin from the same build";
    return out;
  }
  char err[512] = {0};
  std::int32_t count = 0;
  const int rc = table->probe(&count, err, sizeof err);
  if (rc != RECUR_GPU_OK) {
    switch (rc) {
      case RECUR_GPU_ERR_NO_DRIVER: out.why = "no usable NVIDIA driver: " + message_of(err); break;
      case RECUR_GPU_ERR_NO_DEVICE: out.why = "no NVIDIA GPU: " + message_of(err); break;
      case RECUR_GPU_ERR_NO_CUDNN: out.why = "cuDNN 9 is not usable: " + message_of(err); break;
      default: out.why = "the GPU plugin's probe failed: " + message_of(err); break;
    }
    out.table = table;  // loaded and valid, but nothing to run on
    return out;
  }
  if (count <= 0) out.why = "no NVIDIA GPU: the driver reports 0 devices";
  out.table = table;
  out.device_count = count;
  return out;
}

const PluginLoad& plugin() {
  static std::once_flag once;
  static PluginLoad* loaded = nullptr;  // never destroyed: handles may outlive static destruction
  std::call_once(once, [] {
    const char* env = std::getenv("RECUR_CUDA_PLUGIN");
    std::string path;
    if (env && *env) {
      path = env;
    } else {
      const std::string dir = directory_of_this_library();
      path = dir.empty() ? kPluginFile : dir + "/" + kPluginFile;
    }
    loaded = new PluginLoad(load_plugin(path));
    if (loaded->table && loaded->device_count > 0)
      log::write(log::Level::info, "GPU plugin ", path, " loaded: ", loaded->device_count, " CUDA device(s)");
    else
      log::write(log::Level::warning, "GPU: none usable (", loaded->why, "); GPU requests fail and \"auto\" runs on the CPU");
  });
  return *loaded;
}

const recur_gpu_plugin& require_device(int ordinal) {
  const PluginLoad& p = plugin();
  if (!p.table || p.device_count == 0) fail(Error::Code::unsupported, "cuda:", ordinal, ": ", p.why);
  if (ordinal < 0 || ordinal >= p.device_count)
    fail(Error::Code::unsupported, "cuda:", ordinal, ": no such GPU; ", p.device_count, " usable GPU(s): cuda:0",
         p.device_count > 1 ? " to cuda:" + std::to_string(p.device_count - 1) : std::string());
  return *p.table;
}

std::string device_name(int ordinal) {
  const recur_gpu_plugin& t = require_device(ordinal);
  char name[256] = {0};
  if (t.device_name(ordinal, name, sizeof name) != RECUR_GPU_OK) return "cuda:" + std::to_string(ordinal);
  return name;
}

void raise(int code, const char* message, const std::string& context) {
  const std::string text = context + ": " + (message && message[0] ? message : "the GPU plugin failed");
  switch (code) {
    case RECUR_GPU_ERR_OUT_OF_MEMORY: throw std::bad_alloc();
    case RECUR_GPU_ERR_INVALID: fail(Error::Code::invalid_argument, text);
    default: fail(Error::Code::unsupported, text);
  }
}

DeviceBuffer::DeviceBuffer(int ordinal, std::int64_t floats) : floats_(floats), ordinal_(ordinal) {
  char err[512] = {0};
  const int rc = require_device(ordinal).buffer_alloc(ordinal, floats, &handle_, err, sizeof err);
  if (rc != RECUR_GPU_OK) {
    handle_ = nullptr;
    raise(rc, err, "allocating " + std::to_string(floats) + " floats on cuda:" + std::to_string(ordinal));
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (handle_) plugin().table->buffer_free(handle_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : handle_(o.handle_), floats_(o.floats_), ordinal_(o.ordinal_) {
  o.handle_ = nullptr;
  o.floats_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (handle_) plugin().table->buffer_free(handle_);
    handle_ = o.handle_;
    floats_ = o.floats_;
    ordinal_ = o.ordinal_;
    o.handle_ = nullptr;
    o.floats_ = 0;
  }
  return *this;
}

float* DeviceBuffer::data() const { return handle_ ? plugin().table->buffer_device_pointer(handle_) : nullptr; }

void DeviceBuffer::upload(std::int64_t offset, const float* src, std::int64_t floats) {
  char err[512] = {0};
  const int rc = plugin().table->buffer_upload(handle_, offset, src, floats, err, sizeof err);
  if (rc != RECUR_GPU_OK) raise(rc, err, "copying to cuda:" + std::to_string(ordinal_));
}

void DeviceBuffer::download(std::int64_t offset, float* dst, std::int64_t floats) const {
  char err[512] = {0};
  const int rc = plugin().table->buffer_download(handle_, offset, dst, floats, err, sizeof err);
  if (rc != RECUR_GPU_OK) raise(rc, err, "copying from cuda:" + std::to_string(ordinal_));
}

}  // namespace recur::gpu
