// SPDX-License-Identifier: Apache-2.0
// MainWindow's linked evidence: audit row → operation, operation → its audit records, timeline
// bar → operation, and the evidence pack of an operation. Every view asks through these slots,
// so each link is wired once.
#include <QFileDialog>
#include <QMenuBar>
#include <QSaveFile>
#include <QStatusBar>
#include <QTabWidget>

#include "audittablemodel.h"
#include "auditview.h"
#include "evidencepack.h"
#include "filterbar.h"
#include "ledgerconnection.h"
#include "ledgertableview.h"
#include "mainwindow.h"
#include "operationdetailpane.h"
#include "operationsview.h"
#include "operationtablemodel.h"

namespace idempo {

void MainWindow::buildOperationMenu()
{
    QMenu *menu = menuBar()->addMenu(tr("&Operation"));
    const auto withCurrent = [this](void (MainWindow::*go)(const QString &, const QString &)) {
        return [this, go] {
            const auto [ns, key] = currentOperation();
            if (key.isEmpty())
                statusBar()->showMessage(tr("Select an operation first"), 10'000);
            else
                (this->*go)(ns, key);
        };
    };
    menu->addAction(tr("Show in &Find"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F), this,
                    withCurrent(&MainWindow::showOperation));
    menu->addAction(tr("&Audit records of this operation"),
                    QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_A), this,
                    withCurrent(&MainWindow::showAuditOf));
    menu->addAction(tr("Export &evidence pack…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E),
                    this, [this] {
                        const auto [ns, key] = currentOperation();
                        if (key.isEmpty())
                            statusBar()->showMessage(tr("Select an operation first"), 10'000);
                        else
                            exportEvidence(ns, key);
                    });
}

std::pair<QString, QString> MainWindow::currentOperation() const
{
    if (m_tabs->currentWidget() == m_audit) {
        const QModelIndex current = m_audit->table()->currentIndex();
        return current.isValid()
                   ? AuditView::operationOf(current.data(AuditTableModel::TargetRole).toString())
                   : std::pair<QString, QString>{};
    }
    for (OperationDetailPane *pane : m_panes)
        if (pane->isVisibleTo(m_tabs) && m_tabs->currentWidget()->isAncestorOf(pane) &&
            pane->operation())
            return {QString::fromStdString(pane->operation()->ns),
                    QString::fromStdString(pane->operation()->key)};
    return {};
}

void MainWindow::showOperation(const QString &ns, const QString &key)
{
    m_pendingSelect = {ns, key};
    m_tabs->setCurrentWidget(m_find);
    FilterBar *filters = m_find->filters();
    filters->clear();
    filters->setNamespace(ns);
    filters->setKeyPrefix(key);
    // The filter bar's debounce would answer later: ask now.
    m_find->reload();
}

void MainWindow::selectPendingOperation()
{
    const auto [ns, key] = m_pendingSelect;
    OperationTableModel *model = m_find->model();
    if (key.isEmpty() || model->query().ns != ns.toStdString() ||
        model->query().keyPrefix != key.toStdString())
        return;
    for (int row = 0; row < model->rowCount(); ++row) {
        const QModelIndex index = model->index(row, 0);
        const Operation &op = model->operationAt(index);
        if (op.ns == model->query().ns && op.key == model->query().keyPrefix) {
            m_pendingSelect = {};
            m_find->table()->setCurrentIndex(index);
            m_find->table()->scrollTo(index);
            return;
        }
    }
    if (!model->canFetchMore({})) {
        m_pendingSelect = {};
        statusBar()->showMessage(
            tr("Operation %1 in namespace %2 is not in the ledger (purged?)").arg(key, ns), 15'000);
    } else {
        model->fetchMore({});
    }
}

void MainWindow::showAuditOf(const QString &ns, const QString &key)
{
    m_tabs->setCurrentWidget(m_audit);
    m_audit->showOperation(ns, key);
}

void MainWindow::exportEvidence(const QString &ns, const QString &key, const QString &path)
{
    QString file = path;
    if (file.isEmpty())
        file = QFileDialog::getSaveFileName(
            this, tr("Export evidence pack of %1").arg(key),
            QStringLiteral("evidence-%1.json")
                .arg(QString(key).replace(QLatin1Char('/'), QLatin1Char('_'))),
            tr("Evidence pack (*.json)"));
    if (file.isEmpty())
        return;
    struct Written
    {
        bool ok = false;
        QString message;
    };
    m_connection->query(
        this,
        [ns = ns.toStdString(), key = key.toStdString(), file](LedgerStore &s, MessageQueue *) {
            Written w;
            try {
                const nlohmann::json pack = EvidencePack::build(s, ns, key);
                const EvidencePack::Figures figures = EvidencePack::figures(pack);
                const std::string text = pack.dump(2, ' ', true) + "\n";
                QSaveFile out(file);
                w.ok = out.open(QIODevice::WriteOnly) &&
                       out.write(text.data(), static_cast<qint64>(text.size())) ==
                           static_cast<qint64>(text.size()) &&
                       out.commit();
                w.message =
                    w.ok ? QObject::tr("Evidence pack written to %1: %2 audit record(s), "
                                       "chain head record %3")
                               .arg(file)
                               .arg(figures.auditRecords)
                               .arg(figures.headSeq)
                         : QObject::tr("Could not write %1: %2").arg(file, out.errorString());
            } catch (const std::exception &e) {
                w.message = QObject::tr("Evidence pack not written: %1")
                                .arg(QString::fromStdString(e.what()));
            }
            return w;
        },
        [this](const Written &w) {
            statusBar()->showMessage(w.message, 30'000);
            Q_EMIT evidenceExported(w.ok, w.message);
        });
}

} // namespace idempo
