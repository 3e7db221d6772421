// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QList>
#include <QMainWindow>

class QLabel;
class QTabWidget;

namespace idempo {

class ActionController;
class FourEyesView;
class LedgerConnection;
class LedgerView;
class Notifier;
class OverviewView;

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

Q_SIGNALS:
    /// The ledger opened and the first view asked for its rows.
    void ledgerOpened();
    void ledgerFailed(const QString &message);

private:
    void buildMenus();
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
    LedgerView *m_sandbox = nullptr;
    FourEyesView *m_fourEyes = nullptr;
    QLabel *m_ledgerLabel;
    QLabel *m_whoLabel;
    QLabel *m_liveLabel;
    bool m_interactive = true;
};

} // namespace idempo
