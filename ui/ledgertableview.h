// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <vector>

#include <QTableView>

namespace idempo {

/// The table every list uses: tells its model which rows are on screen (live refreshes re-read
/// those), copies the selected operation key (Ctrl+C) and exports the loaded rows as CSV.
class LedgerTableView final : public QTableView
{
    Q_OBJECT
public:
    explicit LedgerTableView(QWidget *parent = nullptr);

    /// `keyRole` is the model's role for the text Copy key puts on the clipboard; `label` names
    /// what that is ("Copy operation key", "Copy run id").
    void setKeyRole(int role, const QString &label = {});
    QString keyLabel() const { return m_keyLabel; }
    /// A column's default width: its header, or `sample` (a long typical value, as
    /// "confirmation_required" or "125,000.00 EUR") in full, beside its decoration if it has one.
    struct ColumnSample
    {
        int column;
        QString sample;
        bool decorated = false;
    };
    /// Sizes the columns for their samples; call it before setSettingsKey(), which restores what
    /// the person chose instead.
    void setColumnSamples(const std::vector<ColumnSample> &samples);
    /// Remembers the column widths under `name` and the model's column count (QSettings) and
    /// restores them now; call it after setModel().
    void setSettingsKey(const QString &name);
    /// Header clicks order the list in the store (the model's sort()), for the columns and
    /// directions the model's headerData(HeaderSortOrdersRole) names; a click on any other keeps
    /// the order. The order is remembered with the widths (setSettingsKey() first); without a
    /// remembered one it is (`column`, `order`).
    void setStoreSorting(int column, Qt::SortOrder order);
    /// True when the model can order `column` in `order` (HeaderSortOrdersRole).
    bool canSort(int column, Qt::SortOrder order) const;
    /// Called with (first visible row, visible row count) whenever the view scrolls or resizes.
    void setViewportListener(std::function<void(int, int)> listener);

    /// Copies the current row's key to the clipboard; returns it.
    QString copyKey();
    /// The loaded rows and visible columns as RFC 4180 CSV.
    QString csv() const;
    /// Asks for a file name and writes csv() there.
    void exportCsv();

protected:
    void resizeEvent(QResizeEvent *event) override;
    void contextMenuEvent(QContextMenuEvent *event) override;

private:
    void reportViewport();
    void saveHeader();
    /// The header's menu: every column, ticked when shown.
    void columnMenu(const QPoint &pos);

    std::function<void(int, int)> m_listener;
    int m_keyRole = Qt::DisplayRole;
    QString m_keyLabel;
    QString m_settingsKey;
    QAction *m_copy = nullptr;
};

} // namespace idempo
