// SPDX-License-Identifier: Apache-2.0
#include "queuecontracthelpers.h"

namespace idempo::test {

std::vector<std::int64_t> ids(const std::vector<QueueMessage> &messages)
{
    std::vector<std::int64_t> result;
    for (const QueueMessage &m : messages)
        result.push_back(m.msgId);
    return result;
}

QueueInfo create(QueueFixture &f, int maxReads)
{
    return f.queue().createQueue(kQueue, {.maxReads = maxReads});
}

} // namespace idempo::test
