// SPDX-License-Identifier: Apache-2.0
#include "displayformat.h"

#include <atomic>

#include <nlohmann/json.hpp>

#include <QDateTime>
#include <QTimeZone>

#include "textescape.h"

namespace idempo {

QString displayText(const std::string &text)
{
    return QString::fromStdString(escapedText(text));
}

QString stateText(OperationState state)
{
    return QString::fromLatin1(stateName(state).data(),
                               static_cast<qsizetype>(stateName(state).size()));
}

QString durationText(std::int64_t ms)
{
    const std::int64_t s = ms / 1000;
    if (s < 60)
        return QStringLiteral("%1 s").arg(s);
    if (s < 3600)
        return QStringLiteral("%1 min %2 s").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
    if (s < 86400)
        return QStringLiteral("%1 h %2 min")
            .arg(s / 3600)
            .arg((s % 3600) / 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1 d %2 h").arg(s / 86400).arg((s % 86400) / 3600);
}

namespace {
std::atomic<bool> g_utc{true};
}

bool timesInUtc()
{
    return g_utc.load();
}

void setTimesInUtc(bool utc)
{
    g_utc = utc;
}

QString timestampText(std::int64_t ms)
{
    const QDateTime at = timesInUtc() ? QDateTime::fromMSecsSinceEpoch(ms, QTimeZone::utc())
                                      : QDateTime::fromMSecsSinceEpoch(ms);
    return at.toString(QStringLiteral("yyyy-MM-dd HH:mm:ss ")) +
           (timesInUtc() ? QStringLiteral("UTC") : at.timeZoneAbbreviation());
}

QString isoTimestampText(const std::string &iso)
{
    const QDateTime at = QDateTime::fromString(QString::fromStdString(iso), Qt::ISODateWithMs);
    return at.isValid() ? timestampText(at.toMSecsSinceEpoch()) : displayText(iso);
}

QString customerText(const std::string &payload)
{
    const nlohmann::json body = nlohmann::json::parse(payload, nullptr, false);
    if (!body.is_object())
        return {};
    for (const char *name : {"customer", "customer_id", "client", "client_id"}) {
        const auto it = body.find(name);
        if (it == body.end())
            continue;
        if (it->is_string())
            return displayText(it->get<std::string>());
        if (it->is_number())
            return QString::fromStdString(it->dump());
    }
    return {};
}

QString prettyJson(const std::string &json)
{
    if (json.empty())
        return QString();
    try {
        return QString::fromStdString(escapedJson(nlohmann::json::parse(json).dump(2)));
    } catch (const nlohmann::json::exception &) {
        return displayText(json);
    }
}

QColor stateColor(OperationState state)
{
    switch (state) {
    case OperationState::Received:
        return QColor(0x8a, 0x8f, 0x98);
    case OperationState::AwaitingApproval:
        return QColor(0xd9, 0xa4, 0x1e);
    case OperationState::Dispatching:
        return QColor(0x3b, 0x82, 0xd6);
    case OperationState::Succeeded:
        return QColor(0x3f, 0xa3, 0x5b);
    case OperationState::FailedRetryable:
        return QColor(0xe0, 0x8a, 0x2e);
    case OperationState::UnknownOutcome:
        return QColor(0x9b, 0x59, 0xd0);
    case OperationState::ConfirmationRequired:
        return QColor(0xd6, 0x45, 0x45);
    case OperationState::FailedTerminal:
        return QColor(0x9e, 0x2a, 0x2a);
    }
    return QColor(Qt::gray);
}

bool needsAttention(OperationState state)
{
    return state == OperationState::ConfirmationRequired ||
           state == OperationState::UnknownOutcome || state == OperationState::AwaitingApproval;
}

} // namespace idempo
