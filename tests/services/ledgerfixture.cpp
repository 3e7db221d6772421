// SPDX-License-Identifier: Apache-2.0
#include "ledgerfixture.h"

#include "cli/jsonview.h"
#include "sqliteledgerstore.h"

#include <QtTest>

namespace idempo::test {

LedgerFixture::LedgerFixture() : m_clock(std::make_shared<ManualClock>())
{
    open();
}

LedgerFixture::~LedgerFixture() = default;

const char *LedgerFixture::storeName() { return "sqlite"; }

RetryPolicy LedgerFixture::steadyPolicy()
{
    return RetryPolicy([] { return 0.5; });
}

std::shared_ptr<LedgerStore> LedgerFixture::openAnother()
{
    return std::make_shared<SqliteLedgerStore>(m_dir.filePath(QStringLiteral("ledger.db")), m_clock);
}

void LedgerFixture::open()
{
    QVERIFY(m_dir.isValid());
    m_store = openAnother();
    m_engine = std::make_unique<Engine>(m_store, Engine::Settings{}, steadyPolicy());
}

void LedgerFixture::advanceMs(std::int64_t ms) { m_clock->advanceMs(ms); }

void LedgerFixture::reopen()
{
    m_engine.reset();
    m_store.reset();
    open();
}

QByteArray LedgerFixture::snapshot()
{
    nlohmann::json all = nlohmann::json::array();
    ListFilter filter;
    filter.limit = 100'000;
    for (const Operation &op : m_store->list(filter)) {
        nlohmann::json events = nlohmann::json::array();
        for (const OperationEvent &e : m_store->history(op.ns, op.key))
            events.push_back(cli::eventJson(e));
        all.push_back({{"operation", cli::operationJson(op)}, {"history", events}});
    }
    for (const Suppression &s : m_store->suppressions({}, 0, 100'000))
        all.push_back({s.id, s.key, claimOutcomeName(s.outcome)});
    return QByteArray::fromStdString(all.dump());
}

} // namespace idempo::test
