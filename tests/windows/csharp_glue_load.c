/* SPDX-License-Identifier: Apache-2.0 */
/* The C# binding's native glue built for Windows (librecur_csharp.dll, the name Recur.dll's
 * DllImport asks for) loads beside recur.dll, and a call through it reaches recur: the version
 * it returns is recur.dll's own. Run under wine by scripts/cross.sh windows; there is no
 * Windows .NET runtime there to load Recur.dll itself. */
#include <stdio.h>
#include <windows.h>

#include "recur/recur.h"

typedef unsigned int(__stdcall* version_fn)(void);

int main(void) {
  HMODULE glue = LoadLibraryA("librecur_csharp.dll");
  if (!glue) {
    fprintf(stderr, "librecur_csharp.dll did not load (error %lu)\n", (unsigned long)GetLastError());
    return 1;
  }
  version_fn version = (version_fn)(void (*)(void))GetProcAddress(glue, "CSharp_Recur_recur_binding_version_number");
  if (!version) {
    fprintf(stderr, "librecur_csharp.dll exports no CSharp_Recur_recur_binding_version_number\n");
    return 1;
  }
  const unsigned int through_glue = version(), direct = recur_version_number();
  printf("librecur_csharp.dll: version %u through the glue, %u from recur.dll\n", through_glue, direct);
  if (through_glue != direct || direct == 0) {
    fprintf(stderr, "the glue does not reach recur.dll\n");
    return 1;
  }
  FreeLibrary(glue);
  printf("C# native glue for Windows: ok\n");
  return 0;
}
