# SPDX-License-Identifier: Apache-2.0
# The Python binding's tests (included by CMakeLists.txt here), label `python`:
#   python_<name>            one per bindings/python/tests/test_<name>.py: pytest on the build
#                            tree's package (PYTHONPATH=${CMAKE_CURRENT_BINARY_DIR}); skipped, saying
#                            why, when RECUR_PYTHON_TEST_EXECUTABLE lacks pytest or NumPy
#   python_types             mypy over the package (annotations against the extension's stubs)
#   python_wheel_fresh_venv  scripts/python-wheel.sh --check: the wheel built from this build tree,
#                            installed with NumPy alone (from PyPI) into a fresh venv, predicting
#                            the bundled model from a folder outside the source tree
# RECUR_PYTHON_TEST_EXECUTABLE must be the Python the extension is built for (Python3_EXECUTABLE)
# or a venv made from it: scripts/test.sh makes build/python-venv with NumPy and pytest.
if(NOT RECUR_BUILD_TESTS)
  return()
endif()
set(RECUR_PYTHON_TEST_EXECUTABLE "${Python3_EXECUTABLE}" CACHE FILEPATH
  "The Python that runs the Python binding's tests (with NumPy and pytest; of the version of Python3_EXECUTABLE)")

file(GLOB RP_TEST_FILES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_*.py)
foreach(test_file IN LISTS RP_TEST_FILES)
  get_filename_component(stem ${test_file} NAME_WE)
  string(REGEX REPLACE "^test_" "" stem ${stem})
  add_test(NAME python_${stem}
    COMMAND ${RECUR_PYTHON_TEST_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/run_tests.py ${test_file}
            ${Python3_SOABI}
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(python_${stem} PROPERTIES
    LABELS python
    SKIP_RETURN_CODE 77
    TIMEOUT 300
    ENVIRONMENT "PYTHONPATH=${CMAKE_CURRENT_BINARY_DIR};PYTHONDONTWRITEBYTECODE=1;RECUR_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endforeach()

# The package's annotations and the extension's stubs (_native.pyi) agree: mypy over the package.
add_test(NAME python_types
  COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${CMAKE_CURRENT_BINARY_DIR}
          ${RECUR_PYTHON_TEST_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/run_tests.py --mypy ${CMAKE_CURRENT_BINARY_DIR}/recur
          ${Python3_SOABI})
set_tests_properties(python_types PROPERTIES LABELS python SKIP_RETURN_CODE 77 TIMEOUT 300)

# Reuses this build tree (RECUR_PYTHON_BUILD_DIR): only the wheel, the venv and NumPy's install take time.
add_test(NAME python_wheel_fresh_venv
  COMMAND ${PROJECT_SOURCE_DIR}/scripts/python-wheel.sh --check --python ${RECUR_PYTHON_TEST_EXECUTABLE}
          --build-dir ${CMAKE_BINARY_DIR} --out ${CMAKE_CURRENT_BINARY_DIR}/wheel)
set_tests_properties(python_wheel_fresh_venv PROPERTIES
  LABELS "python;packaging"
  SKIP_RETURN_CODE 77
  TIMEOUT 600)
