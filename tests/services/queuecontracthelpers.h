// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

#include "errorof.h"
#include "queuefixture.h"

namespace idempo::test {

/// The queue the contract suites create, and its dead-letter queue.
inline const std::string kQueue = "orders";
inline const std::string kDlq = "orders_dlq";

/// The ids of `messages`, in their order.
std::vector<std::int64_t> ids(const std::vector<QueueMessage> &messages);

/// Creates kQueue with `maxReads`.
QueueInfo create(QueueFixture &f, int maxReads = 5);

} // namespace idempo::test
