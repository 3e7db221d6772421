// SPDX-License-Identifier: Apache-2.0
#include "clock.h"

#include <QDateTime>

namespace idempo {

std::int64_t SystemClock::nowMs() const
{
    return QDateTime::currentMSecsSinceEpoch();
}

} // namespace idempo
