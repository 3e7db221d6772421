// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QWidget>

namespace idempo {

class EmptyState;
class FilterBar;
class LedgerTableView;

/// What the main window needs from each view: reload after a ledger opens, refresh on a live
/// change, and the table and filters its shortcuts act on (either may be null).
class LedgerView : public QWidget
{
    Q_OBJECT
public:
    using QWidget::QWidget;

    /// Forget what is shown and load from the (newly) open ledger.
    virtual void reload() = 0;
    /// Re-read what is on screen after a change in the ledger.
    virtual void refresh() = 0;
    virtual LedgerTableView *table() const { return nullptr; }
    virtual FilterBar *filters() const { return nullptr; }
    /// What the list says when it has no rows (null for a view without a list).
    virtual EmptyState *emptyState() const { return nullptr; }
    /// No ledger is open (a switch under way or failed): `why` in rich text, empty once one is.
    /// The view has already dropped its rows (reload()); by default its list shows `why`.
    virtual void setUnavailable(const QString &why);
};

} // namespace idempo
