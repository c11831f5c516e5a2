# tandem_layer(NAME DEPS...): one static library per source folder, built from
# every .cpp in it (CONFIGURE_DEPENDS: a new op file needs no CMake edit).
set(TANDEM_LAYERS "" CACHE INTERNAL "")
function(tandem_layer name)
  file(GLOB _src CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp ${CMAKE_CURRENT_SOURCE_DIR}/*/*.cpp
       ${CMAKE_CURRENT_SOURCE_DIR}/*.cu ${CMAKE_CURRENT_SOURCE_DIR}/*/*.cu)
  add_library(tandem_${name} STATIC ${_src})
  set(TANDEM_LAYERS ${TANDEM_LAYERS} tandem_${name} CACHE INTERNAL "")
  target_include_directories(tandem_${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<INSTALL_INTERFACE:include/tandem>)
  target_link_libraries(tandem_${name} PUBLIC ${ARGN})
  if(TANDEM_PROFILE)
    target_compile_definitions(tandem_${name} PUBLIC TANDEM_PROFILE=1)
  endif()
endfunction()
