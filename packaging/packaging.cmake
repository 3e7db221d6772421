# SPDX-License-Identifier: Apache-2.0
# Desktop integration and CPack (DEB, TGZ) for idempo and idempo-console, with GNUInstallDirs.
install(FILES ${CMAKE_CURRENT_LIST_DIR}/io.idempo.Console.desktop
        DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/io.idempo.Console.metainfo.xml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
set(IDEMPO_ICON_SVG ${PROJECT_SOURCE_DIR}/resources/icons/io.idempo.Console.svg)
install(FILES ${IDEMPO_ICON_SVG} DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)

# hicolor PNGs rendered from the SVG at build time when a rasteriser is there.
find_program(IDEMPO_RSVG rsvg-convert)
find_program(IDEMPO_MAGICK convert)
foreach(size 16 32 48 64 128 256)
    set(png ${CMAKE_BINARY_DIR}/icons/${size}x${size}/io.idempo.Console.png)
    if(IDEMPO_RSVG)
        set(render ${IDEMPO_RSVG} -w ${size} -h ${size} -o ${png} ${IDEMPO_ICON_SVG})
    elseif(IDEMPO_MAGICK)
        set(render ${IDEMPO_MAGICK} -background none -density 384 ${IDEMPO_ICON_SVG} -resize ${size}x${size} ${png})
    else()
        continue()
    endif()
    add_custom_command(OUTPUT ${png}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/icons/${size}x${size}
        COMMAND ${render}
        DEPENDS ${IDEMPO_ICON_SVG} VERBATIM)
    list(APPEND IDEMPO_ICON_PNGS ${png})
    install(FILES ${png} DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps)
endforeach()
if(IDEMPO_ICON_PNGS)
    add_custom_target(idempo_icons ALL DEPENDS ${IDEMPO_ICON_PNGS})
endif()

set(CPACK_PACKAGE_NAME idempo)
set(CPACK_PACKAGE_VENDOR "Idempo")
set(CPACK_PACKAGE_CONTACT "Idempo maintainers <maintainers@idempo.io>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB TGZ)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libqt6sql6-sqlite")
set(CPACK_STRIP_FILES ON)
include(CPack)
