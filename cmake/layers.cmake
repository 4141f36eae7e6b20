# The layer targets, from the table in cmake/layers.txt (which tests/layers.py checks the
# includes against, so the links and the test cannot disagree).
#
#   faultline_read_layers()         reads the table: FAULTLINE_LAYERS, FAULTLINE_LAYER_<name>_PATHS,
#                                   FAULTLINE_LAYER_<name>_USES, FAULTLINE_LAYER_FOLDERS
#   faultline_layer(NAME SOURCES)   adds sources to the static library layer_NAME, made on first
#                                   use and linked PUBLIC to the layers NAME uses; every source
#                                   must belong to NAME by the table
#   faultline_finish_layers()       makes an INTERFACE target for each layer no folder gave sources
#
# Layers in FAULTLINE_WHOLE_ARCHIVE_LAYERS are linked whole: the policies register themselves by
# static initialisers, which the linker would drop from a plain static library. The config
# sections (FAULTLINE_REGISTER_SCHEMA) register so too, each in a file that other code
# references, so the linker keeps it; a section in a file nothing references would vanish from
# `faultline config schema`, and the doc_tables test would fail on its README table.

set(FAULTLINE_WHOLE_ARCHIVE_LAYERS policies)

macro(faultline_read_layers)
  set(_table ${CMAKE_SOURCE_DIR}/cmake/layers.txt)
  set_property(DIRECTORY ${CMAKE_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_table})
  file(STRINGS ${_table} _lines)
  set(FAULTLINE_LAYERS)
  set(FAULTLINE_LAYER_FOLDERS)
  foreach(_line IN LISTS _lines)
    string(REGEX REPLACE "#.*" "" _line "${_line}")
    string(STRIP "${_line}" _line)
    if(_line STREQUAL "")
      continue()
    endif()
    if(NOT _line MATCHES "^([a-z_]+)[ \t]+([^:]+):(.*)$")
      message(FATAL_ERROR "cmake/layers.txt: cannot read the line \"${_line}\"")
    endif()
    set(_name ${CMAKE_MATCH_1})
    separate_arguments(_paths UNIX_COMMAND "${CMAKE_MATCH_2}")
    separate_arguments(_uses UNIX_COMMAND "${CMAKE_MATCH_3}")
    foreach(_use IN LISTS _uses)
      if(NOT _use IN_LIST FAULTLINE_LAYERS)
        message(FATAL_ERROR "cmake/layers.txt: layer ${_name} uses ${_use}, "
                            "which is not a layer listed above it")
      endif()
    endforeach()
    list(APPEND FAULTLINE_LAYERS ${_name})
    set(FAULTLINE_LAYER_${_name}_PATHS ${_paths})
    set(FAULTLINE_LAYER_${_name}_USES ${_uses})
    foreach(_path IN LISTS _paths)
      if(NOT _path MATCHES "[*]" AND IS_DIRECTORY ${CMAKE_SOURCE_DIR}/${_path})
        list(APPEND FAULTLINE_LAYER_FOLDERS ${_path})
      endif()
    endforeach()
  endforeach()
endmacro()

# The layer a file belongs to: the one with the longest path that matches it.
function(faultline_layer_of file out)
  file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${file})
  set(best "")
  set(best_length -1)
  foreach(layer IN LISTS FAULTLINE_LAYERS)
    foreach(path IN LISTS FAULTLINE_LAYER_${layer}_PATHS)
      string(REPLACE "." "\\." pattern "${path}")
      string(REPLACE "*" "[^/]*" pattern "${pattern}")
      string(LENGTH "${path}" length)
      if((rel MATCHES "^${pattern}$" OR rel MATCHES "^${pattern}/") AND length GREATER best_length)
        set(best ${layer})
        set(best_length ${length})
      endif()
    endforeach()
  endforeach()
  set(${out} "${best}" PARENT_SCOPE)
endfunction()

function(faultline_layer_link_item layer out)
  if(layer IN_LIST FAULTLINE_WHOLE_ARCHIVE_LAYERS)
    set(${out} "$<LINK_LIBRARY:WHOLE_ARCHIVE,layer_${layer}>" PARENT_SCOPE)
  else()
    set(${out} layer_${layer} PARENT_SCOPE)
  endif()
endfunction()

# Links TARGET to the layers that LAYER uses (for a target built in LAYER's folders that is not
# its library: the `faultline` executable).
function(faultline_link_uses target scope layer)
  foreach(use IN LISTS FAULTLINE_LAYER_${layer}_USES)
    faultline_layer_link_item(${use} item)
    target_link_libraries(${target} ${scope} ${item})
  endforeach()
endfunction()

function(faultline_layer layer)
  if(NOT layer IN_LIST FAULTLINE_LAYERS)
    message(FATAL_ERROR "faultline_layer: ${layer} is not a layer of cmake/layers.txt")
  endif()
  foreach(source IN LISTS ARGN)
    get_filename_component(source ${source} ABSOLUTE)
    faultline_layer_of(${source} owner)
    if(NOT owner STREQUAL layer)
      file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${source})
      message(FATAL_ERROR "faultline_layer: ${rel} belongs to layer '${owner}' by "
                          "cmake/layers.txt, not to '${layer}'")
    endif()
  endforeach()
  if(ARGC EQUAL 1)
    return()
  endif()
  if(NOT TARGET layer_${layer})
    add_library(layer_${layer} STATIC)
    faultline_precompile(layer_${layer})
    target_link_libraries(layer_${layer} PUBLIC faultline_base)
    faultline_link_uses(layer_${layer} PUBLIC ${layer})
  endif()
  target_sources(layer_${layer} PRIVATE ${ARGN})
endfunction()

function(faultline_finish_layers)
  foreach(layer IN LISTS FAULTLINE_LAYERS)
    if(NOT TARGET layer_${layer})
      add_library(layer_${layer} INTERFACE)
      target_link_libraries(layer_${layer} INTERFACE faultline_base)
      faultline_link_uses(layer_${layer} INTERFACE ${layer})
    endif()
  endforeach()
endfunction()
