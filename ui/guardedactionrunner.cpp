// SPDX-License-Identifier: Apache-2.0
#include "guardedactionrunner.h"

#include <chrono>
#include <thread>

namespace idempo {

GuardedActionRunner::GuardedActionRunner(LedgerConnection *connection, QWidget *dialogParent,
                                         QObject *parent)
    : QObject(parent), m_connection(connection), m_dialogParent(dialogParent)
{
}

GuardedActionDialog *GuardedActionRunner::openDialog(const DialogHeading &heading)
{
    if (m_dialog)
        m_dialog->close();
    auto *d =
        new GuardedActionDialog(heading.title, heading.sentence, heading.okText, m_dialogParent);
    d->setAttribute(Qt::WA_DeleteOnClose);
    m_dialog = d;
    return d;
}

PacedRun::Hooks GuardedActionRunner::startProgress(QProgressDialog *progress,
                                                   std::function<QString(qint64, qint64)> text,
                                                   std::shared_ptr<std::atomic_bool> cancelled)
{
    progress->setAttribute(Qt::WA_DeleteOnClose);
    progress->setMinimumDuration(0);
    connect(progress, &QProgressDialog::canceled, this, [cancelled] { *cancelled = true; });
    m_progress = progress;
    m_progressText = std::move(text);
    PacedRun::Hooks hooks;
    hooks.sleep = [](std::chrono::milliseconds ms) { std::this_thread::sleep_for(ms); };
    hooks.cancelled = [cancelled] { return cancelled->load(); };
    hooks.progress = [self = QPointer<GuardedActionRunner>(this)](std::int64_t done,
                                                                  std::int64_t total) {
        QMetaObject::invokeMethod(
            self,
            [self, done, total] {
                if (self)
                    self->reportProgress(done, total);
            },
            Qt::QueuedConnection);
    };
    return hooks;
}

void GuardedActionRunner::reportProgress(qint64 done, qint64 total)
{
    if (m_progress) {
        m_progress->setMaximum(int(total));
        m_progress->setValue(int(done));
        if (m_progressText)
            m_progress->setLabelText(m_progressText(done, total));
    }
    Q_EMIT progress(done, total);
}

void GuardedActionRunner::closeProgress()
{
    if (m_progress)
        m_progress->close();
}

} // namespace idempo
