// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <vector>

#include <QHash>
#include <QTableView>

class QTimer;

namespace idempo {

/// The table every list uses: tells its model which rows are on screen (live refreshes re-read
/// those), copies the selected operation key (Ctrl+C) and exports the loaded rows as CSV. Its
/// columns are as wide as what the rows on screen hold (a column empty on all of them only as its
/// title); when that is more than the width there is, they give way in turn (HeaderElidesRole):
/// free text first, then titles wider than their column's text (drawn cut short,
/// ElidedHeaderView), then names, the row's key last; states, amounts, counts and times stay
/// whole. A column the person resized keeps their width, remembered by column title
/// (setSettingsKey()).
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
    /// Sizes the columns for their samples until rows arrive; call it before setSettingsKey(),
    /// which restores what the person chose instead.
    void setColumnSamples(const std::vector<ColumnSample> &samples);
    /// Remembers under `name` (QSettings), by column title, the widths the person gave columns,
    /// the columns shown and the order, and restores them now; a column the saved choice does not
    /// name keeps its default. Call it after setModel().
    void setSettingsKey(const QString &name);
    /// Sizes the columns the person has not resized for the rows on screen now (it also runs by
    /// itself whenever rows arrive or change and when the table is resized).
    void fitColumns();
    /// The width column `column`'s header title needs, with room for the sort arrow.
    int headerWidth(int column) const;
    /// The width `index` needs as its delegate draws it (its text in its font, beside its
    /// decoration); 0 for an empty cell of a plain column.
    int cellWidth(const QModelIndex &index) const;
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

    void setModel(QAbstractItemModel *model) override;

protected:
    void resizeEvent(QResizeEvent *event) override;
    void contextMenuEvent(QContextMenuEvent *event) override;
    /// Tells the person's resizing of a column (a drag or double click on the header) from the
    /// table's own.
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void reportViewport();
    void saveHeader();
    QString columnTitle(int column) const;
    /// The header's menu: every column, ticked when shown.
    void columnMenu(const QPoint &pos);

    std::function<void(int, int)> m_listener;
    int m_keyRole = Qt::DisplayRole;
    QString m_keyLabel;
    QString m_settingsKey;
    QAction *m_copy = nullptr;
    QTimer *m_fitTimer = nullptr;
    /// The widest text seen per column since the model was last reset: a column grows with its
    /// rows but does not jitter as a countdown shortens.
    std::vector<int> m_need;
    /// Widths the person chose, by column title.
    QHash<QString, int> m_userWidths;
    /// Section sizes when a mouse button went down on the header.
    std::vector<int> m_pressSizes;
    std::vector<QMetaObject::Connection> m_modelConnections;
};

} // namespace idempo
