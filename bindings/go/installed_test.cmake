# SPDX-License-Identifier: Apache-2.0
# ctest go_installed: install librecur and the Go module into a scratch prefix with the project's
# own install rules, then build the Go example against that installed copy (cgo finds recur
# through `#cgo pkg-config: recur`) and run it.
# Arguments: PREFIX BUILD_DIR GO EXAMPLE_SRC MODELS DATADIR LIBDIR GOCACHE GOPATH
file(REMOVE_RECURSE ${PREFIX})
foreach(dir c_api bindings/go)
  execute_process(COMMAND ${CMAKE_COMMAND} -DCMAKE_INSTALL_PREFIX=${PREFIX}
                          -P ${BUILD_DIR}/${dir}/cmake_install.cmake
                  RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install of ${dir} into ${PREFIX} failed (${rc})")
  endif()
endforeach()

# recur.pc is used as installed: it names its prefix relative to its own folder, so the scratch
# prefix needs no rewriting (a build configured for /usr/local installed into ${PREFIX}).
set(module ${PREFIX}/${DATADIR}/recur/go/recur)
set(example ${PREFIX}/example)
file(MAKE_DIRECTORY ${example})
file(COPY ${EXAMPLE_SRC}/main.go ${EXAMPLE_SRC}/go.mod DESTINATION ${example})
set(env ${CMAKE_COMMAND} -E env GOPROXY=off GOFLAGS=-mod=mod CGO_ENABLED=1 GOCACHE=${GOCACHE} GOPATH=${GOPATH}
    PKG_CONFIG_PATH=${PREFIX}/${LIBDIR}/pkgconfig --unset=CGO_CFLAGS
    "CGO_LDFLAGS=-Wl,-rpath,${PREFIX}/${LIBDIR}")
execute_process(COMMAND ${GO} mod edit -replace=recur.dev/recur=${module} WORKING_DIRECTORY ${example}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "go mod edit failed (${rc})")
endif()
execute_process(COMMAND ${env} ${GO} build -o recur-example-go . WORKING_DIRECTORY ${example} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "go build of the example against the installed module and library failed (${rc})")
endif()
execute_process(COMMAND ${example}/recur-example-go ${MODELS} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the example built against the installed library failed (${rc})")
endif()
