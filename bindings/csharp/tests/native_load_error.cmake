# SPDX-License-Identifier: Apache-2.0
# ctest csharp_native_load_error: what a C# program sees when a native library is missing.
# An application folder is made from the package folder (OUT) without librecur.so.0, then without
# librecur_csharp.so; each run must fail with one Recur.RecurNativeLoadException that names the
# missing file, lists the places searched and says what to do (and no TypeInitializationException).
# Then RECUR_LIBRARY_PATH must make both work: naming a folder that holds librecur.so.0 for the
# first, and one that holds both libraries for the second (the glue is then loaded from there).
# Arguments: OUT (Recur.dll, librecur_csharp.so, librecur.so.0, RecurExample.exe), WORK, MONO, MODELS
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/no-core ${WORK}/no-glue ${WORK}/lib ${WORK}/native)
file(COPY ${OUT}/Recur.dll ${OUT}/librecur_csharp.so ${OUT}/RecurExample.exe DESTINATION ${WORK}/no-core)
file(COPY ${OUT}/Recur.dll ${OUT}/RecurExample.exe DESTINATION ${WORK}/no-glue)
file(COPY ${OUT}/librecur.so.0 DESTINATION ${WORK}/lib)
file(COPY ${OUT}/librecur.so.0 ${OUT}/librecur_csharp.so DESTINATION ${WORK}/native)

function(expect_failure dir missing)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH --unset=RECUR_LIBRARY_PATH
                          ${MONO} ${dir}/RecurExample.exe ${MODELS}
                  WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(APPEND out "${err}")
  message(STATUS "${dir} (exit ${rc}):\n${out}")
  if(rc EQUAL 0)
    message(FATAL_ERROR "RecurExample.exe ran in ${dir}, which has no ${missing}")
  endif()
  foreach(want "Recur.RecurNativeLoadException" "Recur could not load its native library: ${missing}"
               "Searched, in order:" "RECUR_LIBRARY_PATH: not set" "${dir} (the folder of Recur.dll)"
               "the system loader's search path" "To fix it:")
    string(FIND "${out}" "${want}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "the error for a missing ${missing} lacks \"${want}\"")
    endif()
  endforeach()
  string(FIND "${out}" "TypeInitializationException" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "the error for a missing ${missing} is wrapped in a TypeInitializationException")
  endif()
endfunction()

expect_failure(${WORK}/no-core librecur.so.0)
expect_failure(${WORK}/no-glue librecur_csharp.so)

function(expect_success dir library_path)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH RECUR_LIBRARY_PATH=${library_path}
                          ${MONO} ${dir}/RecurExample.exe ${MODELS}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "example finished")
    message(FATAL_ERROR "${dir} with RECUR_LIBRARY_PATH=${library_path}: the example failed (${rc}):\n${out}${err}")
  endif()
  message(STATUS "${dir} with RECUR_LIBRARY_PATH=${library_path}: example finished")
endfunction()

expect_success(${WORK}/no-core ${WORK}/lib)
expect_success(${WORK}/no-glue ${WORK}/native)
