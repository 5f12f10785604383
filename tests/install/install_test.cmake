# Installs the build into a fresh prefix, configures and builds tests/install/example against it
# with find_package(actorgraph CONFIG REQUIRED), and runs the result; with AG_PYTHON, imports the
# installed Python package and runs it.
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
# The Python package from the prefix alone: its module, its library and its ag-runner.
if(AG_PYTHON)
  step(${CMAKE_COMMAND} -E env "PYTHONPATH=${prefix}/${AG_PYTHON_DIR}" --unset=AG_RUNNER
       ${AG_PYTHON} -c "import actorgraph as ag, os
assert ag.__file__.startswith('${prefix}/'), ag.__file__
with ag.Runtime(devices='sim:0', per_device_per_process=True) as rt:
    assert (rt.tensor([1.0, 2.0], device='sim:0') + 1).numpy().tolist() == [2.0, 3.0]
print('the installed actorgraph package runs in process mode')")
endif()
file(REMOVE_RECURSE "${AG_WORK_DIR}")
