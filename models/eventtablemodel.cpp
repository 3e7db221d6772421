// SPDX-License-Identifier: Apache-2.0
#include "eventtablemodel.h"

#include "displayformat.h"

namespace idempo {

EventTableModel::EventTableModel(QObject *parent) : QAbstractTableModel(parent) {}

void EventTableModel::setEvents(std::vector<OperationEvent> events)
{
    beginResetModel();
    m_events = std::move(events);
    endResetModel();
}

int EventTableModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_events.size());
}

int EventTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant EventTableModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const OperationEvent &e = m_events[static_cast<std::size_t>(index.row())];
    if (role == Qt::DecorationRole && index.column() == Transition)
        return stateColor(e.toState);
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case At:
        return timestampText(e.atMs);
    case Transition:
        return QString((e.fromState ? QString(stateText(*e.fromState) + QStringLiteral(" → "))
                                    : tr("created → ")) +
                       stateText(e.toState));
    case Token:
        return static_cast<qlonglong>(e.fencingToken);
    case Attempt:
        return e.attempt;
    case Actor:
        return displayText(e.actor);
    case Error:
        return e.errorClass ? QString::fromLatin1(errorClassName(*e.errorClass).data()) : QString();
    case Detail:
        return displayText(e.detail);
    }
    return {};
}

QVariant EventTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case At:
        return tr("At");
    case Transition:
        return tr("Transition");
    case Token:
        return tr("Token");
    case Attempt:
        return tr("Attempt");
    case Actor:
        return tr("Actor");
    case Error:
        return tr("Error");
    case Detail:
        return tr("Detail");
    }
    return {};
}

} // namespace idempo
