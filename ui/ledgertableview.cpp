// SPDX-License-Identifier: Apache-2.0
#include "ledgertableview.h"

#include <algorithm>
#include <memory>

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QContextMenuEvent>
#include <QFile>
#include <QFileDialog>
#include <QHeaderView>
#include <QMenu>
#include <QMessageBox>
#include <QScrollBar>
#include <QSettings>
#include <QStyle>

#include "pagedtablemodel.h"
#include "textescape.h"

namespace idempo {

namespace {

/// A cell's display text as a CSV field, by the rule of every stored text (textescape.h).
QString csvField(const QString &text)
{
    return QString::fromStdString(idempo::csvField(text.toStdString()));
}

} // namespace

LedgerTableView::LedgerTableView(QWidget *parent) : QTableView(parent)
{
    setSelectionBehavior(SelectRows);
    setSelectionMode(SingleSelection);
    setAlternatingRowColors(true);
    setWordWrap(false);
    verticalHeader()->setVisible(false);
    verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
    horizontalHeader()->setStretchLastSection(true);
    horizontalHeader()->setHighlightSections(false);
    setTabKeyNavigation(false);
    horizontalHeader()->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(horizontalHeader(), &QHeaderView::customContextMenuRequested, this,
            &LedgerTableView::columnMenu);
    connect(verticalScrollBar(), &QScrollBar::valueChanged, this, &LedgerTableView::reportViewport);

    m_keyLabel = tr("Copy operation key");
    m_copy = new QAction(m_keyLabel, this);
    m_copy->setShortcut(QKeySequence::Copy);
    m_copy->setShortcutContext(Qt::WidgetShortcut);
    connect(m_copy, &QAction::triggered, this, &LedgerTableView::copyKey);
    addAction(m_copy);
}

void LedgerTableView::setKeyRole(int role, const QString &label)
{
    m_keyRole = role;
    if (!label.isEmpty()) {
        m_keyLabel = label;
        m_copy->setText(label);
    }
}

void LedgerTableView::setSettingsKey(const QString &name)
{
    // restoreState() takes a state saved with fewer columns and shifts every width it holds onto
    // the wrong column: a state is only ever read back for the same number of columns.
    m_settingsKey =
        QStringLiteral("columns/%1-%2").arg(name).arg(model() ? model()->columnCount() : 0);
    horizontalHeader()->restoreState(QSettings().value(m_settingsKey).toByteArray());
    connect(horizontalHeader(), &QHeaderView::sectionResized, this, &LedgerTableView::saveHeader);
}

void LedgerTableView::setColumnSamples(const std::vector<ColumnSample> &samples)
{
    if (!model())
        return;
    QHeaderView *header = horizontalHeader();
    // Cell padding; room for the sort arrow in the header and for a decoration in the cell.
    const int pad = 2 * style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, this) + 12;
    const int arrow = style()->pixelMetric(QStyle::PM_HeaderMarkSize, nullptr, header) + 16;
    const int icon = style()->pixelMetric(QStyle::PM_SmallIconSize, nullptr, this) + 6;
    // Measured in bold: a cell that needs attention is drawn so.
    QFont bold = font();
    bold.setBold(true);
    const QFontMetrics cell(bold);
    for (const ColumnSample &c : samples) {
        const QString title = model()->headerData(c.column, Qt::Horizontal).toString();
        header->resizeSection(
            c.column, std::max(header->fontMetrics().horizontalAdvance(title) + arrow,
                               cell.horizontalAdvance(c.sample) + pad + (c.decorated ? icon : 0)));
    }
}

void LedgerTableView::columnMenu(const QPoint &pos)
{
    if (!model())
        return;
    QMenu menu(this);
    for (int c = 0; c < model()->columnCount(); ++c) {
        QAction *show = menu.addAction(model()->headerData(c, Qt::Horizontal).toString());
        show->setCheckable(true);
        show->setChecked(!isColumnHidden(c));
        connect(show, &QAction::toggled, this, [this, c](bool on) {
            setColumnHidden(c, !on);
            saveHeader();
        });
    }
    menu.exec(horizontalHeader()->mapToGlobal(pos));
}

void LedgerTableView::saveHeader()
{
    if (!m_settingsKey.isEmpty())
        QSettings().setValue(m_settingsKey, horizontalHeader()->saveState());
}

bool LedgerTableView::canSort(int column, Qt::SortOrder order) const
{
    if (!model())
        return false;
    const int orders = model()->headerData(column, Qt::Horizontal, HeaderSortOrdersRole).toInt();
    return (orders & (order == Qt::AscendingOrder ? SortsAscending : SortsDescending)) != 0;
}

void LedgerTableView::setStoreSorting(int column, Qt::SortOrder order)
{
    QHeaderView *header = horizontalHeader();
    if (!canSort(header->sortIndicatorSection(), header->sortIndicatorOrder()))
        header->setSortIndicator(column, order);
    // Connected before sorting is enabled: a click on a column the store cannot order by puts the
    // indicator back on the current order before the table asks the model (which ignores it).
    connect(header, &QHeaderView::sortIndicatorChanged, this,
            [this, header,
             current = std::make_shared<std::pair<int, Qt::SortOrder>>(
                 header->sortIndicatorSection(), header->sortIndicatorOrder())](int section,
                                                                                Qt::SortOrder by) {
                if (canSort(section, by)) {
                    *current = {section, by};
                } else {
                    const QSignalBlocker block(header);
                    header->setSortIndicator(current->first, current->second);
                }
                saveHeader();
            });
    setSortingEnabled(true);
}

void LedgerTableView::setViewportListener(std::function<void(int, int)> listener)
{
    m_listener = std::move(listener);
    reportViewport();
}

void LedgerTableView::resizeEvent(QResizeEvent *event)
{
    QTableView::resizeEvent(event);
    reportViewport();
}

void LedgerTableView::reportViewport()
{
    if (!m_listener)
        return;
    const int first = std::max(0, rowAt(0));
    const int rowHeight = std::max(1, verticalHeader()->defaultSectionSize());
    m_listener(first, viewport()->height() / rowHeight + 1);
}

QString LedgerTableView::copyKey()
{
    const QModelIndex current = currentIndex();
    if (!current.isValid())
        return QString();
    const QString key = current.siblingAtColumn(0).data(m_keyRole).toString();
    QApplication::clipboard()->setText(key);
    return key;
}

QString LedgerTableView::csv() const
{
    const QAbstractItemModel *m = model();
    if (!m)
        return QString();
    QStringList lines;
    QStringList header;
    for (int c = 0; c < m->columnCount(); ++c)
        if (!isColumnHidden(c))
            header << csvField(m->headerData(c, Qt::Horizontal).toString());
    lines << header.join(QLatin1Char(','));
    for (int r = 0; r < m->rowCount(); ++r) {
        QStringList row;
        for (int c = 0; c < m->columnCount(); ++c)
            if (!isColumnHidden(c))
                row << csvField(m->index(r, c).data().toString());
        lines << row.join(QLatin1Char(','));
    }
    return lines.join(QLatin1String("\r\n")) + QLatin1String("\r\n");
}

void LedgerTableView::exportCsv()
{
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export rows as CSV"), QString(), tr("CSV (*.csv)"));
    if (path.isEmpty())
        return;
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) || file.write(csv().toUtf8()) < 0)
        QMessageBox::warning(this, tr("Export failed"),
                             tr("Could not write %1: %2").arg(path, file.errorString()));
}

void LedgerTableView::contextMenuEvent(QContextMenuEvent *event)
{
    QMenu menu(this);
    menu.addAction(m_keyLabel, this, &LedgerTableView::copyKey);
    menu.addAction(tr("Export loaded rows as CSV…"), this, &LedgerTableView::exportCsv);
    menu.exec(event->globalPos());
}

} // namespace idempo
