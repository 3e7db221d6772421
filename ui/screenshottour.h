// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QObject>
#include <QString>

namespace idempo {

class MainWindow;

/// Visits every tab of a loaded window, selects the first row where a detail pane depends on
/// it, and saves QWidget::grab() of the window as DIR/NN-name.png; then searches Find by a
/// payload field and saves its details drawer on the history and on the audit records
/// (DIR/09-find-drawer.png, DIR/09-find-drawer-audit.png) and a refused term
/// (DIR/09-find-bad-pointer.png); then opens the approve
/// dialog of the first operation awaiting approval and the DLQ replay dry run, saves each as
/// DIR/dialog-approve.png and DIR/dialog-dlq-replay.png, and cancels them (nothing is
/// submitted); then emits finished(). Used for the documentation's screenshots and to look at
/// the views under xvfb.
class ScreenshotTour final : public QObject
{
    Q_OBJECT
public:
    ScreenshotTour(MainWindow *window, const QString &directory, QObject *parent = nullptr);

    /// Starts after `settleMs`, giving the first pages time to arrive.
    void start(int settleMs);

Q_SIGNALS:
    void finished(bool ok);

private:
    void visit(int tab);
    void drawer(int step);
    void dialogs(int step);

    MainWindow *m_window;
    QString m_directory;
    bool m_ok = true;
};

} // namespace idempo
