// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <vector>

#include <QObject>
#include <QString>

#include "bulkcommand.h"
#include "operationquery.h"

class QProgressDialog;
class QWidget;

namespace idempo {

class ActionController;
class GuardedActionDialog;
class GuardedActionRunner;
class LedgerConnection;

/// Runs bulk actions (BulkCommand, the CLI's `idempo bulk`) from the console: the set is frozen
/// on the ledger's worker thread (the selected rows with the versions shown, or every operation a
/// view's filter matches, read to the end first), the guarded dialog shows the count and asks for
/// it typed with a reason, and the run goes on a thread and connection of its own at the bounded
/// rate with a progress dialog whose Stop ends it between operations. The outcome per operation
/// (applied, skipped, refused with why) fills the dialog. The identity acting is `actions`'s, and
/// the run is built as `actions` builds its own (ActionController::builder()); it goes through a
/// GuardedActionRunner as every guarded action does (BulkRun).
class BulkActionController final : public QObject
{
    Q_OBJECT
public:
    BulkActionController(LedgerConnection *connection, ActionController *actions,
                         QWidget *dialogParent);

    /// Why `action` cannot start now (role, no ledger); empty when it can.
    QString refusal(BulkAction action) const;
    /// Opens the confirmation of `action` on `targets` (a frozen set).
    void start(BulkAction action, const std::vector<BulkTarget> &targets);
    /// Freezes everything `query` matches (sandbox namespaces left out when it hides them), then
    /// opens the confirmation as start() does.
    void startFiltered(BulkAction action, const OperationQuery &query);

    /// Operations per second of a run (BulkCommand::Request::ratePerSecond).
    void setRate(double perSecond) { m_rate = perSecond; }
    GuardedActionDialog *dialog() const;
    /// The progress of the run going on, with its Stop; null when none runs.
    QProgressDialog *progressDialog() const;

Q_SIGNALS:
    void dialogOpened(idempo::GuardedActionDialog *dialog);
    /// The set could not be frozen or described (nothing to act on, ledger error).
    void refused(const QString &message);
    /// A run advanced: `done` of `total` operations.
    void progress(qint64 done, qint64 total);
    /// A run finished (or was refused before writing): its summary in words.
    void executed(bool ok, const QString &outcome);

private:
    void describe(BulkAction action, std::optional<std::vector<BulkTarget>> targets,
                  std::optional<OperationQuery> query);

    ActionController *m_actions;
    GuardedActionRunner *m_runner;
    double m_rate = BulkCommand::DefaultRatePerSecond;
};

} // namespace idempo
