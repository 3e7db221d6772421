// SPDX-License-Identifier: Apache-2.0
#include "audittablemodel.h"

#include <set>

#include <nlohmann/json.hpp>

#include <QDateTime>

#include "displayformat.h"
#include "textescape.h"

namespace idempo {

namespace {

/// "dispatching → received" from the before / after snapshots (their "state"), else the raw text.
QString changeText(const AuditEntry &e)
{
    const auto stateOf = [](const std::string &snapshot) -> QString {
        const auto j = nlohmann::json::parse(snapshot, nullptr, false);
        if (j.is_object() && j.contains("state") && j["state"].is_string())
            return QString::fromStdString(j["state"].get<std::string>());
        return {};
    };
    const QString before = stateOf(e.beforeState);
    const QString after = stateOf(e.afterState);
    if (before.isEmpty() && after.isEmpty())
        return {};
    return QStringLiteral("%1 → %2").arg(before.isEmpty() ? QStringLiteral("·") : before,
                                         after.isEmpty() ? QStringLiteral("·") : after);
}

nlohmann::json parsedOrText(const std::string &text)
{
    if (text.empty())
        return nullptr;
    auto j = nlohmann::json::parse(text, nullptr, false);
    return j.is_discarded() ? nlohmann::json(text) : j;
}

} // namespace

void AuditTableModel::setRecords(std::vector<AuditRecord> records)
{
    beginResetModel();
    m_records = std::move(records);
    apply();
    endResetModel();
}

void AuditTableModel::setFilter(const QString &action, const QString &actor,
                                const QString &targetPrefix)
{
    beginResetModel();
    m_action = action;
    m_actor = actor;
    m_target = targetPrefix;
    apply();
    endResetModel();
}

void AuditTableModel::apply()
{
    m_shown.clear();
    for (auto it = m_records.rbegin(); it != m_records.rend(); ++it) {
        const AuditEntry &e = it->entry;
        if (!m_action.isEmpty() && QString::fromStdString(e.action) != m_action)
            continue;
        if (!m_actor.isEmpty() &&
            !QString::fromStdString(e.who).contains(m_actor, Qt::CaseInsensitive))
            continue;
        if (!m_target.isEmpty() && !QString::fromStdString(e.target).startsWith(m_target))
            continue;
        m_shown.push_back(&*it);
    }
}

QStringList AuditTableModel::actions() const
{
    std::set<std::string> names;
    for (const AuditRecord &r : m_records)
        names.insert(r.entry.action);
    QStringList out;
    for (const std::string &n : names)
        out << QString::fromStdString(n);
    return out;
}

int AuditTableModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_shown.size());
}

int AuditTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant AuditTableModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const AuditRecord &r = recordAt(index.row());
    const AuditEntry &e = r.entry;
    if (role == Qt::ToolTipRole && index.column() == Change)
        return QStringLiteral("%1\n→\n%2").arg(prettyJson(e.beforeState), prettyJson(e.afterState));
    if (role == Qt::ToolTipRole)
        return prettyJson(e.detail);
    if (role != Qt::DisplayRole)
        return {};
    switch (static_cast<Column>(index.column())) {
    case Seq:
        return QVariant::fromValue<qint64>(r.seq);
    case When:
        return timestampText(r.atMs);
    case Who:
        return displayText(e.who);
    case Role:
        return displayText(e.role);
    case Action:
        return displayText(e.action);
    case Target:
        return displayText(e.target);
    case Reason:
        return displayText(e.reason);
    case Change:
        return changeText(e);
    case ApprovalId:
        return displayText(e.approvalId);
    case ColumnCount:
        break;
    }
    return {};
}

QVariant AuditTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char *const names[] = {
        "#", "When", "Who", "Role", "Action", "Target", "Reason", "Before → after", "Approval id"};
    return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

QString AuditTableModel::csv() const
{
    QString out =
        QStringLiteral("seq,at,who,role,action,target,reason,before,after,approval_id,detail\n");
    for (const AuditRecord *r : m_shown) {
        const AuditEntry &e = r->entry;
        QStringList row{
            QString::number(r->seq),
            QDateTime::fromMSecsSinceEpoch(r->atMs, Qt::UTC).toString(Qt::ISODateWithMs)};
        for (const std::string &f :
             {e.who, e.role, e.action, e.target, e.reason, escapedJson(e.beforeState),
              escapedJson(e.afterState), e.approvalId, escapedJson(e.detail)})
            row << QString::fromStdString(csvField(f));
        out += row.join(QLatin1Char(',')) + QLatin1Char('\n');
    }
    return out;
}

QString AuditTableModel::json() const
{
    nlohmann::json out = nlohmann::json::array();
    for (const AuditRecord *r : m_shown) {
        const AuditEntry &e = r->entry;
        out.push_back({{"seq", r->seq},
                       {"at_ms", r->atMs},
                       {"who", e.who},
                       {"role", e.role},
                       {"action", e.action},
                       {"target", e.target},
                       {"reason", e.reason},
                       {"before", parsedOrText(e.beforeState)},
                       {"after", parsedOrText(e.afterState)},
                       {"approval_id", e.approvalId},
                       {"detail", parsedOrText(e.detail)},
                       {"hash", r->hash},
                       {"prev_hash", r->prevHash}});
    }
    return QString::fromStdString(
        escapedJson(out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)));
}

} // namespace idempo
