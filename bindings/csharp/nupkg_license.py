# SPDX-License-Identifier: Apache-2.0
"""Puts the <license> element back into a .nupkg's .nuspec: nuget 2.8 (Debian's) refuses to pack
a nuspec that has one, and newer NuGet clients read the licence from it.

Usage: nupkg_license.py PACKAGE.nupkg FULL.nuspec
FULL.nuspec is the configured nuspec, <license> line included; the packed nuspec gets that line
inserted before its <licenseUrl>. The package is rewritten in place.
"""
import re
import sys
import zipfile


def main(package, full_nuspec):
    with open(full_nuspec, encoding="utf-8") as f:
        m = re.search(r"^\s*<license [^\n]*</license>\n", f.read(), re.M)
    if not m:
        sys.exit(f"error: {full_nuspec} has no <license ...>...</license> line")
    license_line = m.group(0)
    with zipfile.ZipFile(package) as z:
        entries = [(info, z.read(info.filename)) for info in z.infolist()]
    out = []
    for info, data in entries:
        if info.filename.endswith(".nuspec"):
            text = data.decode("utf-8")
            if "<license " not in text:
                if "<licenseUrl>" not in text:
                    sys.exit(f"error: the nuspec in {package} has no <licenseUrl> to put <license> before")
                text = re.sub(r"(\s*)<licenseUrl>", lambda g: "\n" + license_line.rstrip("\n") + g.group(1) + "<licenseUrl>", text, count=1)
            data = text.encode("utf-8")
        out.append((info, data))
    with zipfile.ZipFile(package, "w", zipfile.ZIP_DEFLATED) as z:
        for info, data in out:
            z.writestr(info, data)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
