// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QWidget>

class QLabel;
class QHBoxLayout;
class QPushButton;

namespace idempo {

struct RunSummary;

/// The selected run's state and budgets above its timeline: "Halted: 3 failed dispatches of 3"
/// in red, a bar per limited budget with its figures, and Resume for a halted run (a guarded
/// action: the button only asks; ActionController opens the dialog and the command decides).
class RunBudgetPanel final : public QWidget
{
    Q_OBJECT
public:
    explicit RunBudgetPanel(QWidget *parent = nullptr);

    /// Shows `run` (nullptr: no run selected) at `nowMs` on the ledger's clock.
    void setRun(const RunSummary *run, std::int64_t nowMs);
    /// Why the current identity may not resume runs; empty when it may.
    void setRefusal(const QString &why);

    QLabel *stateLabel() const { return m_state; }
    QPushButton *resumeButton() const { return m_resume; }
    /// The bars shown, as their figures (tests read them).
    QStringList barTexts() const;

Q_SIGNALS:
    void resumeRequested();

private:
    void updateResume();

    QLabel *m_state;
    QHBoxLayout *m_bars;
    QPushButton *m_resume;
    QString m_refusal;
    bool m_halted = false;
};

} // namespace idempo
