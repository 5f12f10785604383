# An include from the graph layer up to the actors must not compile: graph_only.cpp compiles with the
# graph layer's include directories alone, and fails for want of actors/executor.hpp once it
# includes it (a failure for another reason does not pass).
#   cmake -DAG_CXX=<compiler> -DAG_INCLUDES=<dir|dir...> -DAG_SOURCE=graph_only.cpp -P compile_upward_test.cmake
string(REPLACE "|" ";" dirs "${AG_INCLUDES}")
list(TRANSFORM dirs PREPEND -I)
list(JOIN dirs " " shown)
function(compile result output)
  execute_process(COMMAND ${AG_CXX} -std=c++17 -fsyntax-only ${dirs} ${ARGN} ${AG_SOURCE}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(${result} ${rc} PARENT_SCOPE)
  set(${output} "${out}" PARENT_SCOPE)
endfunction()

compile(rc out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${AG_SOURCE} does not compile with the graph layer's include root (${shown}):\n${out}")
endif()
compile(rc out -DAG_INCLUDE_UPWARD)
if(rc EQUAL 0)
  message(FATAL_ERROR "actors/executor.hpp was found with the graph layer's include root (${shown})")
endif()
# g++ says "actors/executor.hpp: No such file or directory", clang++ "'actors/executor.hpp' file not found".
if(NOT out MATCHES "actors/executor\\.hpp: No such file" AND NOT out MATCHES "'actors/executor\\.hpp' file not found")
  message(FATAL_ERROR "${AG_SOURCE} failed to compile, but not for want of actors/executor.hpp:\n${out}")
endif()
message(STATUS "actors/executor.hpp is not found from the graph layer, as expected:\n${out}")
