// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <QCoreApplication>
#include <QString>

#include "actionpreviews.h"
#include "actionrecords.h"
#include "guardedactionbuilder.h"
#include "guardedactionrunner.h"
#include "operation.h"
#include "operationdetailpane.h"
#include "operationquery.h"
#include "runsummary.h"

class QLineEdit;
class QProgressDialog;
class QSpinBox;
class QTableWidget;

namespace idempo {

// The console's guarded actions on one operation, run, or set of dead letters, for
// GuardedActionRunner (the ConsoleAction concept there): each builds its command with
// GuardedActionBuilder, as the CLI does, and fills its confirmation dialog from the typed preview.

/// Approve (re-dispatch or confirm) or reject one operation: ApproveCommand.
class ApprovalAction final
{
    Q_DECLARE_TR_FUNCTIONS(ApprovalAction)
public:
    using Preview = ApprovalPreview;
    using Done = ExecuteAnswer;
    static constexpr bool RunsAlone = false;

    /// `action` (Redispatch, Confirm or Reject) on `op` by `actor`, under a fresh approval id.
    ApprovalAction(ActorIdentity actor, GuardedActionBuilder builder, OperationAction action,
                   const Operation &op);

    /// The request as submitted so far (before submit(): without reason and reference).
    const ApproveCommand::Request &request() const { return m_request; }
    const GuardedActionBuilder &builder() const { return m_builder; }

    Preview describe(LedgerStore &store, MessageQueue *queues) const;
    DialogHeading heading(const Preview &preview) const;
    void present(GuardedActionDialog &dialog, const Preview &preview) const;
    QString submit(const GuardedActionDialog::Submission &submission);
    Done execute(LedgerStore &store, MessageQueue *queues, const PacedRun::Hooks &hooks) const;

private:
    ActorIdentity m_actor;
    GuardedActionBuilder m_builder;
    OperationAction m_action;
    ApproveCommand::Request m_request;
    QString m_subject;
};

/// Reconcile one operation by its provider's answer: ReconcileCommand.
class ReconcileAction final
{
    Q_DECLARE_TR_FUNCTIONS(ReconcileAction)
public:
    using Preview = ReconcilePreview;
    using Done = ExecuteAnswer;
    static constexpr bool RunsAlone = false;

    ReconcileAction(ActorIdentity actor, GuardedActionBuilder builder, const Operation &op);

    const ReconcileCommand::Request &request() const { return m_request; }

    Preview describe(LedgerStore &store, MessageQueue *queues) const;
    DialogHeading heading(const Preview &preview) const;
    void present(GuardedActionDialog &dialog, const Preview &preview) const;
    QString submit(const GuardedActionDialog::Submission &submission);
    Done execute(LedgerStore &store, MessageQueue *queues, const PacedRun::Hooks &hooks) const;

private:
    ActorIdentity m_actor;
    GuardedActionBuilder m_builder;
    ReconcileCommand::Request m_request;
    QString m_subject;
};

/// Resume a halted run, adding to the budget that halted it: RunActionCommand. The dialog asks
/// what to add to each budget the run has, prefilled with a fresh allowance of failed dispatches
/// where that one ran out.
class ResumeAction final
{
    Q_DECLARE_TR_FUNCTIONS(ResumeAction)
public:
    using Preview = RunActionPreview;
    using Done = ExecuteAnswer;
    static constexpr bool RunsAlone = false;

    /// `run` must hold its record.
    ResumeAction(ActorIdentity actor, GuardedActionBuilder builder, const RunSummary &run);

    const RunActionCommand::Request &request() const { return m_request; }

    Preview describe(LedgerStore &store, MessageQueue *queues) const;
    DialogHeading heading(const Preview &preview) const;
    /// Adds the fields, which submit() reads (on the GUI thread, while the dialog lives).
    void present(GuardedActionDialog &dialog, const Preview &preview);
    QString submit(const GuardedActionDialog::Submission &submission);
    Done execute(LedgerStore &store, MessageQueue *queues, const PacedRun::Hooks &hooks) const;

private:
    ActorIdentity m_actor;
    GuardedActionBuilder m_builder;
    RunRecord m_run;
    RunActionCommand::Request m_request;
    QSpinBox *m_failed = nullptr;
    QLineEdit *m_spend = nullptr;
    QSpinBox *m_tokens = nullptr;
};

/// Replay a frozen set of dead letters after its dry run, at most the request's rate per
/// second, on a thread of its own with a Stop: DlqReplayCommand.
class ReplayAction final
{
    Q_DECLARE_TR_FUNCTIONS(ReplayAction)
public:
    using Preview = ReplayPreview;
    using Done = ExecuteAnswer;
    static constexpr bool RunsAlone = true;

    /// The dead letters `ids` of `queue`, each judged in its own namespace, under a fresh
    /// replay id.
    ReplayAction(ActorIdentity actor, GuardedActionBuilder builder, const std::string &queue,
                 const std::vector<std::int64_t> &ids, double ratePerSecond);

    const DlqReplayCommand::Request &request() const { return m_request; }

    Preview describe(LedgerStore &store, MessageQueue *queues) const;
    DialogHeading heading(const Preview &preview) const;
    void present(GuardedActionDialog &dialog, const Preview &preview) const;
    QString submit(const GuardedActionDialog::Submission &submission);
    Done execute(LedgerStore &store, MessageQueue *queues, const PacedRun::Hooks &hooks) const;
    QProgressDialog *progressDialog(QWidget *parent) const;
    QString progressText(qint64 done, qint64 total) const;

private:
    ActorIdentity m_actor;
    GuardedActionBuilder m_builder;
    DlqReplayCommand::Request m_request;
};

/// Approve, reject or reconcile a frozen set of operations, at most the request's rate per
/// second, on a thread of its own with a Stop: BulkCommand. The set is the targets given, or
/// everything a view's query matches, frozen on the worker before anything is acted on.
class BulkRun final
{
    Q_DECLARE_TR_FUNCTIONS(BulkRun)
public:
    /// The frozen set described.
    struct Preview
    {
        BulkPreview preview;
        std::vector<BulkTarget> targets;
    };
    /// The run's outcome per operation, when it ran.
    struct Done : ExecuteAnswer
    {
        std::optional<BulkOutcome> outcome;
    };
    static constexpr bool RunsAlone = true;

    /// `action` on `targets`, or (without them) on everything `query` matches, sandbox
    /// namespaces left out when it hides them.
    BulkRun(ActorIdentity actor, GuardedActionBuilder builder, BulkAction action,
            double ratePerSecond, std::optional<std::vector<BulkTarget>> targets,
            std::optional<OperationQuery> query);

    const BulkCommand::Request &request() const { return m_request; }

    /// Throws when the set holds nothing the action takes.
    Preview describe(LedgerStore &store, MessageQueue *queues) const;
    DialogHeading heading(const Preview &preview) const;
    /// Keeps the frozen set for the run.
    void present(GuardedActionDialog &dialog, const Preview &preview);
    QString submit(const GuardedActionDialog::Submission &submission);
    Done execute(LedgerStore &store, MessageQueue *queues, const PacedRun::Hooks &hooks) const;
    QProgressDialog *progressDialog(QWidget *parent) const;
    QString progressText(qint64 done, qint64 total) const;
    /// Adds the outcome of each operation.
    void finished(GuardedActionDialog &dialog, const Done &done) const;

private:
    ActorIdentity m_actor;
    GuardedActionBuilder m_builder;
    BulkCommand::Request m_request;
    std::optional<OperationQuery> m_query;
};

/// "Approve refund of 1,250.00 EUR" from "Approve refund of 1,250.00 EUR to DE44…: dispatch it
/// again": the consequence, short enough for a button.
QString consequenceButtonText(const QString &sentence);

/// A read-only table of `rows` under `headers`, its columns sized to their contents: a dialog's
/// dry run, frozen set or outcome.
QTableWidget *detailTable(const QStringList &headers, const std::vector<QStringList> &rows);

} // namespace idempo
