# remat's install rules (included by CMakeLists.txt when REMAT_INSTALL is ON):
#
#   cmake --install build --prefix P
#
#   P/lib/libremat.so.0.3.0 (+ libremat.so.0.3, libremat.so)   the library (target remat_shared)
#   P/include/remat/remat.h and every header it reaches           the public headers, nothing else
#   P/lib/cmake/remat/remat-config.cmake, -config-version.cmake,  find_package(remat 0.3 CONFIG):
#     remat-targets.cmake, remat-targets-release.cmake              the target remat::remat
#   P/lib/pkgconfig/remat.pc                                      pkg-config --cflags --libs remat
#   P/share/doc/remat/CHANGELOG.md
#
# The library is one shared object made of the objects of REMAT_PACKAGE_OBJECT_LIBRARIES
# (remat_objects: every op, kernel and allocator, the CUDA backend too under REMAT_CUDA; another
# object library of the library's code joins by appending its name there), so static registration
# survives as in the OBJECT build. Their link requirements (oneDNN, OpenBLAS, CUDA's libraries) are
# the shared object's own: recorded in it (DT_NEEDED, RUNPATH), none of them reaches a consumer's
# link line, nor -march=native or the source root's -fmacro-prefix-map.
# REMAT_PACKAGE_COMPONENTS names what find_package(remat COMPONENTS ...) finds (cuda under
# REMAT_CUDA).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# remat_public_headers(OUT): remat.h and every header it reaches through #include "..." (paths
# relative to the source root, as remat's headers include each other), sorted. Internal headers
# (kernels, op registration, the CUDA backend's) are not reached, so not installed. CMake reruns
# when one of them changes (it may include another).
function(remat_public_headers out)
  set(seen "")
  set(todo remat.h)
  while(todo)
    list(POP_FRONT todo header)
    if(header IN_LIST seen)
      continue()
    endif()
    list(APPEND seen "${header}")
    set(path "${remat_SOURCE_DIR}/${header}")
    set_property(DIRECTORY "${remat_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${path}")
    file(STRINGS "${path}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"]+\"")
    foreach(line ${includes})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" included "${line}")
      if(NOT EXISTS "${remat_SOURCE_DIR}/${included}")
        message(FATAL_ERROR "remat: ${header} includes \"${included}\", which is not a path under ${remat_SOURCE_DIR}")
      endif()
      list(APPEND todo "${included}")
    endforeach()
  endwhile()
  list(SORT seen)
  set(${out} "${seen}" PARENT_SCOPE)
endfunction()

# ---- the library ---------------------------------------------------------------------------
add_library(remat_shared SHARED)
foreach(lib ${REMAT_PACKAGE_OBJECT_LIBRARIES})
  # Linked directly, an OBJECT library gives its objects and its link requirements.
  target_link_libraries(remat_shared PRIVATE ${lib})
endforeach()
set_target_properties(remat_shared PROPERTIES
  OUTPUT_NAME remat
  EXPORT_NAME remat
  LINKER_LANGUAGE CXX
  VERSION "${PROJECT_VERSION}"
  # While the major version is 0 a minor version may break the ABI: libremat.so.0.3.
  SOVERSION "${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}"
  # The installed library finds OpenBLAS's OpenMP build (and CUDA) where it was linked against it.
  INSTALL_RPATH_USE_LINK_PATH ON)
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  # Every symbol the objects use is defined in them or in a library they link: a consumer needs
  # no other library on its link line.
  target_link_options(remat_shared PRIVATE "LINKER:--no-undefined")
endif()
target_include_directories(remat_shared INTERFACE
  "$<BUILD_INTERFACE:${remat_SOURCE_DIR}>"
  "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/remat>")
target_compile_features(remat_shared INTERFACE cxx_std_17)
if(OpenMP_CXX_FOUND)
  target_link_libraries(remat_shared PUBLIC OpenMP::OpenMP_CXX)
  set(REMAT_PACKAGE_OPENMP ON)
  set(REMAT_PC_OPENMP_FLAGS "${OpenMP_CXX_FLAGS}")
else()
  set(REMAT_PACKAGE_OPENMP OFF)
  set(REMAT_PC_OPENMP_FLAGS "")
endif()
if("cuda" IN_LIST REMAT_PACKAGE_COMPONENTS)
  set(REMAT_PACKAGE_CUDA ON)
else()
  set(REMAT_PACKAGE_CUDA OFF)
endif()

# ---- install -------------------------------------------------------------------------------
set(REMAT_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/remat")
install(TARGETS remat_shared EXPORT remat-targets
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")

remat_public_headers(REMAT_PUBLIC_HEADERS)
foreach(header ${REMAT_PUBLIC_HEADERS})
  get_filename_component(dir "${header}" DIRECTORY)
  install(FILES "${remat_SOURCE_DIR}/${header}" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/remat/${dir}")
endforeach()
list(LENGTH REMAT_PUBLIC_HEADERS count)
message(STATUS "remat: installs libremat.so and ${count} public headers (those remat.h reaches)")

install(EXPORT remat-targets NAMESPACE remat:: DESTINATION "${REMAT_CMAKE_DIR}")
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/remat-config.cmake.in"
                              "${CMAKE_CURRENT_BINARY_DIR}/remat-config.cmake"
                              INSTALL_DESTINATION "${REMAT_CMAKE_DIR}")
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/remat-config-version.cmake"
                                 VERSION "${PROJECT_VERSION}" COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/remat-config.cmake"
              "${CMAKE_CURRENT_BINARY_DIR}/remat-config-version.cmake"
        DESTINATION "${REMAT_CMAKE_DIR}")

# remat.pc finds the prefix from its own folder (${pcfiledir}), as the CMake package does: the
# prefix is the one given to `cmake --install --prefix`, not known when configuring.
set(REMAT_PC_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  message(FATAL_ERROR "remat: remat.pc needs CMAKE_INSTALL_LIBDIR and CMAKE_INSTALL_INCLUDEDIR relative to the prefix")
endif()
file(RELATIVE_PATH REMAT_PC_PREFIX_FROM_PCFILEDIR "/prefix/${REMAT_PC_DIR}" "/prefix")
string(REGEX REPLACE "/$" "" REMAT_PC_PREFIX_FROM_PCFILEDIR "${REMAT_PC_PREFIX_FROM_PCFILEDIR}")
configure_file("${CMAKE_CURRENT_LIST_DIR}/remat.pc.in" "${CMAKE_CURRENT_BINARY_DIR}/remat.pc" @ONLY)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/remat.pc" DESTINATION "${REMAT_PC_DIR}")

install(FILES "${remat_SOURCE_DIR}/CHANGELOG.md" DESTINATION "${CMAKE_INSTALL_DOCDIR}")
