// SPDX-License-Identifier: Apache-2.0
#include "deadlettertablemodel.h"

#include <nlohmann/json.hpp>

#include "displayformat.h"

namespace idempo {

DeadLetterTableModel::DeadLetterTableModel(LedgerConnection *connection, QObject *parent)
    : PagedTableModel<DeadLetter>(connection, parent)
{
}

void DeadLetterTableModel::setQueue(const std::string &queue, const std::string &keyPrefix)
{
    m_queue = queue;
    m_keyPrefix = keyPrefix;
    reload();
}

int DeadLetterTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

std::string DeadLetterTableModel::keyOf(const DeadLetter &letter)
{
    try {
        const auto json = nlohmann::json::parse(letter.message.message);
        if (json.is_object() && json.contains("idempotency_key") &&
            json["idempotency_key"].is_string())
            return json["idempotency_key"].get<std::string>();
    } catch (const nlohmann::json::exception &) {
        // Not an envelope: a dead letter can hold any JSON; it simply has no key to show.
    }
    return {};
}

QVariant DeadLetterTableModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const DeadLetter &d = rowAt(index.row());
    if (role == KeyRole)
        return displayText(keyOf(d));
    if (role == Qt::ToolTipRole && index.column() == Payload)
        return prettyJson(d.message.message);
    if (role == RawRole) {
        switch (index.column()) {
        case MsgId:
            return static_cast<qlonglong>(d.message.msgId);
        case DeadLetteredAt:
            return static_cast<qlonglong>(d.provenance.deadLetteredAtMs);
        case ReadCount:
            return d.provenance.readCount;
        default:
            break;
        }
    }
    if (role != Qt::DisplayRole && role != RawRole)
        return {};
    switch (index.column()) {
    case MsgId:
        return static_cast<qlonglong>(d.message.msgId);
    case DeadLetteredAt:
        return timestampText(d.provenance.deadLetteredAtMs);
    case ReadCount:
        return d.provenance.readCount;
    case LastError:
        if (!d.provenance.lastErrorClass)
            return tr("(never nacked)");
        return QString(QString::fromLatin1(errorClassName(*d.provenance.lastErrorClass).data()) +
                       QStringLiteral(": ") + displayText(d.provenance.lastErrorDetail));
    case Key:
        return displayText(keyOf(d));
    case Payload:
        return displayText(d.message.message).left(200);
    }
    return {};
}

QVariant DeadLetterTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == HeaderElidesRole)
        return section == Key                               ? ElidesLast
               : section == LastError || section == Payload ? ElidesFirst
                                                            : 0;
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole)
        return tr("Listed by message id, as the queue pages its dead letters: it cannot order them "
                  "by a column");
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case MsgId:
        return tr("Message");
    case DeadLetteredAt:
        return tr("Dead-lettered");
    case ReadCount:
        return tr("Reads");
    case LastError:
        return tr("Last error");
    case Key:
        return tr("Operation key");
    case Payload:
        return tr("Payload");
    }
    return {};
}

PagedTableModel<DeadLetter>::Loader DeadLetterTableModel::loader() const
{
    return [queue = m_queue, prefix = m_keyPrefix](LedgerStore &store, MessageQueue *queues,
                                                   KeysetPosition after, int limit) {
        PageResult<DeadLetter> page;
        page.storeNowMs = store.nowMs();
        page.cursor = after;
        const std::int64_t afterId = after.id;
        if (!queues || queue.empty())
            return page;
        std::vector<DeadLetter> batch = queues->deadLetters(queue, afterId, limit);
        page.more = static_cast<int>(batch.size()) == limit;
        if (!batch.empty())
            page.cursor = {0, batch.back().message.msgId};
        for (DeadLetter &d : batch)
            if (prefix.empty() || keyOf(d).compare(0, prefix.size(), prefix) == 0)
                page.rows.push_back(std::move(d));
        return page;
    };
}

} // namespace idempo
