// SPDX-License-Identifier: Apache-2.0
#include "auditview.h"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTimer>
#include <QVBoxLayout>

#include "audittablemodel.h"
#include "auditverify.h"
#include "emptystate.h"
#include "ledgerconnection.h"
#include "ledgertableview.h"

namespace idempo {

namespace {

/// The action kinds the guarded actions write (approvecommand, reconcilecommand, …).
constexpr const char *kActions[] = {"approve", "reject",     "reconcile", "dlq_replay",
                                    "setting", "run_resume", "run_budget"};

constexpr std::int64_t kHourMs = 3'600'000;

} // namespace

AuditView::AuditView(LedgerConnection *connection, QWidget *parent)
    : LedgerView(parent), m_connection(connection), m_model(new AuditTableModel(connection, this)),
      m_action(new QComboBox(this)), m_actor(new QLineEdit(this)), m_ns(new QLineEdit(this)),
      m_target(new QLineEdit(this)), m_whole(new QCheckBox(tr("&whole"), this)),
      m_time(new QComboBox(this)), m_verify(new QPushButton(tr("&Verify chain"), this)),
      m_verdict(new QLabel(this)), m_table(new LedgerTableView(this)), m_debounce(new QTimer(this))
{
    auto *layout = new QVBoxLayout(this);
    // The filters take two rows, so that the window fits a 1024-pixel screen.
    auto *top = new QHBoxLayout;
    auto *under = new QHBoxLayout;
    const auto labelled = [this](QHBoxLayout *row, const QString &text, QWidget *field) {
        auto *label = new QLabel(text, this);
        label->setBuddy(field);
        row->addWidget(label);
        row->addWidget(field, field == m_action || field == m_time ? 0 : 1);
    };
    m_action->addItem(tr("All actions"));
    for (const char *kind : kActions)
        m_action->addItem(QString::fromLatin1(kind));
    m_actor->setPlaceholderText(tr("identity"));
    m_ns->setPlaceholderText(tr("every namespace"));
    m_target->setPlaceholderText(tr("ns/key or queue: prefix"));
    for (QLineEdit *e : {m_actor, m_ns, m_target})
        e->setClearButtonEnabled(true);
    m_whole->setToolTip(tr("Only this exact target, not every target starting with it"));
    m_time->addItem(tr("any time"), QVariant());
    m_time->addItem(tr("last hour"), QVariant::fromValue<qlonglong>(kHourMs));
    m_time->addItem(tr("last 24 hours"), QVariant::fromValue<qlonglong>(24 * kHourMs));
    m_time->addItem(tr("last 7 days"), QVariant::fromValue<qlonglong>(7 * 24 * kHourMs));
    m_time->addItem(tr("last 30 days"), QVariant::fromValue<qlonglong>(30 * 24 * kHourMs));
    labelled(top, tr("&Action"), m_action);
    labelled(top, tr("Ac&tor"), m_actor);
    labelled(top, tr("&Namespace"), m_ns);
    labelled(under, tr("Tar&get"), m_target);
    under->addWidget(m_whole);
    labelled(under, tr("&Within"), m_time);
    layout->addLayout(top);
    layout->addLayout(under);
    auto *second = new QHBoxLayout;
    m_verdict->setTextFormat(Qt::RichText);
    m_verdict->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto *csv = new QPushButton(tr("Export &CSV…"), this);
    auto *json = new QPushButton(tr("Export &JSON…"), this);
    m_verify->setToolTip(tr("Re-reads the whole log and checks every record's hash and link"));
    second->addWidget(m_verdict, 1);
    second->addWidget(csv);
    second->addWidget(json);
    second->addWidget(m_verify);
    layout->addLayout(second);
    layout->addWidget(m_table, 1);
    m_table->setModel(m_model);
    m_table->setKeyRole(AuditTableModel::TargetRole, tr("Copy target"));
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->horizontalHeader()->resizeSection(AuditTableModel::Seq, 60);
    m_table->horizontalHeader()->resizeSection(AuditTableModel::When, 150);
    m_table->horizontalHeader()->resizeSection(AuditTableModel::Target, 220);
    m_table->horizontalHeader()->resizeSection(AuditTableModel::Reason, 200);
    m_table->horizontalHeader()->resizeSection(AuditTableModel::Change, 210);
    m_table->setSettingsKey(QStringLiteral("audit"));
    m_table->setViewportListener(
        [this](int first, int count) { m_model->setViewport(first, count); });
    auto *open = new QAction(tr("&Open operation"), m_table);
    open->setShortcut(Qt::Key_Return);
    open->setShortcutContext(Qt::WidgetShortcut);
    m_table->addAction(open);
    connect(open, &QAction::triggered, this, &AuditView::openCurrent);
    connect(m_table, &QAbstractItemView::doubleClicked, this, &AuditView::openCurrent);
    m_empty = new EmptyState(m_table);
    connect(m_empty, &EmptyState::linkActivated, this, [this](const QString &link) {
        if (link != QLatin1String(EmptyState::ClearFiltersLink))
            return;
        showOperation({}, {});
    });
    m_debounce->setSingleShot(true);
    m_debounce->setInterval(250);
    connect(m_debounce, &QTimer::timeout, this, &AuditView::applyFilter);
    for (QLineEdit *e : {m_actor, m_ns, m_target})
        connect(e, &QLineEdit::textChanged, m_debounce, qOverload<>(&QTimer::start));
    connect(m_action, &QComboBox::currentIndexChanged, this, &AuditView::applyFilter);
    connect(m_time, &QComboBox::currentIndexChanged, this, &AuditView::applyFilter);
    connect(m_whole, &QCheckBox::toggled, this, &AuditView::applyFilter);
    connect(m_model, &AuditTableModel::pageLoaded, m_empty, &EmptyState::modelAnswered);
    connect(m_model, &AuditTableModel::pageLoaded, this, &AuditView::loaded);
    connect(m_verify, &QPushButton::clicked, this, &AuditView::verify);
    connect(csv, &QPushButton::clicked, this, [this] { exportAs(QStringLiteral("csv")); });
    connect(json, &QPushButton::clicked, this, [this] { exportAs(QStringLiteral("json")); });
}

AuditFilter AuditView::filter(std::int64_t nowMs) const
{
    AuditFilter f;
    if (m_action->currentIndex() > 0)
        f.action = m_action->currentText().toStdString();
    f.who = m_actor->text().trimmed().toStdString();
    f.ns = m_ns->text().trimmed().toStdString();
    const std::string target = m_target->text().trimmed().toStdString();
    (m_whole->isChecked() ? f.target : f.targetPrefix) = target;
    if (const QVariant within = m_time->currentData(); within.isValid())
        f.fromMs = nowMs - within.toLongLong();
    return f;
}

void AuditView::reload()
{
    m_verdict->clear();
    applyFilter();
}

void AuditView::refresh()
{
    m_model->refresh();
}

void AuditView::applyFilter()
{
    m_debounce->stop();
    const AuditFilter f = filter(m_model->storeNowMs());
    const bool filtered = !f.action.empty() || !f.who.empty() || !f.ns.empty() ||
                          !f.target.empty() || !f.targetPrefix.empty() || f.fromMs;
    m_empty->setMessage(
        filtered ? EmptyState::filteredMessage()
                 : tr("<b>No guarded action recorded yet.</b><br>Every approval, rejection, "
                      "reconciliation and DLQ replay is logged here, hash-chained."));
    m_model->setFilter(f);
}

void AuditView::showOperation(const QString &ns, const QString &key)
{
    {
        const QSignalBlocker blockAction(m_action);
        const QSignalBlocker blockTime(m_time);
        const QSignalBlocker blockWhole(m_whole);
        const QSignalBlocker blockActor(m_actor);
        const QSignalBlocker blockNs(m_ns);
        const QSignalBlocker blockTarget(m_target);
        m_action->setCurrentIndex(0);
        m_time->setCurrentIndex(0);
        m_actor->clear();
        m_ns->clear();
        m_target->setText(key.isEmpty() ? QString() : ns + QLatin1Char('/') + key);
        m_whole->setChecked(!key.isEmpty());
    }
    applyFilter();
}

std::pair<QString, QString> AuditView::operationOf(const QString &target)
{
    // Namespaces hold only letters, digits, '.', '_' and '-': "queue:x", "run:ns/r" are no
    // operation's.
    const qsizetype slash = target.indexOf(QLatin1Char('/'));
    if (slash <= 0 || slash + 1 >= target.size() || target.left(slash).contains(QLatin1Char(':')))
        return {};
    return {target.left(slash), target.mid(slash + 1)};
}

void AuditView::openCurrent()
{
    const QModelIndex current = m_table->currentIndex();
    if (!current.isValid())
        return;
    const auto [ns, key] =
        operationOf(current.siblingAtColumn(0).data(AuditTableModel::TargetRole).toString());
    if (!key.isEmpty())
        Q_EMIT operationRequested(ns, key);
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

void AuditView::exportTo(const QString &path)
{
    struct Written
    {
        bool ok = false;
        int records = 0;
    };
    const AuditFilter shown = filter(m_model->storeNowMs());
    m_connection->query(
        this,
        [filter = shown, path](LedgerStore &s, MessageQueue *) {
            // Oldest first, a page at a time; the file holds what the filters let through.
            AuditFilter f = filter;
            std::vector<AuditRecord> all;
            f.limit = 1000;
            for (;;) {
                std::vector<AuditRecord> page = s.auditRecords(f);
                const bool last = page.size() < std::size_t{1000};
                if (!page.empty())
                    f.afterSeq = page.back().seq;
                all.insert(all.end(), std::make_move_iterator(page.begin()),
                           std::make_move_iterator(page.end()));
                if (last)
                    break;
            }
            QFile file(path);
            Written w;
            w.records = static_cast<int>(all.size());
            const QString text = path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive)
                                     ? AuditTableModel::json(all)
                                     : AuditTableModel::csv(all);
            w.ok = file.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text) &&
                   file.write(text.toUtf8()) >= 0 && file.flush();
            return w;
        },
        [this, path](Written w) {
            if (!w.ok)
                m_verdict->setText(tr("<b style='color:#d64545'>Could not write %1</b>")
                                       .arg(path.toHtmlEscaped()));
            Q_EMIT exported(w.ok, w.records);
        });
}

void AuditView::exportAs(const QString &format)
{
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export audit records"), QStringLiteral("audit.%1").arg(format),
        format == QLatin1String("json") ? tr("JSON (*.json)") : tr("CSV (*.csv)"));
    if (!path.isEmpty())
        exportTo(path);
}

} // namespace idempo
