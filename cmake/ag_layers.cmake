# The folders are layers: graph <- {ipc, cuda} <- actors <- apps and tests. With the repository's
# root on a compiler's include path nothing would stop a file from including a folder above its own,
# so each layer compiles against an include root of its own, made at configure time, that holds
# only that layer and, through the layers it links, those below it: an include that goes the wrong
# way does not compile ("No such file"). cmake/check_includes.cmake checks the same rules, and that
# no include cycle exists, on every build.
#
#   ${PROJECT_BINARY_DIR}/layers/NAME/NAME       -> ${PROJECT_SOURCE_DIR}/NAME
#   ${PROJECT_BINARY_DIR}/layers/NAME/actorgraph/H -> ${PROJECT_SOURCE_DIR}/include/actorgraph/H,
#                                                    for each public header H the layer implements
#
# The INTERFACE target ag-layer-NAME carries that root, the ag-layer targets of the layers below
# and the layer's external libraries; a library of the layer links it PRIVATE (ag_layer_library).
#
# cmake/check_includes.cmake reads this file in script mode: everything outside the functions is
# data.

set(ag_layers graph ipc cuda actors)
set(ag_layer_below_graph "")
set(ag_layer_below_ipc graph)
set(ag_layer_below_cuda graph)
set(ag_layer_below_actors graph ipc cuda)
# Which layer each public header of include/actorgraph/ belongs to: the one that implements it.
set(ag_layer_headers_graph collectives.hpp device.hpp dtype.hpp error.hpp graph_option.hpp interrupt.hpp node.hpp ops.hpp
                           tensor.hpp)
set(ag_layer_headers_ipc "")
set(ag_layer_headers_cuda "")
set(ag_layer_headers_actors runtime.hpp stop_signals.hpp actorgraph.hpp)
# Above every layer, in this order (tests may include apps, not the other way).
set(ag_top_folders apps python tests)
# What check_includes.cmake reads: these folders' sources, but for the trees of tests/layers/ that
# break the rules on purpose.
set(ag_checked_folders ${ag_layers} include ${ag_top_folders})
set(ag_checked_extensions hpp cpp h cu cuh)
set(ag_checked_exclude tests/layers)

# The globbing patterns of the checked files under `root`.
function(ag_checked_globs root out)
  set(globs)
  foreach(folder IN LISTS ag_checked_folders)
    foreach(ext IN LISTS ag_checked_extensions)
      list(APPEND globs ${root}/${folder}/*.${ext})
    endforeach()
  endforeach()
  set(${out} ${globs} PARENT_SCOPE)
endfunction()

# Makes the include root of layer `name` and its INTERFACE target ag-layer-NAME, which links the
# layers below it and the libraries after LIBS.
function(ag_add_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "LIBS")
  set(root ${PROJECT_BINARY_DIR}/layers/${name})
  file(MAKE_DIRECTORY ${root}/actorgraph)
  set(links ${name})
  set(targets ${PROJECT_SOURCE_DIR}/${name})
  foreach(header IN LISTS ag_layer_headers_${name})
    list(APPEND links actorgraph/${header})
    list(APPEND targets ${PROJECT_SOURCE_DIR}/include/actorgraph/${header})
  endforeach()
  # Links of headers the layer no longer has go; the others are made once.
  file(GLOB existing LIST_DIRECTORIES true RELATIVE ${root} ${root}/* ${root}/actorgraph/*)
  foreach(link IN LISTS existing)
    if(NOT link IN_LIST links AND NOT link STREQUAL "actorgraph")
      file(REMOVE ${root}/${link})
    endif()
  endforeach()
  foreach(link target IN ZIP_LISTS links targets)
    if(IS_SYMLINK ${root}/${link})
      file(READ_SYMLINK ${root}/${link} current)
      if(current STREQUAL target)
        continue()
      endif()
    endif()
    file(CREATE_LINK ${target} ${root}/${link} SYMBOLIC)
  endforeach()

  add_library(ag-layer-${name} INTERFACE)
  target_include_directories(ag-layer-${name} INTERFACE ${root})
  list(TRANSFORM ag_layer_below_${name} PREPEND ag-layer- OUTPUT_VARIABLE below)
  target_link_libraries(ag-layer-${name} INTERFACE ${below} ${arg_LIBS})
endfunction()

# A library of layer `name`'s sources: it sees that layer and those below, warns, and is compiled
# once the includes are checked.
function(ag_layer_library target name)
  target_link_libraries(${target} PRIVATE ag-layer-${name})
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
  add_dependencies(${target} ag-check-includes)
endfunction()

# ag-check-includes (part of ALL): runs cmake/check_includes.cmake whenever a checked file, the
# script or this table changes; a wrong-way include or an include cycle fails the build.
function(ag_add_include_check)
  ag_checked_globs(${PROJECT_SOURCE_DIR} globs)
  file(GLOB_RECURSE checked CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR} ${globs})
  foreach(exclude IN LISTS ag_checked_exclude)
    list(FILTER checked EXCLUDE REGEX "^${exclude}/")
  endforeach()
  list(TRANSFORM checked PREPEND ${PROJECT_SOURCE_DIR}/)
  set(stamp ${PROJECT_BINARY_DIR}/check_includes.stamp)
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DAG_SOURCE_DIR=${PROJECT_SOURCE_DIR} -DAG_STAMP=${stamp}
            -P ${PROJECT_SOURCE_DIR}/cmake/check_includes.cmake
    DEPENDS ${checked} ${PROJECT_SOURCE_DIR}/cmake/check_includes.cmake
            ${PROJECT_SOURCE_DIR}/cmake/ag_layers.cmake
    COMMENT "Checking the layers' includes and include cycles"
    VERBATIM)
  add_custom_target(ag-check-includes ALL DEPENDS ${stamp})
endfunction()
