// SPDX-License-Identifier: Apache-2.0
// Finds and loads the binding's native libraries (librecur_csharp.so, the SWIG glue, and the
// librecur.so.0 it needs) before the first P/Invoke, so that a missing library is reported as one
// RecurNativeLoadException that names it, every place searched and what to do, instead of a
// DllNotFoundException for the wrong file wrapped in two TypeInitializationExceptions.
//
// The libraries are loaded by full path with dlopen. mono then resolves [DllImport] to the copy
// already loaded (librecur_csharp.so has its file name as SONAME); .NET Core 3+ is given a
// DllImport resolver (NativeLibrary.SetDllImportResolver, found by reflection, as the assembly is
// built for the .NET Framework profile) that returns the same handle.
using System;
using System.Collections.Generic;
using System.IO;
using System.Reflection;
using System.Runtime.InteropServices;
using System.Text;

namespace Recur {

/// <summary>The binding's native libraries could not be loaded. <see cref="MissingLibrary"/> is the
/// file that was not found or not loadable; the message also lists every place searched and what
/// to do.</summary>
public sealed class RecurNativeLoadException : DllNotFoundException {
  /// <summary>"librecur.so.0" or "librecur_csharp.so".</summary>
  public string MissingLibrary { get; private set; }
  /// <summary>Each place searched, with what was found there.</summary>
  public IList<string> Searched { get; private set; }

  internal RecurNativeLoadException(string missingLibrary, IList<string> searched, string message) : base(message) {
    MissingLibrary = missingLibrary;
    Searched = searched;
  }
}

/// <summary>Loads the native libraries; every entry point of the binding calls it first. Search
/// order: each folder of the environment variable RECUR_LIBRARY_PATH (':'-separated), the folder
/// of Recur.dll, the application's folder and its runtimes/linux-x64/native, then the system
/// loader's own search (LD_LIBRARY_PATH, the ldconfig cache, /lib and /usr/lib).</summary>
public static class NativeLoader {
  /// <summary>The environment variable naming folders to search first.</summary>
  public const string PathVariable = "RECUR_LIBRARY_PATH";
  /// <summary>The SWIG glue that the [DllImport]s name.</summary>
  public const string GlueLibrary = "librecur_csharp.so";
  /// <summary>The recur C library the glue is linked against.</summary>
  public const string CoreLibrary = "librecur.so.0";

  const int RTLD_NOW = 2;
  const int RTLD_GLOBAL = 0x100;
  static readonly object gate = new object();
  static volatile bool loaded;
  static IntPtr glueHandle;

  [DllImport("libdl.so.2", EntryPoint = "dlopen")]
  static extern IntPtr DlOpen(string file, int mode);
  [DllImport("libdl.so.2", EntryPoint = "dlerror")]
  static extern IntPtr DlError();

  /// <summary>Where librecur_csharp.so was loaded from ("" before loading, or when the runtime
  /// loads it itself, as on Windows).</summary>
  public static string LoadedFrom { get; private set; }

  /// <summary>Loads the native libraries once; later calls return at once. Throws
  /// RecurNativeLoadException when they cannot be found or loaded (and tries again on the next
  /// call, so that a program may fix RECUR_LIBRARY_PATH and retry).</summary>
  public static void Load() {
    if (loaded) return;
    lock (gate) {
      if (loaded) return;
      LoadedFrom = "";
      // Only Linux builds ship these files; elsewhere the runtime's own search applies.
      if (Environment.OSVersion.Platform == PlatformID.Unix && Directory.Exists("/proc")) LoadLinux();
      loaded = true;
    }
  }

  // For the entry points' expressions (constructor initialisers): loads, then returns true.
  internal static bool Ensure() {
    Load();
    return true;
  }

  static string Error() {
    IntPtr p = DlError();
    return p == IntPtr.Zero ? "unknown dlopen error" : Marshal.PtrToStringAnsi(p);
  }

  static List<KeyValuePair<string, string>> Folders() {
    var folders = new List<KeyValuePair<string, string>>();
    string env = Environment.GetEnvironmentVariable(PathVariable);
    if (!string.IsNullOrEmpty(env))
      foreach (string dir in env.Split(':'))
        if (dir.Length > 0) folders.Add(new KeyValuePair<string, string>(dir, PathVariable));
    string assembly = typeof(NativeLoader).Assembly.Location;
    if (!string.IsNullOrEmpty(assembly))
      folders.Add(new KeyValuePair<string, string>(Path.GetDirectoryName(Path.GetFullPath(assembly)), "the folder of Recur.dll"));
    string app = AppDomain.CurrentDomain.BaseDirectory;
    if (!string.IsNullOrEmpty(app)) {
      folders.Add(new KeyValuePair<string, string>(app, "the application's folder"));
      folders.Add(new KeyValuePair<string, string>(Path.Combine(app, "runtimes", "linux-x64", "native"),
                                                   "the application's runtimes/linux-x64/native"));
    }
    // The same folder reached twice is searched once.
    var seen = new HashSet<string>();
    var unique = new List<KeyValuePair<string, string>>();
    foreach (var f in folders) {
      string full = Path.GetFullPath(f.Key).TrimEnd('/');
      if (seen.Add(full)) unique.Add(new KeyValuePair<string, string>(full, f.Value));
    }
    return unique;
  }

  static void LoadLinux() {
    // Binds the dlerror P/Invoke now: binding it later would run dlsym, which clears the message
    // of the dlopen that failed.
    DlError();
    var searched = new List<string>();
    var folders = Folders();
    if (Environment.GetEnvironmentVariable(PathVariable) == null) searched.Add(PathVariable + ": not set");
    string missing = GlueLibrary, failedGlue = null, failure = null;

    // librecur.so.0 from a RECUR_LIBRARY_PATH folder first: the glue's dependency then resolves
    // to it whichever folder the glue comes from.
    foreach (var f in folders) {
      string core = Path.Combine(f.Key, CoreLibrary);
      if (f.Value == PathVariable && File.Exists(core) && DlOpen(core, RTLD_NOW | RTLD_GLOBAL) == IntPtr.Zero)
        searched.Add(core + " (" + PathVariable + "): found, but loading it failed: " + Error());
    }
    foreach (var f in folders) {
      string glue = Path.Combine(f.Key, GlueLibrary);
      string where = f.Key + " (" + f.Value + ")";
      if (!File.Exists(glue)) {
        searched.Add(where + ": no " + GlueLibrary);
        continue;
      }
      IntPtr handle = DlOpen(glue, RTLD_NOW);
      if (handle != IntPtr.Zero) {
        Loaded(handle, glue);
        return;
      }
      string why = Error();
      searched.Add(where + ": " + GlueLibrary + " found, but loading it failed: " + why);
      if (failedGlue == null) {
        failedGlue = glue;
        failure = why;
        if (why.Contains(CoreLibrary)) missing = CoreLibrary;
      }
    }
    IntPtr system = DlOpen(GlueLibrary, RTLD_NOW);
    if (system != IntPtr.Zero) {
      Loaded(system, GlueLibrary + " (system loader)");
      return;
    }
    string systemWhy = Error();
    searched.Add("the system loader's search path (LD_LIBRARY_PATH, /etc/ld.so.cache, /lib, /usr/lib): " + systemWhy);
    if (failedGlue == null && systemWhy.Contains(CoreLibrary)) {
      missing = CoreLibrary;
      failure = systemWhy;
    }
    throw new RecurNativeLoadException(missing, searched.AsReadOnly(), Message(missing, failedGlue, failure, searched));
  }

  static string Message(string missing, string failedGlue, string failure, List<string> searched) {
    var m = new StringBuilder();
    m.Append("Recur could not load its native library: ").Append(missing);
    if (missing == CoreLibrary) {
      m.Append(" was not found. ").Append(GlueLibrary).Append(" (the binding's glue)");
      if (failedGlue != null) m.Append(" is at ").Append(failedGlue);
      m.Append(", but the loader could not find ").Append(CoreLibrary).Append(", which it needs (").Append(failure).Append(").");
    } else {
      m.Append(" was not found in any of the places below.");
    }
    m.Append("\nSearched, in order:");
    for (int i = 0; i < searched.Count; ++i) m.Append("\n  ").Append(i + 1).Append(". ").Append(searched[i]);
    m.Append("\nTo fix it: put ").Append(GlueLibrary).Append(" and ").Append(CoreLibrary)
     .Append(" beside Recur.dll (as the NuGet package's runtimes/linux-x64/native files are copied beside an application), or set ")
     .Append(PathVariable).Append(" to the folder that holds them, or install the librecur0 and librecur-cil packages")
     .Append(" (or copy ").Append(CoreLibrary).Append(" into a folder the loader searches and run ldconfig).");
    return m.ToString();
  }

  static void Loaded(IntPtr handle, string from) {
    glueHandle = handle;
    LoadedFrom = from;
    RegisterResolver();
  }

  // .NET Core 3+: [DllImport("librecur_csharp")] resolves to the handle loaded here. mono has no
  // NativeLibrary; it finds the loaded copy by its SONAME.
  static void RegisterResolver() {
    Type nativeLibrary = Type.GetType("System.Runtime.InteropServices.NativeLibrary");
    Type resolverType = Type.GetType("System.Runtime.InteropServices.DllImportResolver");
    if (nativeLibrary == null || resolverType == null) return;
    MethodInfo set = nativeLibrary.GetMethod("SetDllImportResolver", new[] { typeof(Assembly), resolverType });
    MethodInfo resolve = typeof(NativeLoader).GetMethod("Resolve", BindingFlags.NonPublic | BindingFlags.Static);
    if (set == null || resolve == null) return;
    try {
      set.Invoke(null, new object[] { typeof(NativeLoader).Assembly, Delegate.CreateDelegate(resolverType, resolve) });
    } catch (TargetInvocationException) {
      // A resolver was set already (by the application): it decides.
    }
  }

  static IntPtr Resolve(string name, Assembly assembly, DllImportSearchPath? searchPath) {
    return name == "librecur_csharp" || name == "recur_csharp" || name == GlueLibrary ? glueHandle : IntPtr.Zero;
  }
}

}
