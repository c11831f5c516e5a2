# Registries generated from one list of op families (ops/op_families.cmake),
# in the manner of ncnn's ncnn_add_layer: tandem_op_family(NAME LAYER...)
# records which layers implement a family, and tandem_op_registry(LAYER)
# writes <build>/generated/tandem_<LAYER>_op_families.inc, one
# TANDEM_OP_FAMILY(NAME) line per family of that layer, which the layer's
# registry expands into declarations and calls.
function(tandem_op_family name)
  foreach(layer ${ARGN})
    if(NOT layer MATCHES "^(ops|cpu|cuda)$")
      message(FATAL_ERROR "op family ${name}: unknown layer '${layer}' (ops, cpu or cuda)")
    endif()
  endforeach()
  # Called at the top level, so PARENT_SCOPE is what every layer's directory sees.
  set(TANDEM_OP_FAMILY_NAMES ${TANDEM_OP_FAMILY_NAMES} ${name} PARENT_SCOPE)
  set(TANDEM_OP_FAMILY_${name} ${ARGN} PARENT_SCOPE)
endfunction()

function(tandem_op_registry layer)
  set(_lines "// Generated from ops/op_families.cmake; edit the list there.\n")
  foreach(name ${TANDEM_OP_FAMILY_NAMES})
    if(layer IN_LIST TANDEM_OP_FAMILY_${name})
      # The family's file, for a clear message now instead of an undefined
      # register function at link time.
      if(NOT EXISTS ${PROJECT_SOURCE_DIR}/${layer}/${name}.cpp AND NOT EXISTS ${PROJECT_SOURCE_DIR}/${layer}/${name}.cu)
        message(FATAL_ERROR "ops/op_families.cmake lists family '${name}' for ${layer}, but there is no ${layer}/${name}.cpp or .cu")
      endif()
      string(APPEND _lines "TANDEM_OP_FAMILY(${name})\n")
    endif()
  endforeach()
  set(_dir ${PROJECT_BINARY_DIR}/generated)
  # Rewritten only when its content changes, so a configure rebuilds nothing.
  file(CONFIGURE OUTPUT ${_dir}/tandem_${layer}_op_families.inc CONTENT "${_lines}")
  target_include_directories(tandem_${layer} PRIVATE ${_dir})
endfunction()
