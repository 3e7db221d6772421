// SPDX-License-Identifier: Apache-2.0
#include "sandboxpanel.h"

#include <QColor>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "ledgerconnection.h"
#include "operationquery.h"
#include "sandboxreport.h"
#include "sandboxsession.h"

namespace idempo {

namespace {

/// A report's counts by name as "name 3, other 1", leaving out zeros; "none" when all are zero.
QString counts(const std::map<std::string, std::int64_t> &byName)
{
    QStringList parts;
    for (const auto &[name, value] : byName)
        if (value != 0)
            parts << QString::fromStdString(name).replace(QLatin1Char('_'), QLatin1Char(' ')) +
                         QLatin1Char(' ') + QString::number(value);
    return parts.isEmpty() ? QObject::tr("none") : parts.join(QStringLiteral(", "));
}

/// "1 run", "12 runs": English plurals without a translation catalogue.
QString runsText(int n)
{
    return n == 1 ? QObject::tr("1 run") : QObject::tr("%1 runs").arg(n);
}

} // namespace

SandboxPanel::SandboxPanel(LedgerConnection *connection, QWidget *parent)
    : LedgerView(parent), m_connection(connection), m_session(new SandboxSession(this)),
      m_banner(new QLabel(this)), m_scenario(new QComboBox(this)), m_runs(new QSpinBox(this)),
      m_faults(new QListWidget(this)), m_seed(new QSpinBox(this)),
      m_namespace(new QLineEdit(SandboxSession::freshNamespace(), this)),
      m_run(new QPushButton(tr("Run"), this)), m_cancel(new QPushButton(tr("Cancel run"), this)),
      m_progress(new QProgressBar(this)), m_target(new QLabel(this)),
      m_progressText(new QLabel(this)), m_headline(new QLabel(this)),
      m_report(new QTreeWidget(this))
{
    auto *layout = new QVBoxLayout(this);
    m_banner->setWordWrap(true);
    m_banner->setFrameShape(QFrame::StyledPanel);
    m_banner->setMargin(8);
    m_banner->setText(
        tr("<b>Sandbox runs need the embedded ledger.</b> The scenario runner drives a virtual "
           "clock that only the embedded (SQLite) store accepts, so it cannot run against this "
           "PostgreSQL ledger. Open an embedded ledger (Ctrl+O, <code>sqlite:PATH</code>) to run "
           "scenarios; <code>idempo sandbox run</code> does the same from a shell."));
    m_banner->hide();
    layout->addWidget(m_banner);

    auto *top = new QHBoxLayout;
    auto *box = new QGroupBox(tr("Scenario run"), this);
    auto *form = new QFormLayout(box);
    m_scenario->addItem(tr("All scenarios, round-robin"), QStringLiteral("all"));
    for (const QString &name : SandboxSession::scenarioNames())
        m_scenario->addItem(name, name);
    // The runner's own limit: a smaller one would turn 20000 typed into 2000 without a word.
    m_runs->setRange(1, SandboxSession::maxRuns());
    m_runs->setGroupSeparatorShown(true);
    m_runs->setValue(20);
    m_seed->setRange(0, 1'000'000);
    m_seed->setValue(42);
    for (const QString &name : SandboxSession::faultNames()) {
        auto *item = new QListWidgetItem(name, m_faults);
        item->setCheckState(Qt::Unchecked);
    }
    m_faults->setFixedHeight(m_faults->sizeHintForRow(0) * m_faults->count() +
                             2 * m_faults->frameWidth() + 4);
    m_namespace->setToolTip(
        tr("The run writes only into this namespace; it must start with “sandbox” (review views "
           "hide those) and hold no operations yet."));
    form->addRow(tr("Scenario"), m_scenario);
    form->addRow(tr("Runs"), m_runs);
    form->addRow(tr("Faults (default rates)"), m_faults);
    form->addRow(tr("Seed"), m_seed);
    form->addRow(tr("Into namespace"), m_namespace);
    auto *left = new QVBoxLayout;
    left->addWidget(box);
    left->addStretch(1);
    top->addLayout(left, 2);

    auto *right = new QVBoxLayout;
    auto *controls = new QHBoxLayout;
    m_run->setToolTip(
        tr("Writes simulated operations into the namespace above of the open ledger"));
    m_cancel->setToolTip(
        tr("Stops after the current round; the invariants are still checked on what ran"));
    controls->addWidget(m_run);
    controls->addWidget(m_cancel);
    controls->addWidget(m_progress, 1);
    right->addLayout(controls);
    m_target->setWordWrap(true);
    right->addWidget(m_target);
    right->addWidget(m_progressText);
    m_headline->setWordWrap(true);
    m_headline->setMargin(8);
    right->addWidget(m_headline);
    m_report->setColumnCount(2);
    m_report->setHeaderLabels({tr("Invariant / operation"), tr("Result")});
    m_report->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_report->setRootIsDecorated(true);
    right->addWidget(m_report, 1);
    top->addLayout(right, 3);
    layout->addLayout(top, 1);
    resetReport();

    connect(m_run, &QPushButton::clicked, this, &SandboxPanel::startRun);
    connect(m_cancel, &QPushButton::clicked, this, &SandboxPanel::cancelRun);
    connect(m_runs, &QSpinBox::valueChanged, this, &SandboxPanel::updateControls);
    connect(m_namespace, &QLineEdit::textChanged, this, &SandboxPanel::updateControls);
    connect(m_session, &SandboxSession::progressed, this, &SandboxPanel::showProgress);
    connect(m_session, &SandboxSession::finished, this, &SandboxPanel::showReport);
    connect(m_session, &SandboxSession::failed, this, &SandboxPanel::showFailure);
    updateControls();
}

void SandboxPanel::reload()
{
    // Another ledger (or none): the last report was about the previous one.
    if (!m_session->isRunning())
        resetReport();
    updateControls();
}

void SandboxPanel::setUnavailable(const QString &why)
{
    m_unavailable = why;
    updateControls();
}

void SandboxPanel::resetReport()
{
    m_report->clear();
    m_progressText->clear();
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_progress->setFormat(tr("no run yet"));
    m_runNamespace.clear();
    setHeadline({}, tr("The invariant report appears here after a run."));
}

QString SandboxPanel::runRefusal() const
{
    if (!m_connection->isOpen())
        return m_unavailable.isEmpty()
                   ? tr("No ledger is open.")
                   : tr("No ledger is open: %1")
                         .arg(m_connection->lastError().isEmpty() ? tr("opening…")
                                                                  : m_connection->lastError());
    if (!SandboxSession::supportsLedger(m_connection->url()))
        return tr("Sandbox runs need the embedded ledger.");
    if (m_session->isRunning())
        return tr("A run is going: cancel it or wait for its report.");
    const QString ns = m_namespace->text().trimmed();
    if (ns.isEmpty())
        return tr("Name the namespace the run writes into.");
    if (!isSandboxNamespace(ns.toStdString()))
        return tr("The namespace must start with “sandbox”, so that review views can keep "
                  "simulated operations apart.");
    return {};
}

QString SandboxPanel::runToolTip() const
{
    const QString why = runRefusal();
    return why.isEmpty()
               ? tr("Writes simulated operations into the namespace above of the open ledger")
               : why;
}

void SandboxPanel::setRequest(const QString &scenario, int runs, const QStringList &faults,
                              int seed, const QString &ns)
{
    m_scenario->setCurrentIndex(std::max(0, m_scenario->findData(scenario)));
    m_runs->setValue(runs);
    for (int i = 0; i < m_faults->count(); ++i) {
        QListWidgetItem *item = m_faults->item(i);
        item->setCheckState(faults.contains(item->text()) ? Qt::Checked : Qt::Unchecked);
    }
    m_seed->setValue(seed);
    if (!ns.isEmpty())
        m_namespace->setText(ns);
}

SandboxRequest SandboxPanel::request() const
{
    SandboxRequest r;
    r.ledgerUrl = m_connection->url();
    r.scenario = m_scenario->currentData().toString();
    r.runs = m_runs->value();
    for (int i = 0; i < m_faults->count(); ++i)
        if (m_faults->item(i)->checkState() == Qt::Checked)
            r.faults << m_faults->item(i)->text();
    r.seed = static_cast<std::uint64_t>(m_seed->value());
    r.ns = m_namespace->text().trimmed();
    return r;
}

void SandboxPanel::updateControls()
{
    const bool supported =
        m_connection->isOpen() && SandboxSession::supportsLedger(m_connection->url());
    const bool running = m_session->isRunning();
    m_banner->setVisible(m_connection->isOpen() && !supported);
    for (QWidget *w :
         std::initializer_list<QWidget *>{m_scenario, m_runs, m_faults, m_seed, m_namespace})
        w->setEnabled(supported && !running);
    m_run->setEnabled(runRefusal().isEmpty());
    m_run->setToolTip(runToolTip());
    m_cancel->setEnabled(running);
    m_run->setText(tr("Write %1 (simulated)").arg(runsText(m_runs->value())));
    m_target->setText(supported
                          ? tr("Writes into %1, namespace %2 only.")
                                .arg(m_connection->description(), m_namespace->text().trimmed())
                          : QString());
}

void SandboxPanel::startRun()
{
    if (!runRefusal().isEmpty())
        return;
    const SandboxRequest r = request();
    if (m_interactive) {
        QMessageBox confirm(
            QMessageBox::Question, tr("Run the sandbox"),
            tr("Write %1 (scenario %2) into namespace <b>%3</b> of %4?<br>"
               "Nothing outside that namespace changes, but the rows stay in the ledger.")
                .arg(runsText(r.runs), r.scenario, r.ns.toHtmlEscaped(),
                     m_connection->description().toHtmlEscaped()),
            QMessageBox::Cancel, this);
        QPushButton *go =
            confirm.addButton(tr("Write %1").arg(runsText(r.runs)), QMessageBox::AcceptRole);
        confirm.setDefaultButton(QMessageBox::Cancel);
        confirm.exec();
        if (confirm.clickedButton() != go)
            return;
    }
    m_report->clear();
    m_progress->setFormat(tr("%v / %m runs settled"));
    m_progress->setRange(0, r.runs);
    m_progress->setValue(0);
    m_progressText->clear();
    m_runNamespace = r.ns;
    if (!m_session->start(r))
        return;
    setHeadline(QStringLiteral("running"),
                tr("Running %1 in namespace %2…").arg(runsText(r.runs), r.ns));
    updateControls();
}

void SandboxPanel::cancelRun()
{
    if (!m_session->isRunning())
        return;
    m_session->cancel();
    m_cancel->setEnabled(false);
    m_progressText->setText(tr("Cancelling after the current round…"));
}

void SandboxPanel::showProgress(int settled, int runs, qint64 deliveries, qint64 virtualMs)
{
    m_progress->setRange(0, runs);
    m_progress->setValue(settled);
    if (!m_session->isRunning())
        return;
    m_progressText->setText(
        tr("%1 deliveries, virtual time +%2 s").arg(deliveries).arg(virtualMs / 1000));
}

void SandboxPanel::showReport()
{
    const sandbox::SandboxSummary &r = m_session->summary();
    m_report->clear();
    QStringList broken;
    for (const sandbox::SandboxSummary::Invariant &i : r.invariants) {
        const QString name = QString::fromStdString(i.name);
        // An invariant checked on nothing proves nothing: it is not shown as holding.
        const bool unchecked = i.ok && i.checked == 0;
        auto *item = new QTreeWidgetItem(m_report);
        item->setText(0, (unchecked ? QStringLiteral("– ")
                          : i.ok    ? QStringLiteral("✔ ")
                                    : QStringLiteral("✘ ")) +
                             name);
        item->setText(1, unchecked ? tr("not checked: nothing of it ran")
                         : i.ok
                             ? tr("holds (%1 checked)").arg(i.checked)
                             : tr("VIOLATED: %1 of %2 checked").arg(i.violations).arg(i.checked));
        if (!unchecked)
            item->setForeground(0, i.ok ? QColor(0x3f, 0xa3, 0x5b) : QColor(0xd6, 0x45, 0x45));
        if (i.ok)
            continue;
        broken << name;
        for (const sandbox::SandboxSummary::Invariant::Example &e : i.examples) {
            auto *example = new QTreeWidgetItem(item);
            example->setText(0, QString::fromStdString(e.operation));
            example->setText(1, QString::fromStdString(e.message));
        }
        item->setExpanded(true);
    }
    auto *figures = new QTreeWidgetItem(m_report);
    figures->setText(0, tr("Figures"));
    const auto figure = [figures](const QString &name, const QString &value) {
        auto *item = new QTreeWidgetItem(figures);
        item->setText(0, name);
        item->setText(1, value);
    };
    figure(tr("deliveries"), QString::number(r.deliveries));
    figure(tr("duplicates suppressed"), counts(r.duplicatesSuppressed));
    figure(tr("provider effects"), counts(r.providerEffects));
    figure(tr("duplicate effects"), QString::number(r.duplicateEffects));
    figure(tr("faults injected"), counts(r.faultsInjected));
    figure(tr("retries / crashes / fenced writes"),
           QStringLiteral("%1 / %2 / %3").arg(r.retries).arg(r.crashes).arg(r.fencedWrites));
    figure(tr("approvals / confirmations pending"),
           QStringLiteral("%1 / %2").arg(r.approvalsPending).arg(r.confirmationsPending));
    if (r.virtualSeconds)
        figure(tr("virtual time"), tr("%1 s").arg(*r.virtualSeconds));
    figure(tr("wall time"), tr("%1 s").arg(r.wallSeconds, 0, 'f', 2));
    figures->setExpanded(true);

    const QString runs = runsText(r.runs);
    const QString where = tr("namespace %1, seed %2").arg(m_runNamespace, QString::number(r.seed));
    if (r.cancelled) {
        setHeadline(QStringLiteral("cancelled"),
                    tr("■ CANCELLED after %1 of %2 settled (%3). Invariants on what ran: %4")
                        .arg(m_progress->value())
                        .arg(runs, where,
                             r.ok ? tr("all hold")
                                  : tr("VIOLATED: %1").arg(broken.join(QStringLiteral(", ")))));
    } else if (r.ok) {
        setHeadline(QStringLiteral("ok"),
                    tr("✔ All %1 invariants hold — %2, %3, %4 duplicate effects")
                        .arg(r.invariants.size())
                        .arg(runs, where, QString::number(r.duplicateEffects)));
    } else {
        setHeadline(
            QStringLiteral("violated"),
            tr("✘ INVARIANTS VIOLATED: %1 — %2, %3; the violating operations are listed below")
                .arg(broken.join(QStringLiteral(", ")), runs, where));
    }
    m_progressText->clear();
    m_namespace->setText(SandboxSession::freshNamespace());
    updateControls();
}

void SandboxPanel::showFailure(const QString &message)
{
    setHeadline(QStringLiteral("failed"), tr("✘ The run did not complete: %1").arg(message));
    m_progressText->clear();
    updateControls();
}

void SandboxPanel::setHeadline(const QString &state, const QString &text)
{
    m_state = state;
    m_headline->setText(text);
    QString style;
    if (state == QLatin1String("ok"))
        style = QStringLiteral("background:#2e7d46; color:white; font-weight:bold;");
    else if (state == QLatin1String("violated") || state == QLatin1String("failed"))
        style = QStringLiteral("background:#b3261e; color:white; font-weight:bold;");
    else if (state == QLatin1String("cancelled"))
        style = QStringLiteral("background:#a15c00; color:white; font-weight:bold;");
    m_headline->setStyleSheet(style);
}

QString SandboxPanel::headline() const
{
    return m_headline->text();
}

} // namespace idempo
