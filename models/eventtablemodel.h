// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <vector>

#include <QAbstractTableModel>

#include "operation.h"

namespace idempo {

/// One operation's history (attempts, errors, actors), oldest first. Small by nature: the
/// detail pane loads it whole on the worker and hands it over with setEvents().
class EventTableModel final : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column
    {
        At,
        Transition,
        Token,
        Attempt,
        Actor,
        Error,
        Detail,
        ColumnCount
    };

    explicit EventTableModel(QObject *parent = nullptr);

    void setEvents(std::vector<OperationEvent> events);
    const std::vector<OperationEvent> &events() const { return m_events; }

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

private:
    std::vector<OperationEvent> m_events;
};

} // namespace idempo
