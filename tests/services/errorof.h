// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>

#include "error.h"

namespace idempo::test {

/// The code of the idempo::Error that `f` throws; Internal when it throws none.
inline ErrorCode errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e.code();
    }
    return ErrorCode::Internal;
}

} // namespace idempo::test
