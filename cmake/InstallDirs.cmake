# SPDX-License-Identifier: Apache-2.0
# Install folders: GNUInstallDirs, with Debian's multiarch library folder (lib/x86_64-linux-gnu)
# under every prefix on Debian and its derivatives, not only under /usr. The .deb packages need it
# (cpack installs with the folders this build was configured with), and one layout for every
# prefix keeps recur.pc, the CMake package and the RUNPATHs the same in a scratch prefix and in the
# packages. /usr/local/lib/<multiarch> is on Debian's loader and pkg-config paths too.
# -DCMAKE_INSTALL_LIBDIR=lib chooses the plain folder.
if(NOT DEFINED CMAKE_INSTALL_LIBDIR AND NOT CMAKE_CROSSCOMPILING AND CMAKE_LIBRARY_ARCHITECTURE
   AND EXISTS /etc/debian_version)
  set(CMAKE_INSTALL_LIBDIR "lib/${CMAKE_LIBRARY_ARCHITECTURE}" CACHE PATH "Object code libraries (LIBDIR)")
endif()
include(GNUInstallDirs)
