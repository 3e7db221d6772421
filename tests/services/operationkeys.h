// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

#include "operation.h"

namespace idempo::test {

/// The keys of `ops`, in their order: what a listing test compares.
inline std::vector<std::string> keysOf(const std::vector<Operation> &ops)
{
    std::vector<std::string> keys;
    for (const Operation &op : ops)
        keys.push_back(op.key);
    return keys;
}

} // namespace idempo::test
