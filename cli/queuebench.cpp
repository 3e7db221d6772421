// SPDX-License-Identifier: Apache-2.0
#include "queuebench.h"

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include <QDateTime>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QVariant>

#include "error.h"
#include "messagequeue.h"
#include "postgresledgerstore.h"
#include "queuename.h"
#include "sqliteledgerstore.h"
#include "sqlitemessagequeue.h"
#include "sqlitesupport.h"

namespace idempo::cli {
namespace {

constexpr int kRounds = 3;
constexpr std::int64_t kVisibilityMs = 30'000;

const std::string kMessage(QueueBenchMessage);

/// Messages per second of each phase.
struct Rates
{
    double send = 0;
    double read = 0;
    double remove = 0;
};

/// Every round's rates, and each side's best.
struct Results
{
    Rates engine;
    Rates raw;
    nlohmann::json rounds = nlohmann::json::array();

    void add(const Rates &e, const Rates &r)
    {
        const auto json = [](const Rates &x) {
            return nlohmann::json{{"send", x.send}, {"read", x.read}, {"delete", x.remove}};
        };
        rounds.push_back({{"engine", json(e)}, {"raw", json(r)}});
        engine = {std::max(engine.send, e.send), std::max(engine.read, e.read),
                  std::max(engine.remove, e.remove)};
        raw = {std::max(raw.send, r.send), std::max(raw.read, r.read),
               std::max(raw.remove, r.remove)};
    }
};

/// Calls per second of `body(0)` … `body(count - 1)`.
double perSecond(int count, const std::function<void(int)> &body)
{
    QElapsedTimer timer;
    timer.start();
    for (int i = 0; i < count; ++i)
        body(i);
    return count * 1e9 / static_cast<double>(std::max<qint64>(1, timer.nsecsElapsed()));
}

Error benchFailure(const std::string &what)
{
    return Error(ErrorCode::Internal, "bench queue: " + what);
}

/// Sends, reads and deletes `messages` messages through the MessageQueue API on the empty
/// queue `name`, checking each answer as a worker would.
Rates measureEngine(MessageQueue &queue, const std::string &name, int messages)
{
    Rates rates;
    std::vector<std::int64_t> ids(static_cast<std::size_t>(messages));
    rates.send = perSecond(messages, [&](int i) {
        ids[static_cast<std::size_t>(i)] = queue.send(name, kMessage, "", 0);
    });
    rates.read = perSecond(messages, [&](int) {
        if (queue.read(name, kVisibilityMs, 1).size() != 1)
            throw benchFailure("a read found no message");
    });
    rates.remove = perSecond(messages, [&](int i) {
        if (!queue.deleteMessage(name, ids[static_cast<std::size_t>(i)]))
            throw benchFailure("a delete found no message");
    });
    return rates;
}

/// Throws unless `name` holds `length` messages, `visible` of them visible: what the engine's
/// phases leave, so the raw side did the same work and not less.
void checkLeft(MessageQueue &queue, const std::string &name, std::int64_t length,
               std::int64_t visible)
{
    const QueueMetrics m = queue.metrics(name);
    if (m.length != length || m.visibleLength != visible) {
        throw benchFailure("the raw statements left " + std::to_string(m.length) + " messages (" +
                           std::to_string(m.visibleLength) + " visible) in " + name + ", not " +
                           std::to_string(length) + " (" + std::to_string(visible) + ")");
    }
}

// ---- SQLite: the statements SqliteMessageQueue issues, through the same statement cache ----

/// The raw side of one queue of the embedded ledger, `name`.
class SqliteRawQueue final
{
public:
    SqliteRawQueue(SqliteConnection &db, const std::string &name)
        : m_db(db), m_name(QString::fromStdString(name)),
          m_table(QLatin1Char('"') + QString::fromStdString(QueueName(name).queueTable()) +
                  QLatin1Char('"'))
    {
    }

    void send(qlonglong now)
    {
        WriteTransaction tx(m_db);
        lookUpQueue();
        run(m_db,
            QStringLiteral("INSERT INTO ") + m_table +
                QStringLiteral(" (enqueued_at, vt, message, headers) VALUES (?,?,?,?)"),
            {now, now, QString::fromStdString(kMessage), QVariant()}, "raw send");
        tx.commit();
    }

    void read(qlonglong now)
    {
        WriteTransaction tx(m_db);
        lookUpQueue();
        qlonglong id = 0;
        int readCount = 0;
        {
            Statement q =
                run(m_db,
                    QStringLiteral("SELECT msg_id, read_ct, enqueued_at, last_read_at, vt, "
                                   "message, headers FROM ") +
                        m_table +
                        QStringLiteral(" WHERE vt <= ? AND msg_id > ? ORDER BY msg_id LIMIT ?"),
                    {now, 0, 1}, "raw read");
            if (!q->next())
                throw benchFailure("a raw read found no message");
            id = q->value(0).toLongLong();
            readCount = q->value(1).toInt();
        }
        run(m_db,
            QStringLiteral("UPDATE ") + m_table +
                QStringLiteral(" SET vt = ?, read_ct = ?, last_read_at = ? WHERE msg_id = ?"),
            {now + kVisibilityMs, readCount + 1, now, id}, "raw read");
        tx.commit();
    }

    void remove(qlonglong msgId)
    {
        WriteTransaction tx(m_db);
        lookUpQueue();
        run(m_db, QStringLiteral("DELETE FROM ") + m_table + QStringLiteral(" WHERE msg_id = ?"),
            {msgId}, "raw delete");
        run(m_db, QStringLiteral("DELETE FROM queue_errors WHERE queue_name = ? AND msg_id = ?"),
            {m_name, msgId}, "raw delete");
        tx.commit();
    }

private:
    void lookUpQueue()
    {
        Statement q = run(
            m_db,
            QStringLiteral(
                "SELECT queue_name, max_reads, dead_letter_queue, created_at FROM queue_registry "
                "WHERE queue_name = ?"),
            {m_name}, "raw registry lookup");
        if (!q->next())
            throw benchFailure("no queue " + m_name.toStdString());
    }

    SqliteConnection &m_db;
    QString m_name;
    QString m_table;
};

Rates measureSqliteRaw(SqliteLedgerStore &store, MessageQueue &queue, const std::string &name,
                       int messages)
{
    SqliteRawQueue raw(store.connection(), name);
    Rates rates;
    rates.send = perSecond(messages, [&](int) { raw.send(QDateTime::currentMSecsSinceEpoch()); });
    checkLeft(queue, name, messages, messages);
    rates.read = perSecond(messages, [&](int) { raw.read(QDateTime::currentMSecsSinceEpoch()); });
    checkLeft(queue, name, messages, 0);
    const std::int64_t first = queue.browse(name, 0, 1).front().msgId;
    rates.remove = perSecond(messages, [&](int i) { raw.remove(first + i); });
    checkLeft(queue, name, 0, 0);
    return rates;
}

nlohmann::json benchSqlite(const QueueBenchOptions &options, Results &results)
{
    // A fresh ledger of the same kind, so the figures do not depend on (or pollute) the user's.
    QTemporaryDir dir;
    auto store = std::make_shared<SqliteLedgerStore>(dir.filePath(QStringLiteral("bench.db")),
                                                     std::make_shared<SystemClock>());
    SqliteMessageQueue queue(store);
    for (int round = 0; round < kRounds; ++round) {
        const std::string rawName = "raw" + std::to_string(round);
        const std::string engineName = "engine" + std::to_string(round);
        queue.createQueue(rawName, {});
        queue.createQueue(engineName, {});
        const Rates r = measureSqliteRaw(*store, queue, rawName, options.messages);
        results.add(measureEngine(queue, engineName, options.messages), r);
    }
    return {{"ledger", "sqlite (fresh temporary file, synchronous=FULL, WAL)"},
            {"baseline", "raw statements"}};
}

nlohmann::json phase(double engine, double raw)
{
    return {{"engine_per_s", engine}, {"raw_per_s", raw}, {"ratio", raw > 0 ? engine / raw : 0.0}};
}

} // namespace

nlohmann::json benchQueue(std::shared_ptr<LedgerStore> ledger, const QueueBenchOptions &options)
{
    Results results;
    nlohmann::json report;
    if (auto postgres = std::dynamic_pointer_cast<PostgresLedgerStore>(ledger))
        return benchQueuePostgres(std::move(postgres), options);
    if (!std::dynamic_pointer_cast<SqliteLedgerStore>(ledger))
        throw Error(ErrorCode::InvalidArgument,
                    "bench queue needs an sqlite: or postgresql:// ledger");
    report = benchSqlite(options, results);
    report["messages"] = options.messages;
    report["rounds"] = results.rounds;
    report["send"] = phase(results.engine.send, results.raw.send);
    report["read"] = phase(results.engine.read, results.raw.read);
    report["delete"] = phase(results.engine.remove, results.raw.remove);
    return report;
}

std::string queueBenchReportText(const nlohmann::json &report)
{
    char line[1024]; // room for a long PostgreSQL connection string
    if (report["baseline"] == "pgmq") {
        std::snprintf(
            line, sizeof line,
            "bench queue on %s\n  %d cycles x 3 rounds, %d worker(s) and pgbench client(s), best "
            "round of each side\n"
            "  pgmq send + read + delete:            %8.0f cycles/s\n"
            "  engine statements (pgbench):          %8.0f cycles/s\n"
            "  engine send + read + ack:             %8.0f cycles/s  %5.2fx pgmq  %5.2fx "
            "own statements\n"
            "  engine send + read carrying the ack:  %8.0f cycles/s  %5.2fx pgmq\n"
            "  cleanup: %s",
            report["ledger"].get<std::string>().c_str(), report["cycles"].get<int>(),
            report["workers"].get<int>(), report["pgmq_cycles_per_s"].get<double>(),
            report["raw_cycles_per_s"].get<double>(), report["engine_cycles_per_s"].get<double>(),
            report["ratio"].get<double>(), report["raw_ratio"].get<double>(),
            report["engine_carried_cycles_per_s"].get<double>(),
            report["carried_ratio"].get<double>(), report["cleanup"].get<std::string>().c_str());
        return line;
    }
    std::string text = "bench queue on " + report["ledger"].get<std::string>() + "\n  " +
                       std::to_string(report["messages"].get<int>()) + " messages x " +
                       std::to_string(report["rounds"].size()) +
                       " rounds, 1 client, best round of each side\n";
    std::snprintf(line, sizeof line, "  %-8s %14s %14s %7s\n", "", "engine msg/s", "raw SQL msg/s",
                  "ratio");
    text += line;
    for (const char *name : {"send", "read", "delete"}) {
        const nlohmann::json &p = report[name];
        std::snprintf(line, sizeof line, "  %-8s %14.0f %14.0f %7.2f\n", name,
                      p["engine_per_s"].get<double>(), p["raw_per_s"].get<double>(),
                      p["ratio"].get<double>());
        text += line;
    }
    text.pop_back();
    return text;
}

} // namespace idempo::cli
