// SPDX-License-Identifier: Apache-2.0
#include "ownapprovals.h"

#include <algorithm>

#include "ledgerconnection.h"

namespace idempo {

namespace {

const char *decisionOf(OperationAction action)
{
    switch (action) {
    case OperationAction::Redispatch:
        return "redispatch";
    case OperationAction::Confirm:
        return "confirm";
    case OperationAction::Reject:
        return "reject";
    case OperationAction::Reconcile:
        break;
    }
    return nullptr;
}

} // namespace

OwnApprovals::OwnApprovals(LedgerConnection *connection, QObject *parent)
    : QObject(parent), m_connection(connection)
{
    connect(m_connection, &LedgerConnection::changed, this, &OwnApprovals::refresh);
}

void OwnApprovals::setActorName(const std::string &name)
{
    m_actor = name;
    ++m_generation;
    if (!m_own.empty()) {
        m_own.clear();
        Q_EMIT changed();
    }
    refresh();
}

void OwnApprovals::refresh()
{
    if (m_actor.empty() || !m_connection->isOpen())
        return;
    // One read at a time: a ledger that changes many times a second (a sandbox run) must not
    // queue a read per change ahead of the views' own work on the worker.
    if (m_reading) {
        m_readAgain = true;
        return;
    }
    m_reading = true;
    m_readAgain = false;
    const std::uint64_t generation = ++m_generation;
    m_connection->query(
        this,
        [actor = m_actor](LedgerStore &s, MessageQueue *) {
            std::vector<Own> own;
            for (const PendingApproval &p : s.pendingApprovals(Limit))
                if (p.approval.operatorName == actor)
                    own.push_back({p.operation.ns, p.operation.key, p.operation.version,
                                   p.approval.decision});
            return own;
        },
        [this, generation](std::vector<Own> own) {
            m_reading = false;
            if (generation == m_generation && own != m_own) {
                m_own = std::move(own);
                Q_EMIT changed();
            }
            if (m_readAgain || generation != m_generation)
                refresh();
        });
}

QString OwnApprovals::refusal(OperationAction action, const Operation &op) const
{
    const char *decision = decisionOf(action);
    if (!decision)
        return {};
    const bool mine = std::any_of(m_own.begin(), m_own.end(), [&](const Own &o) {
        return o.version == op.version && o.key == op.key && o.ns == op.ns &&
               o.decision == decision;
    });
    if (!mine)
        return {};
    return action == OperationAction::Reject
               ? tr("You proposed this rejection first; another person must approve it.")
               : tr("You approved this proposal first; another person must approve.");
}

} // namespace idempo
