// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QStyledItemDelegate>

namespace idempo {

/// Paints a run's budget use (RunTableModel::BudgetRole) as one bar per limited budget, side by
/// side, each with its figures: green with room left, amber from three quarters, red when used up
/// or when the run halted on it. A run without limits shows the model's text.
class BudgetBarDelegate final : public QStyledItemDelegate
{
    Q_OBJECT
public:
    /// `role`: the model role holding the bars.
    BudgetBarDelegate(int role, QObject *parent = nullptr);

    void paint(QPainter *painter, const QStyleOptionViewItem &option,
               const QModelIndex &index) const override;
    QSize sizeHint(const QStyleOptionViewItem &option, const QModelIndex &index) const override;

private:
    int m_role;
};

} // namespace idempo
