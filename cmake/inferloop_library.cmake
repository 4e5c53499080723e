# The library people link: libinferloop.so (target inferloop_lib, exported as
# inferloop::inferloop) with the C++ API (include/inferloop/*.h), the C API (inferloop_c.h) and
# the C API for LLMs (inferloop_llm_c.h, src/capi), and the install rules:
#   cmake --install build --prefix P  ->  P/lib/libinferloop.so*, P/include/inferloop/*.h,
#   P/lib/cmake/inferloop/ (find_package(inferloop CONFIG)), P/lib/pkgconfig/inferloop.pc,
#   P/bin/inferloop.
# Included from the top-level CMakeLists.txt after the layer views (il_layer_view).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The installed public headers: the API and nothing else (no src/ header is reachable from them;
# the ctest install_consumer compiles each against the installed include dir alone).
set(IL_INSTALLED_HEADERS inferloop/status.h inferloop/tensor.h inferloop/shape.h inferloop/precision.h
    inferloop/session.h inferloop/inferloop_c.h inferloop/inferloop_llm_c.h)

# src/capi: what only the library adds (the LLM C API). The static layers below are linked in
# whole where the public API is defined (runtime: Session and the C API; base: Status, Tensor,
# Precision), and as usual otherwise; the version script exports only the public API.
file(GLOB IL_CAPI_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/capi/*.cc)
add_library(inferloop_lib SHARED ${IL_CAPI_SOURCES})
# (--whole-archive by hand: CMake's WHOLE_ARCHIVE link feature refuses il_base, which the
# layers above also link plainly; the plain copies then add nothing.)
target_link_libraries(inferloop_lib PRIVATE il_runtime il_llm)
target_link_options(inferloop_lib PRIVATE "LINKER:--whole-archive" $<TARGET_FILE:il_runtime> $<TARGET_FILE:il_base>
                    "LINKER:--no-whole-archive")
set_target_properties(inferloop_lib PROPERTIES
  OUTPUT_NAME inferloop EXPORT_NAME inferloop
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
  LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cmake/inferloop_lib.map)
target_link_options(inferloop_lib PRIVATE -Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/cmake/inferloop_lib.map)
# Every symbol resolved at link time, except in sanitizer builds: there the sanitizer runtimes
# (__asan_*, __ubsan_*, __sanitizer_cov_*) come from the executable that loads the library.
if(NOT INFERLOOP_SANITIZE AND NOT INFERLOOP_FUZZ)
  target_link_options(inferloop_lib PRIVATE -Wl,--no-undefined)
endif()
target_include_directories(inferloop_lib PUBLIC
  $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<BUILD_INTERFACE:${IL_GENERATED_INCLUDE}>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(inferloop_lib INTERFACE cxx_std_20)
il_layer_view(inferloop_lib base graph compute optimizer runtime llm capi ${IL_PUBLIC_RUNTIME} inferloop/inferloop_llm_c.h)

install(TARGETS inferloop_lib EXPORT inferloopTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET inferloop)  # the CLI (absent where a build turns it off)
  install(TARGETS inferloop RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
foreach(h ${IL_INSTALLED_HEADERS})
  install(FILES include/${h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/inferloop)
endforeach()
install(FILES ${IL_GENERATED_INCLUDE}/inferloop/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/inferloop)

set(IL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/inferloop)
install(EXPORT inferloopTargets NAMESPACE inferloop:: DESTINATION ${IL_CMAKE_DIR})
configure_package_config_file(cmake/inferloopConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/inferloopConfig.cmake
                              INSTALL_DESTINATION ${IL_CMAKE_DIR})
# 0.x: a minor version may change the API, so 0.1 accepts 0.1.* only.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/inferloopConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/inferloopConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/inferloopConfigVersion.cmake
        DESTINATION ${IL_CMAKE_DIR})

# pkg-config: prefix relative to the .pc file's folder (${pcfiledir}), so the file is right
# wherever --prefix puts it.
set(IL_PC_PREFIX "\${pcfiledir}")
string(REPLACE "/" ";" il_pc_parts "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
foreach(part ${il_pc_parts})
  string(APPEND IL_PC_PREFIX "/..")
endforeach()
configure_file(cmake/inferloop.pc.in ${CMAKE_CURRENT_BINARY_DIR}/inferloop.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/inferloop.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
