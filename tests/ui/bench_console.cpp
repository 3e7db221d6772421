// SPDX-License-Identifier: Apache-2.0
// bench_console [PATH]: generates a 1,000,000-operation ledger (raw batched inserts in one
// transaction) unless PATH exists, then measures the console on it: time to first rows, a
// filter change, a search by customer and payload field, a bulk selection count, the longest
// GUI-thread stall while 500 transitions/s stream in, peak memory.
#include <atomic>
#include <cstdio>
#include <thread>

#include <sys/resource.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QSignalSpy>
#include <QSqlError>
#include <QSqlQuery>
#include <QTimer>

#include "bulkcommand.h"
#include "engine.h"
#include "ledgerconnection.h"
#include "mainwindow.h"
#include "operationtablemodel.h"
#include "sqliteledgerstore.h"

using namespace idempo;

namespace {

constexpr int Operations = 1'000'000;

void generate(const QString &path)
{
    auto store = std::make_shared<SqliteLedgerStore>(path, std::make_shared<SystemClock>());
    QSqlDatabase db = store->connection().db;
    QSqlQuery q(db);
    q.exec(QStringLiteral("BEGIN"));
    q.prepare(QStringLiteral("INSERT INTO operations (namespace, operation_key, run_id, step_id, "
                             "tool_kind, state, payload, "
                             "payload_fingerprint, attempt, max_attempts, lease_owner, "
                             "lease_expires_at_ms, fencing_token, "
                             "created_at_ms, updated_at_ms, schema_version) VALUES ('default', ?, "
                             "?, ?, 'protected_write', ?, ?, 'f', 1, 3, ?, ?, ?, ?, ?, 1)"));
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    static const char *steps[] = {"extract_document", "compliance_check", "provision_account"};
    for (int i = 0; i < Operations; ++i) {
        const int run = i / 3;
        const char *state = "succeeded";
        if (i % 500 == 7)
            state = "dispatching";
        else if (i % 2000 == 11)
            state = "confirmation_required";
        else if (i % 3000 == 13)
            state = "failed_retryable";
        const bool dispatching = i % 500 == 7;
        const qint64 created = now - static_cast<qint64>(Operations - i) * 50;
        q.addBindValue(QStringLiteral("run-%1:%2").arg(run).arg(QLatin1String(steps[i % 3])));
        q.addBindValue(QStringLiteral("run-%1").arg(run));
        q.addBindValue(QLatin1String(steps[i % 3]));
        q.addBindValue(QLatin1String(state));
        // Every tenth operation is for one big customer; the others share 100,000 customers.
        q.addBindValue(
            QStringLiteral("{\"amount\":1,\"customer\":\"%1\",\"order\":{\"id\":\"o-%2\"}}")
                .arg(i % 10 == 0 ? QStringLiteral("acme")
                                 : QStringLiteral("cust-%1").arg(i % 100'000))
                .arg(i));
        q.addBindValue(dispatching ? QStringLiteral("worker-%1").arg(i % 17) : QStringLiteral(""));
        q.addBindValue(dispatching ? QVariant(now + 60'000)
                                   : QVariant(QMetaType(QMetaType::LongLong)));
        q.addBindValue(i + 1);
        q.addBindValue(created);
        q.addBindValue(created + 1500);
        if (!q.exec()) {
            std::fprintf(stderr, "insert failed: %s\n", qPrintable(q.lastError().text()));
            std::exit(1);
        }
    }
    QSqlQuery(db).exec(
        QStringLiteral("UPDATE fencing_sequence SET last_token = %1").arg(Operations));
    QSqlQuery(db).exec(QStringLiteral("COMMIT"));
}

/// Milliseconds from `start()` to the model's first pageLoaded.
template <typename Start> double timeToPage(OperationTableModel &model, Start start)
{
    QSignalSpy loaded(&model, &OperationTableModel::pageLoaded);
    QElapsedTimer t;
    t.start();
    start();
    loaded.wait(60'000);
    return static_cast<double>(t.nsecsElapsed()) / 1e6;
}

} // namespace

int main(int argc, char *argv[])
{
    QApplication app(argc, argv);
    const QString path =
        argc > 1 ? QString::fromLocal8Bit(argv[1]) : QStringLiteral("/tmp/idempo-bench-console.db");
    if (!QFile::exists(path)) {
        QElapsedTimer g;
        g.start();
        generate(path);
        std::printf("generated %d operations in %.1f s\n", Operations,
                    static_cast<double>(g.elapsed()) / 1000.0);
    }
    const QString url = QStringLiteral("sqlite:") + path;

    // Time to first rows: the real window, from open to the Leases view's first page.
    MainWindow window;
    window.setInteractive(false);
    window.show();
    QElapsedTimer t;
    t.start();
    QSignalSpy opened(&window, &MainWindow::ledgerOpened);
    window.openLedger(url);
    opened.wait(60'000);
    const double openMs = static_cast<double>(t.nsecsElapsed()) / 1e6;

    LedgerConnection *c = window.connection();
    OperationTableModel all(c);
    const double firstAll = timeToPage(all, [&] { all.setQuery({}); });
    OperationTableModel leases(c);
    const double firstLeases =
        timeToPage(leases, [&] { leases.setQuery({{OperationState::Dispatching}}); });
    OperationTableModel confirm(c);
    const double firstConfirm = timeToPage(confirm, [&] {
        confirm.setQuery(
            {{OperationState::ConfirmationRequired, OperationState::AwaitingApproval}});
    });
    OperationQuery byRun;
    byRun.runId = "run-300000";
    const double filterRun = timeToPage(all, [&] { all.setQuery(byRun); });
    OperationQuery byState;
    byState.states = {OperationState::FailedRetryable};
    const double filterState = timeToPage(all, [&] { all.setQuery(byState); });
    OperationQuery byPrefix;
    byPrefix.keyPrefix = "run-333333:";
    const double filterPrefix = timeToPage(all, [&] { all.setQuery(byPrefix); });
    OperationQuery byCommonPrefix;
    byCommonPrefix.keyPrefix = "run-";
    const double filterCommonPrefix = timeToPage(all, [&] { all.setQuery(byCommonPrefix); });
    OperationQuery byAge;
    byAge.states = {OperationState::Dispatching};
    byAge.minAgeMs = 3'600'000;
    const double filterAge = timeToPage(all, [&] { all.setQuery(byAge); });
    // The searches as the Find tab sends them: every state listed ("All listed states").
    OperationQuery find;
    find.states = {OperationState::Received,
                   OperationState::AwaitingApproval,
                   OperationState::Dispatching,
                   OperationState::Succeeded,
                   OperationState::FailedRetryable,
                   OperationState::UnknownOutcome,
                   OperationState::ConfirmationRequired,
                   OperationState::FailedTerminal};
    OperationQuery rareCustomer = find;
    rareCustomer.customer = "cust-4242";
    const double searchRare = timeToPage(all, [&] { all.setQuery(rareCustomer); });
    OperationQuery commonCustomer = find;
    commonCustomer.customer = "acme";
    const double searchCommon = timeToPage(all, [&] { all.setQuery(commonCustomer); });
    OperationQuery newestCommon = commonCustomer;
    newestCommon.order = ListOrder::IdDescending;
    const double searchCommonNewest = timeToPage(all, [&] { all.setQuery(newestCommon); });
    OperationQuery newestRare = rareCustomer;
    newestRare.order = ListOrder::IdDescending;
    const double searchRareNewest = timeToPage(all, [&] { all.setQuery(newestRare); });
    OperationQuery byField = find;
    byField.payload = {{"/order/id", "o-777777"}};
    const double searchField = timeToPage(all, [&] { all.setQuery(byField); });
    OperationQuery byEveryField = find;
    byEveryField.payload = {{"/amount", "1"}};
    const double searchEveryField = timeToPage(all, [&] { all.setQuery(byEveryField); });
    OperationQuery byFieldAndState;
    byFieldAndState.customer = "acme";
    byFieldAndState.states = {OperationState::Dispatching};
    const double searchFieldState = timeToPage(all, [&] { all.setQuery(byFieldAndState); });

    // Bulk selection count: every confirmation_required operation frozen into a set, as "All
    // matching the filter" does before its dialog opens.
    QElapsedTimer freezing;
    freezing.start();
    ListFilter needsPerson;
    needsPerson.state = OperationState::ConfirmationRequired;
    const std::size_t frozen = BulkCommand::freeze(*std::make_shared<SqliteLedgerStore>(
                                                       path, std::make_shared<SystemClock>()),
                                                   needsPerson, BulkAction::Approve)
                                   .size();
    const double freezeMs = static_cast<double>(freezing.nsecsElapsed()) / 1e6;

    // GUI-thread stall while another process-like writer streams 500 transitions/s.
    std::atomic<bool> stop{false};
    std::atomic<int> written{0};
    std::thread writer([&] {
        auto store = std::make_shared<SqliteLedgerStore>(path, std::make_shared<SystemClock>());
        Engine engine(store);
        int n = 0;
        const auto begin = std::chrono::steady_clock::now();
        while (!stop) {
            ClaimInput in;
            in.key = "bench-live:" + std::to_string(n);
            in.runId = "bench-live";
            in.stepId = "step";
            in.payloadJson = "{}";
            in.owner = "bench";
            const ClaimResult r = engine.claim(in);
            engine.complete("default", in.key, r.operation.fencingToken, "{}", "");
            written += 2;
            ++n;
            std::this_thread::sleep_until(begin +
                                          std::chrono::microseconds(4000LL * n)); // 250 pairs/s
        }
    });
    window.tabs()->setCurrentIndex(1);
    qint64 longest = 0;
    QElapsedTimer beat;
    beat.start();
    QTimer heartbeat;
    heartbeat.setInterval(5);
    QObject::connect(&heartbeat, &QTimer::timeout, &app,
                     [&] { longest = std::max(longest, beat.restart()); });
    heartbeat.start();
    QElapsedTimer run;
    run.start();
    while (run.elapsed() < 10'000) {
        QApplication::processEvents(QEventLoop::AllEvents, 50);
        if (run.elapsed() % 1000 < 10)
            window.tabs()->setCurrentIndex((window.tabs()->currentIndex() + 1) % 6);
    }
    stop = true;
    writer.join();
    heartbeat.stop();

    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    std::printf("ledger: %s (%d operations)\n", qPrintable(path), Operations);
    std::printf("open ledger + first views asked:        %8.1f ms\n", openMs);
    std::printf("first rows, all operations:             %8.1f ms\n", firstAll);
    std::printf("first rows, leases (dispatching):       %8.1f ms\n", firstLeases);
    std::printf("first rows, confirmations (2 states):   %8.1f ms\n", firstConfirm);
    std::printf("filter change, run id:                  %8.1f ms\n", filterRun);
    std::printf("filter change, state:                   %8.1f ms\n", filterState);
    std::printf("filter change, key prefix (3 keys):     %8.1f ms\n", filterPrefix);
    std::printf("filter change, key prefix (every key):  %8.1f ms\n", filterCommonPrefix);
    std::printf("filter change, state + age:             %8.1f ms\n", filterAge);
    std::printf("search: customer (rare, 10 operations): %8.1f ms\n", searchRare);
    std::printf("search: customer (common, 100,000):     %8.1f ms\n", searchCommon);
    std::printf("search: customer (rare), newest first:  %8.1f ms\n", searchRareNewest);
    std::printf("search: customer (common), newest first:%8.1f ms\n", searchCommonNewest);
    std::printf("search: payload field (one operation):  %8.1f ms\n", searchField);
    std::printf("search: payload field (every operation):%8.1f ms\n", searchEveryField);
    std::printf("search: common customer + dispatching:  %8.1f ms\n", searchFieldState);
    std::printf("bulk selection count (%zu frozen):      %8.1f ms\n", frozen, freezeMs);
    std::printf("transitions streamed in 10 s:           %8d (%.0f/s)\n", written.load(),
                written.load() / 10.0);
    std::printf("longest GUI-thread stall:               %8lld ms\n",
                static_cast<long long>(longest));
    std::printf("peak memory (max RSS):                  %8.1f MB\n",
                static_cast<double>(usage.ru_maxrss) / 1024.0);
    return 0;
}
