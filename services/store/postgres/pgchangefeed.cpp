// SPDX-License-Identifier: Apache-2.0
// PgChangeFeed (declared in pgconnection.h): the long poll of idempo.wait_for_changes().
#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>
#include <poll.h>

#include "error.h"
#include "pgconnection.h"

namespace idempo {

PgChangeFeed::PgChangeFeed(const std::string &conninfo, std::string ns, int connectTimeoutS)
    : m_connection(conninfo, connectTimeoutS), m_ns(std::move(ns))
{
    m_snapshot = m_connection.exec("follow changes", "SELECT idempo.change_snapshot()").text(0, 0);
    ask();
}

void PgChangeFeed::ask()
{
    m_connection.sendPrepared(
        "follow changes", "idempo_wait_for_changes",
        "SELECT snapshot, changes::text FROM idempo.wait_for_changes($1, $2, $3::integer)",
        PgParams().text(m_snapshot).text(m_ns).integer(WaitMs));
    m_askedAt = std::chrono::steady_clock::now();
}

int PgChangeFeed::socket() const
{
    return m_connection.socket();
}

std::vector<PgNotification> PgChangeFeed::takeNotifications()
{
    std::optional<PgResult> answer = m_connection.takeResult("follow changes");
    if (!answer)
        return {};
    m_snapshot = answer->text(0, 0);
    std::vector<PgNotification> changes;
    const nlohmann::json list = nlohmann::json::parse(answer->text(0, 1), nullptr, false);
    if (list.is_array())
        for (const nlohmann::json &change : list)
            changes.push_back({"idempo_operations", change.dump(), 0});
    ask();
    return changes;
}

void PgChangeFeed::ping()
{
    using namespace std::chrono_literals;
    takeNotifications(); // a connection the server closed fails here
    const auto silent = std::chrono::steady_clock::now() - m_askedAt;
    if (silent > std::chrono::milliseconds(WaitMs) + 15s)
        throw Error(
            ErrorCode::LedgerUnavailable,
            "the ledger's change feed has not answered for " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(silent).count()) +
                " s");
}

std::vector<PgNotification> PgChangeFeed::waitForNotification(int timeoutMs)
{
    using Clock = std::chrono::steady_clock;
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
    for (;;) {
        std::vector<PgNotification> arrived = takeNotifications();
        if (!arrived.empty())
            return arrived;
        const auto left =
            std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0)
            return {};
        pollfd fd{m_connection.socket(), POLLIN, 0};
        if (::poll(&fd, 1, static_cast<int>(left)) < 0 && errno != EINTR)
            throw Error(ErrorCode::LedgerUnavailable,
                        std::string("waiting for ledger changes failed: ") + std::strerror(errno));
    }
}

} // namespace idempo
