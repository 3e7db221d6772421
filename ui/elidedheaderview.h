// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QHeaderView>

namespace idempo {

/// A list's column titles, each cut short with an ellipsis when its column is narrower than the
/// title (LedgerTableView lets a title give way to what its column holds), instead of clipped at
/// both ends; the tooltip of a shortened title starts with the whole of it.
class ElidedHeaderView final : public QHeaderView
{
    Q_OBJECT
public:
    explicit ElidedHeaderView(QWidget *parent = nullptr);

    /// The room section `logicalIndex` leaves its title: its width less the margins and, on the
    /// sorted column, the sort arrow.
    int titleRoom(int logicalIndex) const;
    /// True when section `logicalIndex`'s title is drawn cut short.
    bool isTitleElided(int logicalIndex) const;

protected:
    void initStyleOptionForIndex(QStyleOptionHeader *option, int logicalIndex) const override;
    bool viewportEvent(QEvent *event) override;
};

} // namespace idempo
