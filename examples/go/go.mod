module recur.dev/recur/examples/go

go 1.19

require recur.dev/recur v0.1.0

// The binding module is assembled by the CMake build (bindings/go, with the SWIG-generated
// wrapper) and installed to <prefix>/share/recur/go/recur. Point this at either; the build's ctest
// rewrites it to its own build tree.
replace recur.dev/recur => ../../build/bindings/go/module
