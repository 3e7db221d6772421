// SPDX-License-Identifier: Apache-2.0
// bench_audit [PATH] [--whole-log]: generates a ledger of 250,000 chained audit records (raw
// inserts in one transaction, hashes by auditchain.h) unless PATH exists, then measures the
// Audit view on it: time to first rows, filter changes, peak memory. --whole-log measures what
// the view did before its filters went to SQL: every record (up to 200,000) read into memory,
// then filtered there; run each mode in a process of its own for its peak memory.
#include <cstdio>
#include <unordered_map>

#include <sys/resource.h>

#include <QApplication>
#include <QComboBox>
#include <QElapsedTimer>
#include <QFile>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSqlError>
#include <QSqlQuery>

#include "auditchain.h"
#include "audittablemodel.h"
#include "auditview.h"
#include "clock.h"
#include "ledgerconnection.h"
#include "sqliteledgerstore.h"

using namespace idempo;

namespace {

constexpr int Records = 250'000;
constexpr int OldViewLimit = 200'000;

/// Targets spread over 50,000 operations in two namespaces, plus queue and setting records;
/// seven identities; the action kinds of the guarded actions.
AuditEntry entryFor(int i)
{
    static const char *actions[] = {"approve", "reject", "reconcile", "approve", "reconcile"};
    AuditEntry e;
    e.who = "operator-" + std::to_string(i % 7);
    e.role = "approver";
    if (i % 1000 == 999) {
        e.action = "dlq_replay";
        e.target = "queue:payments";
    } else if (i % 5000 == 4998) {
        e.action = "setting";
        e.target = "setting:four_eyes_above";
    } else {
        e.action = actions[i % 5];
        e.target = std::string(i % 4 == 0 ? "sandbox-1" : "default") + "/run-" +
                   std::to_string(i % 50'000) + ":refund";
    }
    e.reason = "case " + std::to_string(i);
    e.beforeState = R"({"state":"confirmation_required"})";
    e.afterState = R"({"state":"received"})";
    e.approvalId = "ap-" + std::to_string(i);
    e.detail = R"({"decision":"redispatch"})";
    return e;
}

void generate(const QString &path)
{
    auto store = std::make_shared<SqliteLedgerStore>(path, std::make_shared<SystemClock>());
    QSqlDatabase db = store->connection().db;
    QSqlQuery q(db);
    q.exec(QStringLiteral("BEGIN"));
    q.prepare(QStringLiteral(
        "INSERT INTO audit_log (seq, at_ms, who, role, action, target, reason, before_state, "
        "after_state, approval_id, detail, prev_hash, target_prev_hash, hash) VALUES "
        "(?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    std::string prev = AuditGenesisHash;
    std::unordered_map<std::string, std::string> targetHeads;
    for (int i = 0; i < Records; ++i) {
        const AuditEntry entry = entryFor(i);
        const auto head = targetHeads.find(entry.target);
        const AuditRecord r =
            chainAuditEntry(entry, i + 1, now - static_cast<qint64>(Records - i) * 10'000, prev,
                            head == targetHeads.end() ? AuditGenesisHash : head->second);
        prev = r.hash;
        targetHeads[entry.target] = r.hash;
        for (const QVariant &v :
             {QVariant::fromValue<qint64>(r.seq), QVariant::fromValue<qint64>(r.atMs)})
            q.addBindValue(v);
        for (const std::string *s :
             {&r.entry.who, &r.entry.role, &r.entry.action, &r.entry.target, &r.entry.reason,
              &r.entry.beforeState, &r.entry.afterState, &r.entry.approvalId, &r.entry.detail,
              &r.prevHash, &r.targetPrevHash, &r.hash})
            q.addBindValue(QString::fromStdString(*s));
        if (!q.exec()) {
            std::fprintf(stderr, "insert failed: %s\n", qPrintable(q.lastError().text()));
            std::exit(1);
        }
    }
    QSqlQuery(db).exec(QStringLiteral("COMMIT"));
}

double peakMb()
{
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

/// Milliseconds from `change()` to the view's next page.
template <typename Change> double timeToPage(AuditView &view, Change change)
{
    QSignalSpy loaded(view.model(), &AuditTableModel::pageLoaded);
    QElapsedTimer t;
    t.start();
    change();
    if (!loaded.wait(60'000)) {
        std::fprintf(stderr, "no page within 60 s\n");
        std::exit(1);
    }
    return static_cast<double>(t.nsecsElapsed()) / 1e6;
}

/// The view before: the whole log (up to 200,000 records) read into memory page by page, then
/// filtered in memory as its model did (exact action, actor substring, target prefix).
int wholeLog(LedgerConnection &connection)
{
    std::vector<AuditRecord> all;
    QElapsedTimer t;
    t.start();
    bool finished = false;
    connection.query(
        &connection,
        [](LedgerStore &s, MessageQueue *) {
            std::vector<AuditRecord> records;
            for (;;) {
                auto page = s.auditLog(records.empty() ? 0 : records.back().seq, 1000);
                const bool last = page.size() < 1000;
                records.insert(records.end(), std::make_move_iterator(page.begin()),
                               std::make_move_iterator(page.end()));
                if (last || records.size() >= std::size_t{OldViewLimit})
                    break;
            }
            return records;
        },
        [&](std::vector<AuditRecord> records) {
            all = std::move(records);
            finished = true;
        });
    while (!finished)
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
    std::printf("first rows (whole log, %zu records read): %.1f ms\n", all.size(),
                static_cast<double>(t.nsecsElapsed()) / 1e6);
    const auto filter = [&all](const char *label, const QString &action, const QString &actor,
                               const QString &target) {
        QElapsedTimer f;
        f.start();
        std::vector<const AuditRecord *> shown;
        for (auto it = all.rbegin(); it != all.rend(); ++it) {
            const AuditEntry &e = it->entry;
            if (!action.isEmpty() && QString::fromStdString(e.action) != action)
                continue;
            if (!actor.isEmpty() &&
                !QString::fromStdString(e.who).contains(actor, Qt::CaseInsensitive))
                continue;
            if (!target.isEmpty() && !QString::fromStdString(e.target).startsWith(target))
                continue;
            shown.push_back(&*it);
        }
        std::printf("filter change: %s: %.1f ms (%zu shown)\n", label,
                    static_cast<double>(f.nsecsElapsed()) / 1e6, shown.size());
    };
    filter("action", QStringLiteral("dlq_replay"), {}, {});
    filter("operation", {}, {}, QStringLiteral("default/run-4242:refund"));
    filter("namespace", {}, {}, QStringLiteral("sandbox-1/"));
    filter("actor", {}, QStringLiteral("operator-3"), {});
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    QApplication app(argc, argv);
    const QStringList args = app.arguments().mid(1);
    const bool before = args.contains(QStringLiteral("--whole-log"));
    QString path = QStringLiteral("/tmp/idempo-bench-audit.db");
    for (const QString &a : args)
        if (!a.startsWith(QLatin1String("--")))
            path = a;
    if (!QFile::exists(path)) {
        QElapsedTimer g;
        g.start();
        generate(path);
        std::printf("generated %d audit records in %.1f s\n", Records,
                    static_cast<double>(g.elapsed()) / 1000.0);
    }
    LedgerConnection connection;
    QSignalSpy opened(&connection, &LedgerConnection::opened);
    connection.open(QStringLiteral("sqlite:") + path);
    if (!opened.wait(60'000)) {
        std::fprintf(stderr, "ledger did not open\n");
        return 1;
    }
    if (before) {
        wholeLog(connection);
        std::printf("peak memory (max RSS): %.1f MB\n", peakMb());
        return 0;
    }
    AuditView view(&connection);
    view.resize(1024, 600);
    view.show();
    std::printf("first rows (newest page): %.1f ms\n", timeToPage(view, [&] { view.reload(); }));
    const auto change = [&](const char *label, auto set) {
        timeToPage(view, [&] { view.showOperation({}, {}); });
        // reload() applies the filters at once: the 250 ms typing debounce is not measured.
        const double filtered = timeToPage(view, [&] {
            set();
            view.reload();
        });
        std::printf("filter change: %s: %.1f ms (%d rows in the first page)\n", label, filtered,
                    view.model()->rowCount());
    };
    change("action (dlq_replay, 250 records)",
           [&] { view.actionFilter()->setCurrentText(QStringLiteral("dlq_replay")); });
    change("operation (default/run-4242:refund, whole target)", [&] {
        view.showOperation(QStringLiteral("default"), QStringLiteral("run-4242:refund"));
    });
    change("namespace (sandbox-1, a quarter of the log)",
           [&] { view.namespaceFilter()->setText(QStringLiteral("sandbox-1")); });
    change("actor (operator-3, a seventh)",
           [&] { view.actorFilter()->setText(QStringLiteral("operator-3")); });
    change("target prefix of 11 operations (default/run-4242)",
           [&] { view.targetFilter()->setText(QStringLiteral("default/run-4242")); });
    change("within last hour (360 records)", [&] { view.timeFilter()->setCurrentIndex(1); });
    std::printf("peak memory (max RSS): %.1f MB\n", peakMb());
    return 0;
}
