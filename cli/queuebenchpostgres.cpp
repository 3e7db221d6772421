// SPDX-License-Identifier: Apache-2.0
// `idempo bench queue` on a PostgreSQL ledger: the engine's send + read + ack cycle on W
// workers beside pgmq's own send + read + delete (its SQL loaded into a database of its own) and
// beside the engine's own function calls, both driven by pgbench with W clients, in one run.
#include <algorithm>
#include <barrier>
#include <mutex>
#include <thread>
#include <vector>

#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include <QDateTime>
#include <QElapsedTimer>
#include <QFile>
#include <QStandardPaths>
#include <QTemporaryFile>

#include "conninfo.h"
#include "error.h"
#include "pgbench.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "postgresmessagequeue.h"
#include "queuebench.h"
#include "queuename.h"

namespace idempo::cli {
namespace {

constexpr int kRounds = 3;
constexpr std::int64_t kVisibilityMs = 30'000;
/// Messages every queue holds before a round and after it (each cycle sends one and removes
/// one), so that no read comes back empty however the clients interleave.
constexpr int kBacklog = 1'000;

Error benchFailure(const std::string &what)
{
    return Error(ErrorCode::Internal, "bench queue: " + what);
}

/// `conninfo` with database `dbname`, as a keyword string libpq and pgbench both read.
std::string withDatabase(const std::string &conninfo, const std::string &dbname)
{
    char *error = nullptr;
    PQconninfoOption *options = PQconninfoParse(libpqConninfo(conninfo).c_str(), &error);
    if (!options) {
        PQfreemem(error);
        throw benchFailure("cannot read the ledger's connection string");
    }
    const auto quoted = [](const std::string &value) {
        std::string out = "'";
        for (const char c : value) {
            if (c == '\'' || c == '\\')
                out += '\\';
            out += c;
        }
        return out + "'";
    };
    std::string out;
    for (const PQconninfoOption *o = options; o->keyword; ++o) {
        if (o->val && *o->val && std::string_view(o->keyword) != "dbname")
            out += std::string(o->keyword) + '=' + quoted(o->val) + ' ';
    }
    PQconninfoFree(options);
    return out + "dbname=" + quoted(dbname);
}

/// pgbench's rate of `script` on `workers` clients, `perWorker` transactions each.
double pgbenchRate(const QString &program, const std::string &conninfo, const std::string &script,
                   const std::vector<std::string> &defines, int workers, int perWorker)
{
    QTemporaryFile file;
    if (!file.open() || file.write(QByteArray::fromStdString(script)) < 0 || !file.flush())
        throw benchFailure("cannot write the pgbench script: " + file.errorString().toStdString());
    return measurePgbench(program, QString::fromStdString(conninfo), file.fileName(), defines,
                          workers, perWorker);
}

/// The engine's cycle through PostgresMessageQueue on `workers` threads, each on its own
/// connection (opened before the clock starts): send, read one message hidden for 30 s, ack it.
/// With `carried`, the ack travels with the worker's next read (readAndAck(), one transaction for
/// both), and the last one on its own. Returns cycles/s.
double engineCycles(PostgresMessageQueue &queue, PostgresLedgerStore &store,
                    const std::string &name, int workers, int perWorker, bool carried)
{
    const std::string message(QueueBenchMessage);
    std::barrier ready(workers + 1);
    std::mutex mutex;
    std::string failure;
    const auto fail = [&](const std::exception &e) {
        const std::lock_guard lock(mutex);
        if (failure.empty())
            failure = e.what();
    };
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w) {
        threads.emplace_back([&] {
            try {
                store.nowMs();
            } catch (const std::exception &e) {
                fail(e);
            }
            ready.arrive_and_wait();
            try {
                std::vector<ReadReceipt> pending;
                for (int i = 0; i < perWorker; ++i) {
                    queue.send(name, message, "", 0);
                    const std::vector<QueueMessage> got =
                        carried ? queue.readAndAck(name, kVisibilityMs, 1, pending)
                                : queue.read(name, kVisibilityMs, 1);
                    if (got.size() != 1)
                        throw benchFailure("a read found no message");
                    pending = {ReadReceipt::of(got.front())};
                    if (!carried)
                        queue.ack(name, pending.front());
                }
                if (carried && !pending.empty())
                    queue.ack(name, pending.front());
            } catch (const std::exception &e) {
                fail(e);
            }
        });
    }
    ready.arrive_and_wait();
    QElapsedTimer timer;
    timer.start();
    for (auto &t : threads)
        t.join();
    const qint64 elapsedNs = std::max<qint64>(1, timer.nsecsElapsed());
    if (!failure.empty())
        throw benchFailure(failure);
    return workers * static_cast<double>(perWorker) * 1e9 / static_cast<double>(elapsedNs);
}

/// Throws unless `count` is the backlog: each side removed every message it sent.
void checkBacklog(std::int64_t count, const std::string &what)
{
    if (count != kBacklog)
        throw benchFailure(what + " left " + std::to_string(count) + " messages, not " +
                           std::to_string(kBacklog));
}

/// pgbench's script of the engine's cycle: the very statements PostgresMessageQueue prepares.
std::string rawCycleScript(const std::string &queue)
{
    const std::string name = "'" + QueueName(queue).str() + "'";
    return pgbenchStatement(PostgresMessageQueue::SendSql,
                            {name, ":message", "NULL", "0", "NULL", "0"}) +
           ";\n" +
           pgbenchStatement("SELECT msg_id, read_ct FROM (" +
                                std::string(PostgresMessageQueue::ReadSql) + ") AS r",
                            {name, std::to_string(kVisibilityMs), "1", "NULL", "NULL", "0"}) +
           " \\gset r_\n" +
           pgbenchStatement(PostgresMessageQueue::AckSql,
                            {name, ":r_msg_id", ":r_read_ct", "NULL", "0"}) +
           ";\n";
}

/// pgmq's send + read + delete, as its own functions are called.
std::string pgmqCycleScript(const std::string &queue)
{
    return "SELECT pgmq.send('" + queue + "', CAST(:message AS jsonb));\n" +
           "SELECT msg_id FROM pgmq.read('" + queue + "', " + std::to_string(kVisibilityMs / 1000) +
           ", 1) \\gset\n" + "SELECT pgmq.delete('" + queue + "', CAST(:msg_id AS bigint));\n";
}

/// Drops the queues `queues` (and their dead-letter queues); returns what happened.
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
               "WITH registered AS (DELETE FROM idempo.queue_registry WHERE queue_name ^@ $1 "
               "RETURNING queue_name), acks AS (DELETE FROM idempo.queue_acks WHERE queue_name "
               "^@ $1) DELETE FROM idempo.queue_errors WHERE queue_name ^@ $1",
               PgParams().text(prefix));
        tx.commit();
        return "dropped " + std::to_string(queues.size() * 2) + " queues " + prefix + "*";
    } catch (const Error &e) {
        const std::string left = "queues " + prefix + "* left (" + e.what() + ")";
        spdlog::warn("bench queue: {}", left);
        return left;
    }
}

/// pgmq's SQL in a database of its own (it makes schema pgmq, where the ledger keeps its queue
/// tables), dropped when the bench ends.
class PgmqDatabase final
{
public:
    PgmqDatabase(PgConnection &admin, const std::string &conninfo, const std::string &sqlPath)
        : m_admin(admin),
          m_name("idempo_bench_pgmq_" + std::to_string(QDateTime::currentMSecsSinceEpoch()))
    {
        QFile file(QString::fromStdString(sqlPath));
        if (!file.open(QIODevice::ReadOnly))
            throw Error(ErrorCode::InvalidArgument,
                        "--pgmq: cannot read " + sqlPath + ": " + file.errorString().toStdString());
        const std::string sql = file.readAll().toStdString();
        try {
            m_admin.execScript("create pgmq's database", "CREATE DATABASE \"" + m_name + "\"");
        } catch (const Error &e) {
            throw Error(e.code(),
                        std::string("bench queue loads pgmq into a database of its own, which "
                                    "this login may not create: ") +
                            e.what());
        }
        try {
            m_conninfo = withDatabase(conninfo, m_name);
            PgConnection(m_conninfo).execScript("load pgmq", sql);
        } catch (...) {
            drop();
            throw;
        }
    }
    ~PgmqDatabase() { drop(); }
    PgmqDatabase(const PgmqDatabase &) = delete;
    PgmqDatabase &operator=(const PgmqDatabase &) = delete;

    const std::string &conninfo() const { return m_conninfo; }

private:
    void drop()
    {
        try {
            m_admin.execScript("drop pgmq's database",
                               "DROP DATABASE IF EXISTS \"" + m_name + "\" WITH (FORCE)");
        } catch (const Error &e) {
            spdlog::warn("bench queue: database {} left: {}", m_name, e.what());
        }
    }

    PgConnection &m_admin;
    std::string m_name;
    std::string m_conninfo;
};

} // namespace

nlohmann::json benchQueuePostgres(std::shared_ptr<PostgresLedgerStore> store,
                                  const QueueBenchOptions &options)
{
    const QString program = QStandardPaths::findExecutable(QStringLiteral("pgbench"));
    if (program.isEmpty())
        throw Error(ErrorCode::LedgerUnavailable,
                    "bench queue on PostgreSQL compares against pgbench, which is not on "
                    "PATH (Debian: apt install postgresql-client)");
    // Without its password: pgbench and the admin connection find it as idempo does (.pgpass).
    const std::string conninfo = store->describe();
    PgConnection admin(conninfo);
    PgmqDatabase pgmq(admin, conninfo, options.pgmqSql);
    PgConnection pgmqConnection(pgmq.conninfo());
    PostgresMessageQueue queue(store);
    const int workers = options.workers;
    const int perWorker = (options.messages + workers - 1) / workers;
    const std::string message(QueueBenchMessage);
    const std::vector<std::string> defines = {"message=" + message};
    const std::string prefix = "bench_" + std::to_string(QDateTime::currentMSecsSinceEpoch()) + "_";
    std::vector<QueueName> created;
    const auto engineQueue = [&](const std::string &name) {
        const QueueName q(prefix + name);
        queue.createQueue(q.str(), {});
        created.push_back(q);
        admin.exec("fill the queue",
                   "SELECT count(idempo.queue_send($1, $2)) FROM generate_series(1, $3::integer)",
                   PgParams().text(q.str()).text(message).integer(kBacklog));
        return q.str();
    };
    const auto backlog = [&](const std::string &name) { return queue.metrics(name).length; };
    double best[4] = {}; // pgmq, raw, engine, engine with carried acks
    nlohmann::json rounds = nlohmann::json::array();
    try {
        for (int round = 0; round < kRounds; ++round) {
            const std::string bq = "bq_" + std::to_string(round);
            pgmqConnection.exec("create pgmq's queue", "SELECT pgmq.create($1)",
                                PgParams().text(bq));
            pgmqConnection.exec("fill pgmq's queue",
                                "SELECT pgmq.send($1, $2::jsonb) FROM generate_series(1, "
                                "$3::integer)",
                                PgParams().text(bq).text(message).integer(kBacklog));
            const double pgmqRate = pgbenchRate(program, pgmq.conninfo(), pgmqCycleScript(bq),
                                                defines, workers, perWorker);
            checkBacklog(
                pgmqConnection.exec("count", "SELECT count(*) FROM pgmq.q_" + bq).integer(0, 0),
                "pgmq's cycle");
            const std::string raw = engineQueue("raw" + std::to_string(round));
            const double rawRate =
                pgbenchRate(program, conninfo, rawCycleScript(raw), defines, workers, perWorker);
            checkBacklog(backlog(raw), "pgbench on the engine's statements");
            const std::string three = engineQueue("engine" + std::to_string(round));
            const double engineRate = engineCycles(queue, *store, three, workers, perWorker, false);
            checkBacklog(backlog(three), "the engine's cycle");
            const std::string two = engineQueue("carried" + std::to_string(round));
            const double carriedRate = engineCycles(queue, *store, two, workers, perWorker, true);
            checkBacklog(backlog(two), "the engine's cycle with carried acks");
            const double rates[4] = {pgmqRate, rawRate, engineRate, carriedRate};
            for (int i = 0; i < 4; ++i)
                best[i] = std::max(best[i], rates[i]);
            rounds.push_back({{"pgmq_cycles_per_s", pgmqRate},
                              {"raw_cycles_per_s", rawRate},
                              {"engine_cycles_per_s", engineRate},
                              {"engine_carried_cycles_per_s", carriedRate}});
        }
    } catch (...) {
        dropBenchQueues(admin, created, prefix);
        throw;
    }
    const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
    return {{"ledger", conninfo + " (baselines: pgmq's functions and the engine's statements, "
                                  "pgbench -M prepared)"},
            {"baseline", "pgmq"},
            {"workers", workers},
            {"cycles", workers * perWorker},
            {"pgmq_cycles_per_s", best[0]},
            {"raw_cycles_per_s", best[1]},
            {"engine_cycles_per_s", best[2]},
            {"engine_carried_cycles_per_s", best[3]},
            {"ratio", ratio(best[2], best[0])},
            {"carried_ratio", ratio(best[3], best[0])},
            {"raw_ratio", ratio(best[2], best[1])},
            {"rounds", rounds},
            {"cleanup", dropBenchQueues(admin, created, prefix)}};
}

} // namespace idempo::cli
