// SPDX-License-Identifier: Apache-2.0
#include "ledgerview.h"

#include "emptystate.h"

namespace idempo {

void LedgerView::setUnavailable(const QString &why)
{
    if (EmptyState *empty = emptyState())
        empty->setUnavailable(why);
}

} // namespace idempo
