// SPDX-License-Identifier: Apache-2.0
#include "driverlease.h"

#include <climits>
#include <cstdio>
#include <utility>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <QDateTime>
#include <QFile>
#include <QSysInfo>

#include "error.h"
#include "messagequeue.h"

namespace idempo::sandbox {
namespace {

/// Field 22 of /proc/PID/stat (start time in clock ticks since boot), and whether the process
/// is a zombie; std::nullopt when there is no such process.
std::optional<std::pair<std::string, bool>> processStart(const QString &pid)
{
    QFile stat(QStringLiteral("/proc/") + pid + QStringLiteral("/stat"));
    if (!stat.open(QIODevice::ReadOnly))
        return std::nullopt;
    // "pid (comm) state ppid …": comm may hold spaces, so count from its closing bracket.
    const QByteArray line = stat.readAll();
    const QList<QByteArray> fields = line.mid(line.lastIndexOf(')') + 2).split(' ');
    if (fields.size() < 20)
        return std::nullopt;
    return std::pair(fields.at(19).toStdString(), fields.at(0) == "Z");
}

/// The boot and the PID namespace this process runs in: pids compare only within both.
std::string thisMachine()
{
    QFile boot(QStringLiteral("/proc/sys/kernel/random/boot_id"));
    if (!boot.open(QIODevice::ReadOnly))
        return {};
    const QByteArray bootId = boot.readAll().trimmed();
    char pidNamespace[PATH_MAX]; // "pid:[4026531836]"
    const ssize_t length = ::readlink("/proc/self/ns/pid", pidNamespace, sizeof pidNamespace);
    if (bootId.isEmpty() || length <= 0)
        return {};
    return bootId.toStdString() + '/' + std::string(pidNamespace, static_cast<std::size_t>(length));
}

std::string when(std::int64_t ms)
{
    return QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC).toString(Qt::ISODateWithMs).toStdString();
}

std::string seconds(std::int64_t ms)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1f", static_cast<double>(ms) / 1000.0);
    return buffer;
}

/// `text` as one shell word.
std::string shellWord(const std::string &text)
{
    const bool plain = !text.empty() &&
                       text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_@%+=:,./-") == std::string::npos;
    if (plain)
        return text;
    std::string out = "'";
    for (const char c : text)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string pidOf(const std::string &instance)
{
    const std::size_t end = instance.rfind('/');
    const std::size_t start =
        end == std::string::npos ? std::string::npos : instance.rfind('/', end - 1);
    return start == std::string::npos ? std::string() : instance.substr(start + 1, end - start - 1);
}

QueueHolder mine(const std::string &queueName, const std::string &ns)
{
    return {queueName, ns,
            "pid " + std::to_string(::getpid()) + " on host " +
                QSysInfo::machineHostName().toStdString(),
            DriverLease::thisProcess(), 0};
}

} // namespace

std::int64_t emptySandboxQueue(MessageQueue &queue, const std::string &queueName)
{
    std::int64_t removed = 0;
    for (auto left = queue.browse(queueName, 0, 1000); !left.empty();
         left = queue.browse(queueName, 0, 1000))
        for (const QueueMessage &m : left)
            removed += queue.deleteMessage(queueName, m.msgId) ? 1 : 0;
    return removed;
}

std::string DriverLease::thisProcess()
{
    const std::string machine = thisMachine();
    const std::string pid = std::to_string(::getpid());
    const auto start = processStart(QString::fromStdString(pid));
    if (machine.empty() || !start)
        return "elsewhere/" + pid + "/0"; // no /proc: only the lease can tell
    return machine + '/' + pid + '/' + start->first;
}

std::optional<bool> DriverLease::isAlive(const std::string &instance)
{
    const std::string machine = thisMachine();
    if (machine.empty() || instance.compare(0, machine.size() + 1, machine + '/') != 0)
        return std::nullopt;
    const std::string rest = instance.substr(machine.size() + 1);
    const std::size_t slash = rest.find('/');
    if (slash == std::string::npos)
        return std::nullopt;
    const auto start = processStart(QString::fromStdString(rest.substr(0, slash)));
    return start && start->first == rest.substr(slash + 1) && !start->second;
}

DriverLease::DriverLease(SandboxJournal &journal, MessageQueue &queue, std::string queueName,
                         std::string ns, const std::string &ledger,
                         const std::function<void(const std::string &)> &say)
    : m_journal(journal), m_queue(queue), m_mine(mine(queueName, ns)),
      m_renewedAt(std::chrono::steady_clock::now())
{
    const std::string reset = "idempo --ledger " + shellWord(ledger) + " sandbox reset";
    // Two drivers starting together race for the row; the loser looks again.
    for (int attempt = 0; attempt < 3; ++attempt) {
        const auto [holder, nowMs] = m_journal.queueHolder(m_mine.queue);
        if (!holder) {
            const std::int64_t left = m_queue.metrics(m_mine.queue).length;
            if (left > 0) {
                throw Error(
                    ErrorCode::InvalidArgument,
                    "the sandbox queue '" + m_mine.queue + "' holds " + std::to_string(left) +
                        " messages of a run no driver holds (an older idempo's, or sent by hand); "
                        "if no sandbox run is going on, empty it with: " +
                        reset);
            }
            if (m_journal.takeQueue(m_mine, std::nullopt, LeaseMs))
                return;
            continue;
        }
        const std::optional<bool> alive = isAlive(holder->instance);
        const bool dead = alive ? !*alive : holder->leaseExpiresAtMs <= nowMs;
        if (!dead) {
            const std::string who = "the sandbox queue '" + m_mine.queue +
                                    "' is held by the run in namespace '" + holder->ns +
                                    "' (driver " + holder->driver + ")";
            if (alive) {
                throw Error(ErrorCode::LedgerBusy,
                            who +
                                ", which still runs on this machine: wait for it to end, "
                                "or stop it with kill -TERM " +
                                pidOf(holder->instance));
            }
            throw Error(ErrorCode::LedgerBusy, who + " until " + when(holder->leaseExpiresAtMs) +
                                                   " on the ledger's clock (in " +
                                                   seconds(holder->leaseExpiresAtMs - nowMs) +
                                                   " s) unless it renews its lease; try again "
                                                   "then, or, if that run is gone, clear the "
                                                   "queue now with: " +
                                                   reset);
        }
        if (!m_journal.takeQueue(m_mine, holder->instance, LeaseMs))
            continue;
        const std::int64_t removed = emptySandboxQueue(m_queue, m_mine.queue);
        say("sandbox: the run in namespace '" + holder->ns + "' (driver " + holder->driver +
            ") ended without cleaning up the sandbox queue '" + m_mine.queue + "'; removed its " +
            std::to_string(removed) +
            " messages. Its namespace stays as it was left: idempo --namespace " +
            shellWord(holder->ns) + " check");
        return;
    }
    throw Error(ErrorCode::LedgerBusy, "another sandbox run is taking the sandbox queue '" +
                                           m_mine.queue + "' right now; try again");
}

DriverLease::~DriverLease()
{
    try {
        if (m_queue.metrics(m_mine.queue).length == 0)
            m_journal.releaseQueue(m_mine.queue, m_mine.instance);
    } catch (const Error &e) {
        spdlog::warn(
            "sandbox: could not let the sandbox queue '{}' go ({}); the next run takes it over",
            m_mine.queue, e.what());
    }
}

void DriverLease::renew()
{
    const auto now = std::chrono::steady_clock::now();
    if (now - m_renewedAt < std::chrono::milliseconds(RenewEveryMs))
        return;
    if (!m_journal.renewQueue(m_mine.queue, m_mine.instance, LeaseMs)) {
        throw Error(ErrorCode::Refused,
                    "another sandbox run took the sandbox queue '" + m_mine.queue +
                        "' over while this driver could not renew its lease; this run "
                        "stops, its namespace '" +
                        m_mine.ns + "' stays as it was left");
    }
    m_renewedAt = now;
}

nlohmann::json DriverLease::reset(SandboxJournal &journal, MessageQueue &queue,
                                  const std::string &queueName)
{
    journal.createTables();
    for (int attempt = 0; attempt < 3; ++attempt) {
        const auto [holder, nowMs] = journal.queueHolder(queueName);
        if (holder && isAlive(holder->instance) == true) {
            throw Error(ErrorCode::Refused,
                        "the sandbox queue '" + queueName + "' is held by the run in namespace '" +
                            holder->ns + "' (driver " + holder->driver +
                            "), which still runs on this machine: stop it first (kill -TERM " +
                            pidOf(holder->instance) + ")");
        }
        const QueueHolder resetter = mine(queueName, "");
        if (!journal.takeQueue(resetter, holder ? std::optional(holder->instance) : std::nullopt,
                               LeaseMs))
            continue;
        std::int64_t removed = 0;
        try {
            removed = emptySandboxQueue(queue, queueName);
        } catch (const Error &e) {
            if (e.code() != ErrorCode::NotFound)
                throw; // no queue yet: nothing to remove
        }
        journal.releaseQueue(queueName, resetter.instance);
        nlohmann::json previous;
        if (holder)
            previous = {{"namespace", holder->ns},
                        {"driver", holder->driver},
                        {"lease_expires_at_ms", holder->leaseExpiresAtMs}};
        return {{"queue", queueName}, {"messages_removed", removed}, {"previous_holder", previous}};
    }
    throw Error(ErrorCode::LedgerBusy, "a sandbox run is taking the sandbox queue '" + queueName +
                                           "' right now; try again");
}

} // namespace idempo::sandbox
