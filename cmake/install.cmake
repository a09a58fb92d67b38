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

# ggufmm.pc for the shared library; ggufmm-static.pc for the static one. pkg-config's --static cannot choose
# between them: it adds Libs.private to the same -lggufmm, which the linker resolves to libggufmm.so where both are.
# The prefix is substituted at install time, so that `cmake --install --prefix DIR` gets files that point into DIR.
foreach(pc ggufmm ggufmm-static)
  install(CODE "
    set(CMAKE_INSTALL_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
    set(CMAKE_INSTALL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
    set(CMAKE_INSTALL_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
    set(PROJECT_VERSION \"${PROJECT_VERSION}\")
    configure_file(\"${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in\" \"${PROJECT_BINARY_DIR}/${pc}.pc\" @ONLY)
    file(INSTALL \"${PROJECT_BINARY_DIR}/${pc}.pc\"
      DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\")
  ")
endforeach()
