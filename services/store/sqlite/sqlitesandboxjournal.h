// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sandboxjournal.h"

namespace idempo {
class SqliteLedgerStore;
}

namespace idempo::sandbox {

/// The sandbox journal in the embedded ledger file; every write in one BEGIN IMMEDIATE
/// transaction, so the file's single writer lock orders the providers' commits.
class SqliteSandboxJournal final : public SandboxJournal
{
public:
    explicit SqliteSandboxJournal(SqliteLedgerStore &store);

    void createTables() override;
    void addRuns(const std::vector<RunRecord> &runs) override;
    void removeRuns(const std::string &ns, const std::vector<std::string> &runIds) override;
    void addEffects(const std::vector<Effect> &effects) override;
    Performed perform(const Effect &proposed, bool dedupe) override;
    std::optional<Effect> lookup(const std::string &ns, const std::string &provider,
                                 const std::string &receivedKey) override;
    bool openWindow(const std::string &ns, const std::string &operationKey,
                    std::string_view fault) override;
    std::pair<std::optional<QueueHolder>, std::int64_t>
    queueHolder(const std::string &queue) override;
    bool takeQueue(const QueueHolder &holder, const std::optional<std::string> &previousInstance,
                   std::int64_t leaseMs) override;
    bool renewQueue(const std::string &queue, const std::string &instance,
                    std::int64_t leaseMs) override;
    void releaseQueue(const std::string &queue, const std::string &instance) override;
    bool hasRuns(const std::string &ns) override;
    std::vector<RunRecord> runs(const std::string &ns) override;
    std::optional<RunRecord> findRun(const std::string &ns, const std::string &runId) override;
    std::vector<Effect> effects(const std::string &ns) override;
    std::vector<HistoryRow> history(const std::string &ns) override;

private:
    bool tablesExist();

    SqliteLedgerStore &m_store;
};

} // namespace idempo::sandbox
