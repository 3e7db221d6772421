// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <vector>

#include <QWidget>

#include "bulkcommand.h"
#include "operationquery.h"

class QCheckBox;
class QLabel;
class QPushButton;

namespace idempo {

class ActionController;
class BulkActionController;
class LedgerTableView;
class OperationTableModel;

/// The bulk row under a list: "Approve…", "Reject…", "Reconcile…" on the selected rows (a
/// frozen set of what the list shows, with each row's version), or, with "All matching the
/// filter" ticked, on everything the view's filter matches (frozen on the worker). A button is
/// disabled with its reason in the tooltip when the role may not, or nothing is selected.
class BulkActionBar final : public QWidget
{
    Q_OBJECT
public:
    /// `query` answers the view's filter when "All matching the filter" is used.
    BulkActionBar(std::vector<BulkAction> actions, LedgerTableView *table,
                  OperationTableModel *model, std::function<OperationQuery()> query,
                  QWidget *parent = nullptr);

    /// Acts through `bulk`; the buttons follow `actions`' identity.
    void setControllers(BulkActionController *bulk, ActionController *actions);

    QPushButton *button(BulkAction action) const;
    QCheckBox *allMatching() const { return m_all; }
    /// The selected rows as a frozen set, in the list's order.
    std::vector<BulkTarget> selectedTargets() const;

private:
    void updateButtons();
    void trigger(BulkAction action);

    std::vector<std::pair<BulkAction, QPushButton *>> m_buttons;
    LedgerTableView *m_table;
    OperationTableModel *m_model;
    std::function<OperationQuery()> m_query;
    QCheckBox *m_all;
    QLabel *m_count;
    BulkActionController *m_bulk = nullptr;
    ActionController *m_actions = nullptr;
};

} // namespace idempo
