# SPDX-License-Identifier: Apache-2.0
# Desktop integration and CPack (DEB, TGZ) for idempo and idempo-console, with GNUInstallDirs.
install(FILES ${CMAKE_CURRENT_LIST_DIR}/io.idempo.Console.desktop
        DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/io.idempo.Console.metainfo.xml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
set(IDEMPO_ICON_SVG ${PROJECT_SOURCE_DIR}/resources/icons/io.idempo.Console.svg)
install(FILES ${IDEMPO_ICON_SVG} DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)

# hicolor PNGs rendered from the SVG at build time by our own tool over Qt Svg (a declared
# build dependency), never by whatever rasteriser happens to be on PATH.
find_package(Qt6 REQUIRED COMPONENTS Svg)
qt_add_executable(idempo_iconrender ${CMAKE_CURRENT_LIST_DIR}/iconrender/main.cpp)
target_link_libraries(idempo_iconrender PRIVATE idempo_common Qt6::Gui Qt6::Svg)
foreach(size 16 32 48 64 128 256)
    set(png ${CMAKE_BINARY_DIR}/icons/${size}x${size}/io.idempo.Console.png)
    add_custom_command(OUTPUT ${png}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/icons/${size}x${size}
        COMMAND idempo_iconrender ${IDEMPO_ICON_SVG} ${size} ${png}
        DEPENDS ${IDEMPO_ICON_SVG} idempo_iconrender VERBATIM)
    list(APPEND IDEMPO_ICON_PNGS ${png})
    install(FILES ${png} DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps)
endforeach()
add_custom_target(idempo_icons ALL DEPENDS ${IDEMPO_ICON_PNGS})

set(CPACK_PACKAGE_NAME idempo)
set(CPACK_PACKAGE_VENDOR "Idempo")
set(CPACK_PACKAGE_CONTACT "Idempo maintainers <maintainers@idempo.io>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB TGZ)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Loaded as plugins, so shlibdeps cannot see them: the SQLite driver and the SVG icon engine.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libqt6sql6-sqlite, libqt6svg6")
set(CPACK_STRIP_FILES ON)
include(CPack)
