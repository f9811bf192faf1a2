# The Debian package (docs/PACKAGE.md): `strata`, its systemd unit, a
# default configuration tiering to a local directory, and the docs; built
# by scripts/package.sh (cpack -G DEB in the build directory). Only for the
# regular build: the sanitizer build's binary needs its runtimes.

# The version the binary reports (src/common/version.h), so that the two
# never disagree.
file(STRINGS ${PROJECT_SOURCE_DIR}/src/common/version.h strata_version_line
     REGEX "kStrataVersion = \"[0-9.]+\"")
string(REGEX MATCH "[0-9]+\\.[0-9]+\\.[0-9]+" STRATA_PACKAGE_VERSION "${strata_version_line}")

include(GNUInstallDirs)
install(TARGETS strata RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT strata)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/debian/strata.service
        DESTINATION lib/systemd/system COMPONENT strata)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/debian/strata.json
        DESTINATION /etc/strata COMPONENT strata)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/PACKAGE.md
              ${PROJECT_SOURCE_DIR}/docs/CONFIGURATION.md ${PROJECT_SOURCE_DIR}/docs/METRICS.md
              ${PROJECT_SOURCE_DIR}/docs/ARCHITECTURE.md ${PROJECT_SOURCE_DIR}/docs/FORMATS.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT strata)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME strata)
set(CPACK_PACKAGE_VERSION ${STRATA_PACKAGE_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "strata maintainers <strata@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "tiered stream storage speaking the RabbitMQ Stream protocol")
set(CPACK_PACKAGE_DESCRIPTION
    "strata keeps recent stream data on local disk and moves older data to S3-compatible object storage; clients of RabbitMQ streams publish and consume through it.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The shared libraries the binary links, as dpkg-shlibdeps finds them.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/postinst ${PROJECT_SOURCE_DIR}/packaging/debian/prerm
    ${PROJECT_SOURCE_DIR}/packaging/debian/postrm ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
include(CPack)
