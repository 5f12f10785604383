# Installs the build into a fresh prefix, configures and builds tests/install/example against it
# with find_package(actorgraph CONFIG REQUIRED), and runs the result.
file(REMOVE_RECURSE "${AG_WORK_DIR}")
set(prefix "${AG_WORK_DIR}/prefix")
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
step(${CMAKE_COMMAND} --install "${AG_BUILD_DIR}" --prefix "${prefix}")
foreach(program ag-demo ag-runner)
  if(NOT EXISTS "${prefix}/bin/${program}")
    message(FATAL_ERROR "${program} was not installed into ${prefix}/bin")
  endif()
endforeach()
step(${CMAKE_COMMAND} -S "${AG_EXAMPLE_DIR}" -B "${AG_WORK_DIR}/build" -G "${AG_GENERATOR}"
     "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_BUILD_TYPE=Release
     # A sanitized build's library needs its runtime in the program too.
     "-DCMAKE_CXX_FLAGS=${AG_EXAMPLE_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${AG_EXAMPLE_FLAGS}")
step(${CMAKE_COMMAND} --build "${AG_WORK_DIR}/build")
step("${AG_WORK_DIR}/build/example")
step("${prefix}/bin/ag-demo" --devices=sim:0)
file(REMOVE_RECURSE "${AG_WORK_DIR}")
