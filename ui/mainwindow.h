// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <utility>

#include <QList>
#include <QMainWindow>

class QTabWidget;

namespace idempo {

class ActionController;
class AuditView;
class ConfirmationsView;
class DlqView;
class ElidedLabel;
class FourEyesView;
class LeasesView;
class LedgerConnection;
class LedgerView;
class Notifier;
class OperationDetailPane;
class OperationsView;
class OverviewView;
class RunsView;

/// The console's window: one tab per view over one open ledger. The title and the status bar
/// always name the ledger and say whether live updates are flowing; a stale-data marker shows
/// when they are not.
class MainWindow final : public QMainWindow
{
    Q_OBJECT
public:
    explicit MainWindow(QWidget *parent = nullptr);

    /// Opens `url`; on failure the connection dialog explains (unless `interactive` is false).
    void openLedger(const QString &url);
    void setInteractive(bool interactive) { m_interactive = interactive; }
    LedgerConnection *connection() const { return m_connection; }
    /// The guarded actions of this window's ledger.
    ActionController *actions() const { return m_actions; }
    QTabWidget *tabs() const { return m_tabs; }
    /// Every view in tab order.
    QList<LedgerView *> views() const { return m_views; }
    /// The status line as shown (tests read it).
    QString statusText() const;

    /// Shows the ledger picker.
    void chooseLedger(const QString &error = {}, const QString &hint = {});
    /// Follows a first-step link of an empty view (FirstStepsPanel::SandboxLink, ConnectLink).
    void followLink(const QString &link);

public Q_SLOTS:
    // Linked evidence (mainwindowlinks.cpp): the one entry point every click-through calls.

    /// The Find tab showing operation `ns`/`key`, selected, with its details.
    void showOperation(const QString &ns, const QString &key);
    /// The Audit tab showing only the records that target operation `ns`/`key`.
    void showAuditOf(const QString &ns, const QString &key);
    /// Writes the evidence pack (evidencepack.h) of `ns`/`key` to `path` on the worker; asks
    /// for the file when `path` is empty. evidenceExported() tells how it went.
    void exportEvidence(const QString &ns, const QString &key, const QString &path = {});

Q_SIGNALS:
    void evidenceExported(bool ok, const QString &message);
    /// The ledger opened and the first view asked for its rows.
    void ledgerOpened();
    void ledgerFailed(const QString &message);

private:
    /// The views the window wires to each other and to the actions, besides its members.
    struct Views
    {
        ConfirmationsView *confirmations = nullptr;
        DlqView *dlq = nullptr;
        LeasesView *leases = nullptr;
        OperationsView *operations = nullptr;
        RunsView *runs = nullptr;
    };

    /// Creates the views, one tab each, in m_views.
    Views createViews();
    /// The title, status bar and views follow the ledger: opened, failed, live, changed.
    void connectLedger();
    /// Links between views: empty-state links, operations asked for, the four-eyes count.
    void connectViews(const Views &views);
    /// The guarded actions: the detail panes' buttons, the bulk bars, Resume and Replay.
    void connectActions(const Views &views);
    void buildMenus();
    void buildOperationMenu();
    /// The operation the current tab has selected (its detail pane, or the audit row's target).
    std::pair<QString, QString> currentOperation() const;
    void selectPendingOperation();
    void updateTitle();
    void refreshCurrent();
    void refreshAll();
    void updateTabCounts();
    void updateGuidance();
    /// Drops every view's rows and shows `why` in their place (no ledger open).
    void showUnavailable(const QString &why);

    LedgerConnection *m_connection;
    ActionController *m_actions;
    QTabWidget *m_tabs;
    OverviewView *m_overview = nullptr;
    Notifier *m_notifier = nullptr;
    QList<LedgerView *> m_views;
    OperationsView *m_find = nullptr;
    AuditView *m_audit = nullptr;
    QList<OperationDetailPane *> m_panes;
    /// The operation showOperation() waits to see in the Find tab's rows.
    std::pair<QString, QString> m_pendingSelect;
    LedgerView *m_sandbox = nullptr;
    FourEyesView *m_fourEyes = nullptr;
    ElidedLabel *m_ledgerLabel;
    ElidedLabel *m_whoLabel;
    ElidedLabel *m_liveLabel;
    bool m_interactive = true;
};

} // namespace idempo
