// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <optional>

#include <QObject>
#include <QPointer>
#include <QProgressDialog>
#include <QString>

#ifndef Q_MOC_RUN
#include <concepts>
#endif

#include "guardedactiondialog.h"
#include "ledgerconnection.h"
#include "pacedrun.h"

namespace idempo {

/// What a confirmation dialog opens with: its window title, the consequence shown large at its
/// top and the text of its OK button.
struct DialogHeading
{
    QString title;
    QString sentence;
    QString okText;
};

/// How an execute() ended: its outcome in words, or (`ok` false) why it did not, or not wholly.
struct ExecuteAnswer
{
    bool ok = true;
    QString text;
};

/// One guarded action as the console runs it (consoleactions.h): a value holding the actor and
/// the request, copied to the ledger's worker, which it reaches only through the store and
/// queues it is given there.
/// - `Preview`: what describe() answers, typed (actionpreviews.h);
/// - `describe(store, queues)`, on the worker: the preview; throws why there is nothing to confirm;
/// - `heading(preview)` and `present(dialog, preview)`, on the GUI thread: the dialog's words,
///   details and fields;
/// - `submit(submission)`, on the GUI thread: takes the operator's input into the request; a
///   non-empty answer says why it cannot run, and nothing runs;
/// - `execute(store, queues, hooks)`, on the worker: validates and executes, answering `Done` (an
///   ExecuteAnswer, or one carrying more), never throwing;
/// - `RunsAlone`: true for a paced run over a set (DLQ replay, bulk), which runs on a thread of
///   its own with its `hooks`, behind `progressDialog(parent)` labelled `progressText(done,
///   total)` whose cancel stops it between items;
/// - optionally `finished(dialog, done)`: adds to the dialog what the outcome holds.
#ifndef Q_MOC_RUN // moc of Qt 6.4 reads no concepts
// clang-format 14 breaks requires-expressions apart.
// clang-format off
template <typename A>
concept ConsoleAction =
    std::copy_constructible<A> &&
    requires(A a, const A c, LedgerStore &store, MessageQueue *queues, GuardedActionDialog &dialog,
             const typename A::Preview &preview, const GuardedActionDialog::Submission &submission,
             const PacedRun::Hooks &hooks) {
        { c.describe(store, queues) } -> std::same_as<typename A::Preview>;
        { c.heading(preview) } -> std::same_as<DialogHeading>;
        a.present(dialog, preview);
        { a.submit(submission) } -> std::same_as<QString>;
        { c.execute(store, queues, hooks) } -> std::same_as<typename A::Done>;
        { A::RunsAlone } -> std::convertible_to<bool>;
    };
// clang-format on
#endif

/// Runs the console's guarded actions, each the same way (style.md 10): describe() on the
/// ledger's worker, the confirmation dialog on the GUI thread, then the submission validated
/// and executed on the worker (a paced run on a thread of its own, so the views keep answering),
/// and the outcome in the dialog. One dialog at a time: opening one closes the previous.
class GuardedActionRunner final : public QObject
{
    Q_OBJECT
public:
    /// Dialogs open over `dialogParent`; the runner is a child of `parent`.
    GuardedActionRunner(LedgerConnection *connection, QWidget *dialogParent, QObject *parent);

    /// Describes `action`, then opens its dialog (dialogOpened()), or says why not (refused()).
    template <ConsoleAction A> void run(A action);

    /// The dialog open now, if any (tests drive it).
    GuardedActionDialog *dialog() const { return m_dialog; }
    /// The progress of the paced run under way, if any.
    QProgressDialog *progressDialog() const { return m_progress; }

Q_SIGNALS:
    /// A confirmation dialog opened (modeless for the event loop, modal for the operator).
    void dialogOpened(idempo::GuardedActionDialog *dialog);
    /// describe() would not answer (nothing to act on, ledger error).
    void refused(const QString &message);
    /// An execute() finished (or its submission was refused before it ran).
    void executed(bool ok, const QString &outcome);
    /// A paced run advanced.
    void progress(qint64 done, qint64 total);

private:
    template <typename Preview> struct Described
    {
        std::optional<Preview> preview;
        QString error;
    };

    template <ConsoleAction A> void confirm(const A &action, const typename A::Preview &preview);
    template <ConsoleAction A> void execute(const A &action);
    template <ConsoleAction A> void finish(const A &action, const typename A::Done &done);
    template <ConsoleAction A> static typename A::Done failed(const QString &why);

    GuardedActionDialog *openDialog(const DialogHeading &heading);
    /// Shows `progress` for the run about to start: its cancel sets `cancelled`; its label
    /// follows `text`. Answers the run's hooks: real waits, that flag, progress to this thread.
    PacedRun::Hooks startProgress(QProgressDialog *progress,
                                  std::function<QString(qint64, qint64)> text,
                                  std::shared_ptr<std::atomic_bool> cancelled);
    void reportProgress(qint64 done, qint64 total);
    void closeProgress();

    LedgerConnection *m_connection;
    QWidget *m_dialogParent;
    QPointer<GuardedActionDialog> m_dialog;
    QPointer<QProgressDialog> m_progress;
    std::function<QString(qint64, qint64)> m_progressText;
};

template <ConsoleAction A> void GuardedActionRunner::run(A action)
{
    using Preview = typename A::Preview;
    m_connection->query(
        this,
        [action](LedgerStore &store, MessageQueue *queues) {
            Described<Preview> d;
            try {
                d.preview = action.describe(store, queues);
            } catch (const std::exception &e) {
                d.error = QString::fromStdString(e.what());
            }
            return d;
        },
        [this, action](const Described<Preview> &d) {
            if (d.preview)
                confirm(action, *d.preview);
            else
                Q_EMIT refused(d.error);
        });
}

template <ConsoleAction A>
void GuardedActionRunner::confirm(const A &action, const typename A::Preview &preview)
{
    GuardedActionDialog *dialog = openDialog(action.heading(preview));
    A shown = action;
    shown.present(*dialog, preview);
    connect(dialog, &GuardedActionDialog::submitted, this,
            [this, shown](const GuardedActionDialog::Submission &submission) {
                A submitted = shown;
                if (const QString why = submitted.submit(submission); !why.isEmpty())
                    finish(submitted, failed<A>(why));
                else
                    execute(submitted);
            });
    dialog->open();
    Q_EMIT dialogOpened(dialog);
}

template <ConsoleAction A> void GuardedActionRunner::execute(const A &action)
{
    using Done = typename A::Done;
    if constexpr (A::RunsAlone) {
        auto cancelled = std::make_shared<std::atomic_bool>(false);
        const PacedRun::Hooks hooks = startProgress(
            action.progressDialog(m_dialog),
            [action](qint64 done, qint64 total) { return action.progressText(done, total); },
            cancelled);
        m_connection->runAlone(
            this,
            [action, hooks](LedgerStore &store, MessageQueue *queues) {
                return action.execute(store, queues, hooks);
            },
            [this, action](const Done &done) {
                closeProgress();
                finish(action, done);
            },
            [this, action](const QString &error) {
                closeProgress();
                finish(action, failed<A>(error));
            });
    } else {
        m_connection->query(
            this,
            [action](LedgerStore &store, MessageQueue *queues) {
                return action.execute(store, queues, PacedRun::Hooks{});
            },
            [this, action](const Done &done) { finish(action, done); });
    }
}

template <ConsoleAction A>
void GuardedActionRunner::finish(const A &action, const typename A::Done &done)
{
    if (m_dialog) {
        m_dialog->finish(done.ok, done.text);
        if constexpr (requires { action.finished(*m_dialog, done); })
            action.finished(*m_dialog, done);
    }
    Q_EMIT executed(done.ok, done.text);
}

template <ConsoleAction A> typename A::Done GuardedActionRunner::failed(const QString &why)
{
    typename A::Done done{};
    done.ok = false;
    done.text = why;
    return done;
}

} // namespace idempo
