// SPDX-License-Identifier: Apache-2.0
#include "queuebench.h"

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include <QDateTime>
#include <QElapsedTimer>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTemporaryFile>
#include <QVariant>

#include "error.h"
#include "messagequeue.h"
#include "pgbench.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "postgresmessagequeue.h"
#include "queuename.h"
#include "sqliteledgerstore.h"
#include "sqlitemessagequeue.h"
#include "sqlitesupport.h"

namespace idempo::cli {
namespace {

constexpr int kRounds = 3;
constexpr std::int64_t kVisibilityMs = 30'000;
constexpr int kMaxReads = QueueOptions{}.maxReads;

/// What both sides send: the envelope (queueenvelope.h) of a typical step, in canonical form.
const std::string kMessage =
    R"({"idempotency_key":"run-1:provision_account","payload":{"amount":1250,"currency":"EUR"},)"
    R"("produced_at":"2026-11-29T12:00:00Z","run_id":"run-1","source_agent":"planner",)"
    R"("step_id":"provision_account","target_agent":"provisioner"})";

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

// ---- PostgreSQL: pgbench on the statements PostgresMessageQueue prepares ----

/// pgbench's rate, without connection time, of `transactions` runs of `script` on one client.
double runPgbench(const QString &program, const std::string &conninfo, const std::string &script,
                  const std::vector<std::string> &defines, int transactions)
{
    QTemporaryFile file;
    if (!file.open() || file.write(QByteArray::fromStdString(script)) < 0 || !file.flush())
        throw benchFailure("cannot write the pgbench script: " + file.errorString().toStdString());
    return measurePgbench(program, QString::fromStdString(conninfo), file.fileName(), defines, 1,
                          transactions);
}

Rates measurePgbench(const QString &program, const std::string &conninfo,
                     PostgresMessageQueue &queue, const std::string &name, int messages)
{
    Rates rates;
    rates.send = runPgbench(program, conninfo,
                            pgbenchStatement(PostgresMessageQueue::sendSql(name),
                                             {"NULL", ":offset", ":delay", ":message", "NULL"}) +
                                ";\n",
                            {"offset=0", "delay=0", "message=" + kMessage}, messages);
    checkLeft(queue, name, messages, messages);
    rates.read =
        runPgbench(program, conninfo,
                   pgbenchStatement(PostgresMessageQueue::readSql(name),
                                    {"NULL", ":offset", ":maxreads", ":vt", ":qty", ":after"}) +
                       ";\n",
                   {"offset=0", "maxreads=" + std::to_string(kMaxReads),
                    "vt=" + std::to_string(kVisibilityMs), "qty=1", "after=0"},
                   messages);
    checkLeft(queue, name, messages, 0);
    // pgbench keeps a client's variables from one transaction to the next: :id walks the ids.
    const std::int64_t first = queue.browse(name, 0, 1).front().msgId;
    rates.remove = runPgbench(
        program, conninfo,
        "\\set id :id + 1\n" +
            pgbenchStatement(PostgresMessageQueue::deleteSql(name), {":id", ":queue"}) + ";\n",
        {"id=" + std::to_string(first - 1), "queue=" + name}, messages);
    checkLeft(queue, name, 0, 0);
    return rates;
}

/// Drops the queues (and their dead-letter queues) named `prefix`…; returns what happened.
std::string dropBenchQueues(PgConnection &c, const std::vector<QueueName> &queues,
                            const std::string &prefix)
{
    if (queues.empty())
        return "no queue to drop";
    try {
        PgTransaction tx(c);
        std::string drop = "DROP TABLE IF EXISTS ";
        for (const QueueName &q : queues) {
            for (const QueueName &table : {q, q.deadLetterQueue()}) {
                for (const std::string &t : {table.queueTable(), table.archiveTable()})
                    drop += (drop.back() == ' ' ? "" : ", ") + std::string("\"") +
                            std::string(PostgresMessageQueue::Schema) + "\".\"" + t + "\"";
            }
        }
        c.execScript("drop the benchmark's queues", drop);
        c.exec("forget the benchmark's queues",
               "WITH registered AS (DELETE FROM queue_registry WHERE queue_name ^@ $1 RETURNING "
               "queue_name) "
               "DELETE FROM queue_errors WHERE queue_name ^@ $1",
               PgParams().text(prefix));
        tx.commit();
        return "dropped " + std::to_string(queues.size() * 2) + " queues " + prefix + "*";
    } catch (const Error &e) {
        const std::string left = "queues " + prefix + "* left (" + e.what() + ")";
        spdlog::warn("bench queue: {}", left);
        return left;
    }
}

nlohmann::json benchPostgres(std::shared_ptr<PostgresLedgerStore> store,
                             const QueueBenchOptions &options, Results &results)
{
    const QString program = QStandardPaths::findExecutable(QStringLiteral("pgbench"));
    if (program.isEmpty())
        throw Error(ErrorCode::LedgerUnavailable,
                    "bench queue on PostgreSQL compares against pgbench, which is not on "
                    "PATH (Debian: apt install postgresql-client)");
    // Without its password: pgbench and the admin connection find it as idempo does (.pgpass).
    const std::string conninfo = store->describe();
    PgConnection admin(conninfo);
    PostgresMessageQueue queue(store);
    const std::string prefix = "bench_" + std::to_string(QDateTime::currentMSecsSinceEpoch()) + "_";
    std::vector<QueueName> created;
    try {
        for (int round = 0; round < kRounds; ++round) {
            const QueueName rawName(prefix + "raw" + std::to_string(round));
            const QueueName engineName(prefix + "engine" + std::to_string(round));
            for (const QueueName &name : {rawName, engineName}) {
                queue.createQueue(name.str(), {});
                created.push_back(name);
            }
            const Rates r =
                measurePgbench(program, conninfo, queue, rawName.str(), options.messages);
            results.add(measureEngine(queue, engineName.str(), options.messages), r);
        }
    } catch (...) {
        dropBenchQueues(admin, created, prefix);
        throw;
    }
    return {{"ledger", conninfo + " (raw SQL: pgbench -M prepared -c 1, same statements)"},
            {"baseline", "pgbench"},
            {"cleanup", dropBenchQueues(admin, created, prefix)}};
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
        report = benchPostgres(std::move(postgres), options, results);
    else if (std::dynamic_pointer_cast<SqliteLedgerStore>(ledger))
        report = benchSqlite(options, results);
    else
        throw Error(ErrorCode::InvalidArgument,
                    "bench queue needs an sqlite: or postgresql:// ledger");
    report["messages"] = options.messages;
    report["rounds"] = results.rounds;
    report["send"] = phase(results.engine.send, results.raw.send);
    report["read"] = phase(results.engine.read, results.raw.read);
    report["delete"] = phase(results.engine.remove, results.raw.remove);
    return report;
}

std::string queueBenchReportText(const nlohmann::json &report)
{
    std::string text = "bench queue on " + report["ledger"].get<std::string>() + "\n  " +
                       std::to_string(report["messages"].get<int>()) + " messages x " +
                       std::to_string(report["rounds"].size()) +
                       " rounds, 1 client, best round of each side\n";
    char line[160];
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
    if (report.contains("cleanup"))
        text += "  cleanup: " + report["cleanup"].get<std::string>() + "\n";
    text.pop_back();
    return text;
}

} // namespace idempo::cli
