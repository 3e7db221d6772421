// SPDX-License-Identifier: Apache-2.0
#include "auditview.h"

#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

#include "audittablemodel.h"
#include "auditverify.h"
#include "emptystate.h"
#include "ledgerconnection.h"

namespace idempo {

namespace {
constexpr int PageSize = 1000;
constexpr int MaxRecords =
    200'000; ///< a console view, not an archive: export from the CLI beyond this
} // namespace

AuditView::AuditView(LedgerConnection *connection, QWidget *parent)
    : LedgerView(parent), m_connection(connection), m_model(new AuditTableModel(this)),
      m_action(new QComboBox(this)), m_actor(new QLineEdit(this)), m_target(new QLineEdit(this)),
      m_verify(new QPushButton(tr("&Verify chain"), this)), m_verdict(new QLabel(this)),
      m_table(new QTableView(this))
{
    auto *layout = new QVBoxLayout(this);
    auto *top = new QHBoxLayout;
    auto *actionLabel = new QLabel(tr("&Action"), this);
    actionLabel->setBuddy(m_action);
    auto *actorLabel = new QLabel(tr("Ac&tor"), this);
    actorLabel->setBuddy(m_actor);
    auto *targetLabel = new QLabel(tr("Tar&get"), this);
    targetLabel->setBuddy(m_target);
    m_action->addItem(tr("All actions"));
    m_actor->setPlaceholderText(tr("name contains"));
    m_actor->setClearButtonEnabled(true);
    m_target->setPlaceholderText(tr("ns/key or queue: prefix"));
    m_target->setClearButtonEnabled(true);
    auto *csv = new QPushButton(tr("Export &CSV…"), this);
    auto *json = new QPushButton(tr("Export &JSON…"), this);
    m_verify->setToolTip(tr("Re-reads the whole log and checks every record's hash and link"));
    for (QWidget *w : std::initializer_list<QWidget *>{actionLabel, m_action, actorLabel, m_actor,
                                                       targetLabel, m_target})
        top->addWidget(w);
    top->addStretch(1);
    top->addWidget(csv);
    top->addWidget(json);
    top->addWidget(m_verify);
    layout->addLayout(top);
    m_verdict->setTextFormat(Qt::RichText);
    m_verdict->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_verdict);
    layout->addWidget(m_table, 1);
    m_table->setModel(m_model);
    m_table->verticalHeader()->setVisible(false);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setAlternatingRowColors(true);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->horizontalHeader()->resizeSection(AuditTableModel::Seq, 50);
    m_table->horizontalHeader()->resizeSection(AuditTableModel::When, 150);
    m_table->horizontalHeader()->resizeSection(AuditTableModel::Target, 220);
    m_table->horizontalHeader()->resizeSection(AuditTableModel::Reason, 220);
    m_table->horizontalHeader()->resizeSection(AuditTableModel::Change, 210);
    m_empty = new EmptyState(m_table);
    connect(m_empty, &EmptyState::linkActivated, this, [this](const QString &link) {
        if (link != QLatin1String(EmptyState::ClearFiltersLink))
            return;
        m_action->setCurrentIndex(0);
        m_actor->clear();
        m_target->clear();
    });
    connect(m_action, &QComboBox::currentIndexChanged, this, &AuditView::applyFilter);
    connect(m_actor, &QLineEdit::textChanged, this, &AuditView::applyFilter);
    connect(m_target, &QLineEdit::textChanged, this, &AuditView::applyFilter);
    connect(m_verify, &QPushButton::clicked, this, &AuditView::verify);
    connect(csv, &QPushButton::clicked, this, [this] { exportAs(QStringLiteral("csv")); });
    connect(json, &QPushButton::clicked, this, [this] { exportAs(QStringLiteral("json")); });
}

void AuditView::reload()
{
    m_verdict->clear();
    ++m_generation;
    m_model->setRecords({});
    refresh();
}

void AuditView::refresh()
{
    const quint64 generation = ++m_generation;
    m_connection->query(
        this,
        [](LedgerStore &s, MessageQueue *) {
            std::vector<AuditRecord> all;
            for (;;) {
                auto page = s.auditLog(all.empty() ? 0 : all.back().seq, PageSize);
                const bool last = page.size() < std::size_t{PageSize};
                all.insert(all.end(), std::make_move_iterator(page.begin()),
                           std::make_move_iterator(page.end()));
                if (last || all.size() >= std::size_t{MaxRecords})
                    break;
            }
            return all;
        },
        [this, generation](std::vector<AuditRecord> records) {
            if (generation != m_generation)
                return;
            m_model->setRecords(std::move(records));
            const QString current =
                m_action->currentIndex() > 0 ? m_action->currentText() : QString();
            const QSignalBlocker block(m_action);
            m_action->clear();
            m_action->addItem(tr("All actions"));
            m_action->addItems(m_model->actions());
            m_action->setCurrentIndex(std::max(0, m_action->findText(current)));
            applyFilter();
            Q_EMIT loaded();
        });
}

void AuditView::applyFilter()
{
    m_model->setFilter(m_action->currentIndex() > 0 ? m_action->currentText() : QString(),
                       m_actor->text().trimmed(), m_target->text().trimmed());
    const bool filtered = m_action->currentIndex() > 0 || !m_actor->text().trimmed().isEmpty() ||
                          !m_target->text().trimmed().isEmpty();
    m_empty->setMessage(
        filtered ? EmptyState::filteredMessage()
                 : tr("<b>No guarded action recorded yet.</b><br>Every approval, rejection, "
                      "reconciliation and DLQ replay is logged here, hash-chained."));
    m_empty->modelAnswered();
}

void AuditView::verify()
{
    m_verify->setEnabled(false);
    m_verdict->setText(tr("Verifying…"));
    m_connection->query(
        this, [](LedgerStore &s, MessageQueue *) { return AuditVerify(s).run(); },
        [this](const AuditVerify::Result &r) {
            m_verify->setEnabled(true);
            if (r.ok)
                m_verdict->setText(
                    tr("<b style='color:#3fa35b'>✓ Chain intact: %1 records, head %2</b>")
                        .arg(r.records)
                        .arg(QString::fromStdString(r.lastHash.substr(0, 16))));
            else
                m_verdict->setText(
                    tr("<b style='color:#d64545'>✗ Chain broken at record #%1: %2</b>")
                        .arg(r.firstBad.value_or(0))
                        .arg(QString::fromStdString(r.problem).toHtmlEscaped()));
            Q_EMIT verified(r.ok);
        });
}

QString AuditView::verdict() const
{
    return m_verdict->text();
}

bool AuditView::exportTo(const QString &path) const
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text))
        return false;
    const QString text = path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive)
                             ? m_model->json()
                             : m_model->csv();
    return file.write(text.toUtf8()) >= 0;
}

void AuditView::exportAs(const QString &format)
{
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export audit records"), QStringLiteral("audit.%1").arg(format),
        format == QLatin1String("json") ? tr("JSON (*.json)") : tr("CSV (*.csv)"));
    if (!path.isEmpty() && !exportTo(path))
        m_verdict->setText(
            tr("<b style='color:#d64545'>Could not write %1</b>").arg(path.toHtmlEscaped()));
}

} // namespace idempo
