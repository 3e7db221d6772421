// SPDX-License-Identifier: Apache-2.0
#include "audittablemodel.h"

#include <nlohmann/json.hpp>

#include <QDateTime>

#include "auditchange.h"
#include "displayformat.h"
#include "textescape.h"

namespace idempo {

namespace {

nlohmann::json parsedOrText(const std::string &text)
{
    if (text.empty())
        return nullptr;
    auto j = nlohmann::json::parse(text, nullptr, false);
    return j.is_discarded() ? nlohmann::json(text) : j;
}

} // namespace

AuditTableModel::AuditTableModel(LedgerConnection *connection, QObject *parent)
    : PagedTableModel<AuditRecord>(connection, parent)
{
}

void AuditTableModel::setFilter(const AuditFilter &filter)
{
    m_filter = filter;
    reload();
}

PagedTableModel<AuditRecord>::Loader AuditTableModel::loader() const
{
    return
        [filter = m_filter](LedgerStore &store, MessageQueue *, KeysetPosition after, int limit) {
            AuditFilter f = filter;
            f.newestFirst = true;
            f.afterSeq = after.isStart() ? 0 : after.id;
            f.limit = limit;
            PageResult<AuditRecord> page;
            page.storeNowMs = store.nowMs();
            page.rows = store.auditRecords(f);
            page.more = static_cast<int>(page.rows.size()) == limit;
            if (!page.rows.empty())
                page.cursor = {-page.rows.back().seq, page.rows.back().seq};
            else
                page.cursor = after;
            return page;
        };
}

int AuditTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant AuditTableModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    return cell(rowAt(index.row()), index.column(), role);
}

QVariant AuditTableModel::cell(const AuditRecord &r, int column, int role)
{
    const AuditEntry &e = r.entry;
    if (role == TargetRole)
        return QString::fromStdString(e.target);
    if (role == Qt::ToolTipRole && column == Change)
        return QStringLiteral("%1\n→\n%2").arg(prettyJson(e.beforeState), prettyJson(e.afterState));
    if (role == Qt::ToolTipRole)
        return prettyJson(e.detail);
    if (role != Qt::DisplayRole)
        return {};
    switch (static_cast<Column>(column)) {
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
        return QString::fromStdString(auditChangeText(e));
    case ApprovalId:
        return displayText(e.approvalId);
    case ColumnCount:
        break;
    }
    return {};
}

QVariant AuditTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    // No pane shows a record's reason whole: it gives way with the names, not before them. The
    // target names what the record is about and gives way last; the approval id (a hash, read
    // by copying it) first.
    if (orientation == Qt::Horizontal && role == HeaderElidesRole) {
        if (section == Target)
            return ElidesLast;
        if (section == ApprovalId)
            return ElidesFirst;
        return section == Who || section == Reason;
    }
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char *const names[] = {
        "#", "When", "Who", "Role", "Action", "Target", "Reason", "Before → after", "Approval id"};
    return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

QString AuditTableModel::csv(const std::vector<AuditRecord> &records)
{
    QString out =
        QStringLiteral("seq,at,who,role,action,target,reason,before,after,approval_id,detail\n");
    for (const AuditRecord &record : records) {
        const AuditEntry &e = record.entry;
        QStringList row{
            QString::number(record.seq),
            QDateTime::fromMSecsSinceEpoch(record.atMs, Qt::UTC).toString(Qt::ISODateWithMs)};
        for (const std::string &f :
             {e.who, e.role, e.action, e.target, e.reason, escapedJson(e.beforeState),
              escapedJson(e.afterState), e.approvalId, escapedJson(e.detail)})
            row << QString::fromStdString(csvField(f));
        out += row.join(QLatin1Char(',')) + QLatin1Char('\n');
    }
    return out;
}

QString AuditTableModel::json(const std::vector<AuditRecord> &records)
{
    nlohmann::json out = nlohmann::json::array();
    for (const AuditRecord &record : records) {
        const AuditEntry &e = record.entry;
        out.push_back({{"seq", record.seq},
                       {"at_ms", record.atMs},
                       {"who", e.who},
                       {"role", e.role},
                       {"action", e.action},
                       {"target", e.target},
                       {"reason", e.reason},
                       {"before", parsedOrText(e.beforeState)},
                       {"after", parsedOrText(e.afterState)},
                       {"approval_id", e.approvalId},
                       {"detail", parsedOrText(e.detail)},
                       {"hash", record.hash},
                       {"prev_hash", record.prevHash},
                       {"target_prev_hash", record.targetPrevHash}});
    }
    return QString::fromStdString(
        escapedJson(out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)));
}

} // namespace idempo
