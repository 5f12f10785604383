# Runs cmake/check_includes.cmake on a tree of this folder that breaks the rules on purpose and
# checks that it fails, naming exactly what is wrong (a failure for another reason does not pass).
#   cmake -DAG_CHECKER=<check_includes.cmake> -DAG_TREE=<cycle|upward tree> -P check_includes_test.cmake
get_filename_component(tree_name ${AG_TREE} NAME)
if(tree_name STREQUAL "cycle")
  # graph/device.cpp includes the cycle without being part of it.
  set(expected
    "1 include problem(s)"
    "include cycle: include/actorgraph/device.hpp -> graph/op.hpp -> include/actorgraph/tensor.hpp -> include/actorgraph/device.hpp")
elseif(tree_name STREQUAL "upward")
  # The allowed includes (actors -> cuda, a layer's own, cuda -> the graph layer's public headers)
  # are not reported.
  set(expected
    "4 include problem(s)"
    "layering: graph/device.cpp includes actors/executor.hpp: graph may include only graph"
    "layering: ipc/wire.cpp includes cuda/kernel_stream.hpp: ipc may include only ipc, graph"
    "layering: include/actorgraph/tensor.hpp includes include/actorgraph/runtime.hpp: graph may include only graph"
    "include/actorgraph/extra.hpp belongs to no layer")
else()
  message(FATAL_ERROR "no expectations for the tree ${AG_TREE}")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -DAG_SOURCE_DIR=${AG_TREE} -P ${AG_CHECKER}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "check_includes.cmake passed ${AG_TREE}, which breaks the rules:\n${out}")
endif()
foreach(line IN LISTS expected)
  string(FIND "${out}" "${line}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "check_includes.cmake failed on ${AG_TREE} without saying\n  ${line}\n"
                        "It said:\n${out}")
  endif()
endforeach()
message(STATUS "check_includes.cmake failed on ${tree_name} as expected:\n${out}")
