# cmake --install: headers, both libraries, the tool, a CMake package (ggufmm::ggufmm) and ggufmm.pc.
include(CMakePackageConfigHelpers)

install(DIRECTORY include/ggufmm TYPE INCLUDE)
set_target_properties(ggufmm_shared PROPERTIES EXPORT_NAME ggufmm)
set_target_properties(ggufmm PROPERTIES EXPORT_NAME ggufmm_static)
install(TARGETS ggufmm ggufmm_shared EXPORT ggufmmTargets)
install(TARGETS ggufmm_cli)

set(GGUFMM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ggufmm)
install(EXPORT ggufmmTargets NAMESPACE ggufmm:: DESTINATION ${GGUFMM_CMAKE_DIR})
configure_package_config_file(cmake/ggufmmConfig.cmake.in ${PROJECT_BINARY_DIR}/ggufmmConfig.cmake
  INSTALL_DESTINATION ${GGUFMM_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ggufmmConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ggufmmConfig.cmake ${PROJECT_BINARY_DIR}/ggufmmConfigVersion.cmake
  DESTINATION ${GGUFMM_CMAKE_DIR})

# The prefix is substituted at install time, so that `cmake --install --prefix DIR` gets a ggufmm.pc that points
# into DIR.
install(CODE "
  set(CMAKE_INSTALL_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(CMAKE_INSTALL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(CMAKE_INSTALL_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/ggufmm.pc.in\" \"${PROJECT_BINARY_DIR}/ggufmm.pc\" @ONLY)
  file(INSTALL \"${PROJECT_BINARY_DIR}/ggufmm.pc\" DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\")
")
