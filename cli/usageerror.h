// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

namespace idempo::cli {

/// A command-line mistake (unknown option, missing or malformed argument, a number out of
/// range): printed with the usage hint, exit 64.
struct UsageError
{
    std::string message;
};

} // namespace idempo::cli
