// SPDX-License-Identifier: Apache-2.0
#include "ledgertableview.h"

#include <algorithm>
#include <memory>

#include <QAbstractItemDelegate>
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
#include <QTimer>

#include "elidedheaderview.h"
#include "pagedtablemodel.h"
#include "textescape.h"

namespace idempo {

namespace {

/// A cell's display text as a CSV field, by the rule of every stored text (textescape.h).
QString csvField(const QString &text)
{
    return QString::fromStdString(idempo::csvField(text.toStdString()));
}

/// A cell's text margins on both sides and the grid line.
int cellPadding(const QWidget *view)
{
    return 2 * (view->style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, view) + 1) + 6;
}

/// A column whose text gives way keeps at least this many average characters.
constexpr int ElidedChars = 8;
/// A title that gives way to what its column holds keeps at least this many average characters.
constexpr int TitleChars = 6;
/// HeaderElidesRole's `true`: a name, cut after the titles.
constexpr int ElidesName = 1;

/// The widths `want` shrunk to fit `available`: the columns that may elide (`elides`) lose width
/// first, the widest first, none below its `floor`; the others keep what they need.
std::vector<int> fitted(std::vector<int> want, const std::vector<int> &floor,
                        const std::vector<bool> &elides, int available)
{
    int total = 0;
    for (int w : want)
        total += w;
    if (total <= available)
        return want;
    int elastic = 0;
    int widest = 0;
    for (std::size_t c = 0; c < want.size(); ++c)
        if (elides[c]) {
            elastic += want[c];
            widest = std::max(widest, want[c]);
        }
    // The largest cap under which the eliding columns fit the room the others leave them.
    const int room = elastic - (total - available);
    const auto capped = [&](int cap) {
        int sum = 0;
        for (std::size_t c = 0; c < want.size(); ++c)
            if (elides[c])
                sum += std::max(floor[c], std::min(want[c], cap));
        return sum;
    };
    int low = 0;
    int high = widest;
    while (low < high) {
        const int mid = (low + high + 1) / 2;
        if (capped(mid) <= room)
            low = mid;
        else
            high = mid - 1;
    }
    for (std::size_t c = 0; c < want.size(); ++c)
        if (elides[c])
            want[c] = std::max(floor[c], std::min(want[c], low));
    return want;
}

} // namespace

LedgerTableView::LedgerTableView(QWidget *parent) : QTableView(parent)
{
    setHorizontalHeader(new ElidedHeaderView(this));
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
    horizontalHeader()->viewport()->installEventFilter(this);
    m_fitTimer = new QTimer(this);
    m_fitTimer->setSingleShot(true);
    m_fitTimer->setInterval(0);
    connect(m_fitTimer, &QTimer::timeout, this, &LedgerTableView::fitColumns);
    connect(verticalScrollBar(), &QScrollBar::valueChanged, m_fitTimer,
            qOverload<>(&QTimer::start));

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

void LedgerTableView::setModel(QAbstractItemModel *model)
{
    for (const QMetaObject::Connection &c : m_modelConnections)
        disconnect(c);
    m_modelConnections.clear();
    m_need.clear();
    QTableView::setModel(model);
    if (!model)
        return;
    const auto fitSoon = [this] { m_fitTimer->start(); };
    m_modelConnections = {
        connect(model, &QAbstractItemModel::modelReset, this,
                [this] {
                    m_need.clear();
                    m_fitTimer->start();
                }),
        connect(model, &QAbstractItemModel::rowsInserted, this, fitSoon),
        connect(model, &QAbstractItemModel::dataChanged, this, fitSoon),
        connect(model, &QAbstractItemModel::layoutChanged, this, fitSoon),
    };
}

QString LedgerTableView::columnTitle(int column) const
{
    return model() ? model()->headerData(column, Qt::Horizontal).toString() : QString();
}

void LedgerTableView::setSettingsKey(const QString &name)
{
    // Kept by column title, so that a choice saved for another set of columns restores what still
    // matches and leaves a new column shown at its default width.
    m_settingsKey = QStringLiteral("columns/%1/by-title").arg(name);
    const QVariantMap saved = QSettings().value(m_settingsKey).toMap();
    const QVariantMap widths = saved.value(QStringLiteral("widths")).toMap();
    const QVariantMap shown = saved.value(QStringLiteral("shown")).toMap();
    const QString sorted = saved.value(QStringLiteral("sort")).toString();
    QHeaderView *header = horizontalHeader();
    for (int c = 0; model() && c < model()->columnCount(); ++c) {
        const QString title = columnTitle(c);
        if (const auto it = shown.find(title); it != shown.end())
            setColumnHidden(c, !it->toBool());
        if (const auto it = widths.find(title); it != widths.end() && it->toInt() > 0) {
            m_userWidths.insert(title, it->toInt());
            header->resizeSection(c, it->toInt());
        }
        if (!sorted.isEmpty() && title == sorted)
            header->setSortIndicator(c, saved.value(QStringLiteral("order")).toInt() ==
                                                Qt::DescendingOrder
                                            ? Qt::DescendingOrder
                                            : Qt::AscendingOrder);
    }
}

void LedgerTableView::setColumnSamples(const std::vector<ColumnSample> &samples)
{
    if (!model())
        return;
    QHeaderView *header = horizontalHeader();
    const int icon = iconSize().width() + 6;
    // Measured in bold: a cell that needs attention is drawn so.
    QFont bold = font();
    bold.setBold(true);
    const QFontMetrics cell(bold);
    const int pad = cellPadding(this);
    for (const ColumnSample &c : samples)
        header->resizeSection(c.column,
                              std::max(headerWidth(c.column), cell.horizontalAdvance(c.sample) +
                                                                  pad + (c.decorated ? icon : 0)));
}

int LedgerTableView::headerWidth(int column) const
{
    const QHeaderView *header = horizontalHeader();
    const int margin = 2 * style()->pixelMetric(QStyle::PM_HeaderMargin, nullptr, header) + 8;
    const bool sorts =
        model() && model()->headerData(column, Qt::Horizontal, HeaderSortOrdersRole).toInt() != 0;
    const int arrow =
        sorts ? style()->pixelMetric(QStyle::PM_HeaderMarkSize, nullptr, header) + 8 : 0;
    return header->fontMetrics().horizontalAdvance(columnTitle(column)) + margin + arrow;
}

int LedgerTableView::cellWidth(const QModelIndex &index) const
{
    QAbstractItemDelegate *delegate = itemDelegateForIndex(index);
    // An empty cell of a plain column needs nothing: a column empty on every row on screen takes
    // only its title's width.
    if (delegate == itemDelegate() && index.data().toString().isEmpty() &&
        !index.data(Qt::DecorationRole).isValid())
        return 0;
    QStyleOptionViewItem option;
    initViewItemOption(&option);
    // The delegate's measure: text in the cell's font, margins, decoration; and the grid line.
    return delegate->sizeHint(option, index).width() + 1;
}

void LedgerTableView::fitColumns()
{
    QAbstractItemModel *m = model();
    if (!m || m->rowCount() == 0)
        return;
    const int columns = m->columnCount();
    m_need.resize(static_cast<std::size_t>(columns), 0);
    const int rowHeight = std::max(1, verticalHeader()->defaultSectionSize());
    const int first = std::max(0, rowAt(0));
    const int last = std::min(m->rowCount(), first + viewport()->height() / rowHeight + 2);
    QHeaderView *header = horizontalHeader();
    std::vector<int> visible;
    for (int v = 0; v < header->count(); ++v)
        if (const int c = header->logicalIndex(v); !isColumnHidden(c))
            visible.push_back(c);
    if (visible.empty())
        return;
    std::vector<int> want;
    std::vector<int> holds;
    std::vector<int> floor;
    std::vector<int> rank;
    const int min = header->minimumSectionSize();
    const int elided = ElidedChars * fontMetrics().averageCharWidth();
    for (int c : visible) {
        int &need = m_need[static_cast<std::size_t>(c)];
        for (int r = first; r < last; ++r)
            need = std::max(need, cellWidth(m->index(r, c)));
        const int title = headerWidth(c);
        const auto user = m_userWidths.constFind(columnTitle(c));
        const bool fixed = user != m_userWidths.cend();
        want.push_back(std::max(min, fixed ? *user : std::max(title, need)));
        // A title wider than what the column holds may shrink to that (drawn cut short), but not
        // below a few characters of it.
        const int shortTitle =
            std::min(title, title - header->fontMetrics().horizontalAdvance(columnTitle(c)) +
                                TitleChars * header->fontMetrics().averageCharWidth());
        holds.push_back(fixed ? want.back()
                              : std::clamp(std::max(need, shortTitle), min, want.back()));
        rank.push_back(fixed ? 0 : m->headerData(c, Qt::Horizontal, HeaderElidesRole).toInt());
        floor.push_back(rank.back() != 0 ? std::clamp(elided, min, want.back()) : want.back());
    }
    // Short of room, the columns give way in turn, each turn only as far as needed: free text
    // (ElidesFirst), then titles wider than what their column holds (read once, and whole in their
    // tooltip), then names (true), the widest first, then the row's key (ElidesLast).
    const int available = viewport()->width();
    const auto ranked = [&rank](int r) {
        std::vector<bool> mask;
        for (int k : rank)
            mask.push_back(k == r);
        return mask;
    };
    std::vector<int> widths = fitted(want, floor, ranked(ElidesFirst), available);
    std::vector<bool> titled;
    for (std::size_t i = 0; i < widths.size(); ++i) {
        holds[i] = std::min(holds[i], widths[i]);
        titled.push_back(holds[i] < widths[i]);
    }
    widths = fitted(widths, holds, titled, available);
    for (std::size_t i = 0; i < floor.size(); ++i)
        floor[i] = std::min(floor[i], widths[i]);
    widths = fitted(widths, floor, ranked(ElidesName), available);
    widths = fitted(widths, floor, ranked(ElidesLast), available);
    // The last column stretches over what the others leave but never below the width it was
    // given: it gets no more than that rest, or the columns would end past the list's edge.
    int others = 0;
    for (std::size_t i = 0; i + 1 < widths.size(); ++i)
        others += widths[i];
    if (header->stretchLastSection())
        widths.back() = std::max(header->minimumSectionSize(),
                                 std::min(widths.back(), viewport()->width() - others));
    for (std::size_t i = 0; i < visible.size(); ++i)
        if (header->sectionSize(visible[i]) != widths[i])
            header->resizeSection(visible[i], widths[i]);
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
            fitColumns();
        });
    }
    menu.exec(horizontalHeader()->mapToGlobal(pos));
}

void LedgerTableView::saveHeader()
{
    if (m_settingsKey.isEmpty() || !model())
        return;
    QVariantMap widths;
    QVariantMap shown;
    for (int c = 0; c < model()->columnCount(); ++c)
        shown.insert(columnTitle(c), !isColumnHidden(c));
    for (auto it = m_userWidths.cbegin(); it != m_userWidths.cend(); ++it)
        widths.insert(it.key(), it.value());
    const QHeaderView *header = horizontalHeader();
    QSettings().setValue(
        m_settingsKey,
        QVariantMap{{QStringLiteral("widths"), widths},
                    {QStringLiteral("shown"), shown},
                    {QStringLiteral("sort"),
                     isSortingEnabled() ? columnTitle(header->sortIndicatorSection()) : QString()},
                    {QStringLiteral("order"), int(header->sortIndicatorOrder())}});
}

bool LedgerTableView::eventFilter(QObject *watched, QEvent *event)
{
    QHeaderView *header = horizontalHeader();
    if (watched != header->viewport() || !model())
        return QTableView::eventFilter(watched, event);
    if (event->type() == QEvent::MouseButtonPress || event->type() == QEvent::MouseButtonDblClick) {
        m_pressSizes.clear();
        for (int c = 0; c < header->count(); ++c)
            m_pressSizes.push_back(header->sectionSize(c));
    } else if (event->type() == QEvent::MouseButtonRelease &&
               static_cast<int>(m_pressSizes.size()) == header->count()) {
        // The last section stretches with whatever the others leave: it is never the person's.
        int lastShown = -1;
        for (int v = header->count() - 1; v >= 0 && lastShown < 0; --v)
            if (!isColumnHidden(header->logicalIndex(v)))
                lastShown = header->logicalIndex(v);
        bool resized = false;
        for (int c = 0; c < header->count(); ++c)
            if (c != lastShown && !isColumnHidden(c) &&
                header->sectionSize(c) != m_pressSizes[static_cast<std::size_t>(c)]) {
                m_userWidths.insert(columnTitle(c), header->sectionSize(c));
                resized = true;
            }
        m_pressSizes.clear();
        if (resized)
            saveHeader();
    }
    return QTableView::eventFilter(watched, event);
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
    m_fitTimer->start();
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
