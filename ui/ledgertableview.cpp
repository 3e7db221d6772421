// SPDX-License-Identifier: Apache-2.0
#include "ledgertableview.h"

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
    const QString key =
        QStringLiteral("columns/%1-%2").arg(name).arg(model() ? model()->columnCount() : 0);
    horizontalHeader()->restoreState(QSettings().value(key).toByteArray());
    connect(horizontalHeader(), &QHeaderView::sectionResized, this,
            [this, key] { QSettings().setValue(key, horizontalHeader()->saveState()); });
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
