// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerview.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTreeWidget;

namespace idempo {

class LedgerConnection;
class SandboxSession;
struct SandboxRequest;

/// Runs sandbox scenarios against the open ledger: scenario, runs, faults, seed and namespace;
/// a progress bar with cancel while it runs on its own thread; the invariant report at the end,
/// green when every invariant holds, red with the violating operations listed. The other views
/// show the rows arriving through their live updates. Only the embedded ledger can host a run
/// (SandboxRunner drives a virtual clock the store must accept); on another the panel says so.
class SandboxPanel final : public LedgerView
{
    Q_OBJECT
public:
    explicit SandboxPanel(LedgerConnection *connection, QWidget *parent = nullptr);

    void reload() override;
    void refresh() override {}
    void setUnavailable(const QString &why) override;
    /// Why Run is disabled (no ledger, not the embedded one, a run going, a namespace that is
    /// not a sandbox one); empty when a run may start.
    QString runRefusal() const;

    /// False skips the confirmation before a run writes to the ledger (tests, screenshots).
    void setInteractive(bool interactive) { m_interactive = interactive; }
    /// Fills the form: `faults` are fault names; an empty `ns` keeps the proposed one.
    void setRequest(const QString &scenario, int runs, const QStringList &faults, int seed,
                    const QString &ns = {});
    /// Starts a run with the form's values (after the confirmation, when interactive).
    void startRun();
    void cancelRun();

    SandboxSession *session() const { return m_session; }
    QProgressBar *progressBar() const { return m_progress; }
    QPushButton *runButton() const { return m_run; }
    QPushButton *cancelButton() const { return m_cancel; }
    QSpinBox *runsBox() const { return m_runs; }
    /// The invariant report: one top-level item per invariant, then the figures.
    QTreeWidget *reportTree() const { return m_report; }
    /// The report's headline as shown; reportState() is "", "running", "ok", "violated",
    /// "cancelled" or "failed".
    QString headline() const;
    QString reportState() const { return m_state; }
    /// The namespace of the run going or last run.
    QString runNamespace() const { return m_runNamespace; }

private:
    SandboxRequest request() const;
    void updateControls();
    void showProgress(int settled, int runs, qint64 deliveries, qint64 virtualMs);
    void showReport();
    void showFailure(const QString &message);
    void setHeadline(const QString &state, const QString &text);
    /// Back to "no run yet": no report, no progress (a fresh panel, or another ledger).
    void resetReport();
    /// What the Run button's tooltip says: why it is disabled, or what it does.
    QString runToolTip() const;

    LedgerConnection *m_connection;
    SandboxSession *m_session;
    QLabel *m_banner;
    QComboBox *m_scenario;
    QSpinBox *m_runs;
    QListWidget *m_faults;
    QSpinBox *m_seed;
    QLineEdit *m_namespace;
    QPushButton *m_run;
    QPushButton *m_cancel;
    QProgressBar *m_progress;
    QLabel *m_target;
    QLabel *m_progressText;
    QLabel *m_headline;
    QTreeWidget *m_report;
    QString m_state;
    QString m_runNamespace;
    QString m_unavailable;
    bool m_interactive = true;
};

} // namespace idempo
