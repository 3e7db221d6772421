# SPDX-License-Identifier: Apache-2.0
# One INTERFACE target carries the language standard, warnings and strict Qt defines.
add_library(idempo_common INTERFACE)
target_compile_features(idempo_common INTERFACE cxx_std_20)
target_compile_options(idempo_common INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wno-missing-field-initializers)
target_compile_definitions(idempo_common INTERFACE
    QT_NO_CAST_FROM_ASCII
    QT_NO_CAST_TO_ASCII
    QT_NO_CONTEXTLESS_CONNECT
    QT_NO_NARROWING_CONVERSIONS_IN_CONNECT
    QT_NO_KEYWORDS
    QT_USE_QSTRINGBUILDER
    QT_DISABLE_DEPRECATED_BEFORE=0x060400)
