// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <string>

#include "engine.h"
#include "error.h"

/// What the PostgreSQL-only suites share; they run under tests/pg/with-postgres.sh.
namespace idempo::test::pg {

inline const std::string kNs = "default";

/// The test server's URL, from IDEMPO_TEST_POSTGRES_URL; empty when it is not set.
std::string testUrl();

/// The test server's URL with another user and database.
std::string urlFor(const std::string &user, const std::string &database);

/// A claim by worker-a on `key` in kNs, for run-42.
ClaimInput claimInput(const std::string &key);

/// The idempo::Error that `f` throws; an Internal "no error" when it throws none.
Error errorOf(const std::function<void()> &f);

} // namespace idempo::test::pg
