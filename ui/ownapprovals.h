// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <QObject>
#include <QString>

#include "operation.h"
#include "operationdetailpane.h"

namespace idempo {

class LedgerConnection;

/// The first four-eyes approvals of the person at the console that still wait for a second
/// approver (LedgerStore::pendingApprovals), read again on the worker whenever the ledger
/// changes: the same person cannot second them, so ActionController disables that decision on
/// those operations and says why.
class OwnApprovals final : public QObject
{
    Q_OBJECT
public:
    /// At most this many waiting approvals are read.
    static constexpr int Limit = 5000;

    explicit OwnApprovals(LedgerConnection *connection, QObject *parent = nullptr);

    /// Whose approvals count; an empty name forgets them all.
    void setActorName(const std::string &name);
    /// Why the person may not take `action` on `op` because they proposed the same decision first
    /// on its current version; empty otherwise.
    QString refusal(OperationAction action, const Operation &op) const;

Q_SIGNALS:
    /// The approvals were read again and differ from before.
    void changed();

private:
    struct Own
    {
        std::string ns;
        std::string key;
        std::int64_t version = 0;
        std::string decision;
        bool operator==(const Own &) const = default;
    };
    void refresh();

    LedgerConnection *m_connection;
    std::string m_actor;
    std::vector<Own> m_own;
    std::uint64_t m_generation = 0;
    bool m_reading = false;   ///< a read is on the worker
    bool m_readAgain = false; ///< the ledger changed while it was
};

} // namespace idempo
