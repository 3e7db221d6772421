// SPDX-License-Identifier: Apache-2.0
#include "notifier.h"

#include <QApplication>
#include <QSettings>
#include <QSystemTrayIcon>

#include "amount.h"
#include "displayformat.h"
#include "money.h"
#include "overviewmodel.h"

namespace idempo {

namespace {

/// More halts (or valuable confirmations) than this in one snapshot are told as one count.
constexpr int MaxHaltsTold = 3;

QString settingKey(Notifier::Kind kind)
{
    switch (kind) {
    case Notifier::Kind::HaltedRun:
        return QStringLiteral("notifications/haltedRuns");
    case Notifier::Kind::Confirmation:
        return QStringLiteral("notifications/confirmations");
    case Notifier::Kind::DeadLetter:
        return QStringLiteral("notifications/deadLetters");
    }
    return {};
}

QString identity(const RunRecord &run)
{
    return QString::fromStdString(run.ns + '\x1f' + run.runId);
}

QString identity(const Operation &op)
{
    return QString::fromStdString(op.ns + '\x1f' + op.key);
}

const QString kFloorKey = QStringLiteral("notifications/confirmationsAbove");

} // namespace

Notifier::Notifier(OverviewModel *model, QObject *parent) : QObject(parent), m_model(model)
{
    if (QSystemTrayIcon::isSystemTrayAvailable()) {
        m_tray = new QSystemTrayIcon(qApp->windowIcon(), this);
        m_tray->setToolTip(QStringLiteral("Idempo console"));
        m_tray->show();
    }
    connect(m_model, &OverviewModel::updated, this, &Notifier::compare);
}

QString Notifier::kindText(Kind kind)
{
    switch (kind) {
    case Kind::HaltedRun:
        return tr("Halted &runs");
    case Kind::Confirmation:
        return tr("New &confirmations");
    case Kind::DeadLetter:
        return tr("New &dead letters");
    }
    return {};
}

bool Notifier::isEnabled(Kind kind) const
{
    return QSettings().value(settingKey(kind), true).toBool();
}

void Notifier::setEnabled(Kind kind, bool on)
{
    QSettings().setValue(settingKey(kind), on);
}

void Notifier::setConfirmationFloor(const QString &amount)
{
    QSettings().setValue(kFloorKey, amount.trimmed());
}

QString Notifier::confirmationFloor() const
{
    return QSettings().value(kFloorKey).toString();
}

void Notifier::resetBaseline()
{
    m_hasBaseline = false;
    m_halted.clear();
    m_valuable.clear();
    m_confirmations = 0;
    m_deadLetters = 0;
}

void Notifier::compare()
{
    if (!m_model->hasSnapshot())
        return;
    const OverviewSnapshot &s = m_model->snapshot();
    QSet<QString> halted;
    QStringList fresh;
    for (const RunRecord &run : s.haltedRuns) {
        halted.insert(identity(run));
        if (m_hasBaseline && !m_halted.contains(identity(run)) && fresh.size() <= MaxHaltsTold)
            fresh << tr("Run %1 (namespace %2) halted: %3")
                         .arg(displayText(run.runId), displayText(run.ns),
                              displayText(run.haltDetail));
    }
    const std::int64_t confirmations = s.figures.count(OperationState::ConfirmationRequired) +
                                       s.figures.count(OperationState::UnknownOutcome);
    if (m_hasBaseline) {
        if (fresh.size() > MaxHaltsTold)
            tell(Kind::HaltedRun, tr("Runs halted"),
                 tr("More than %1 runs halted on their budgets: see Runs.").arg(MaxHaltsTold));
        else
            for (const QString &text : std::as_const(fresh))
                tell(Kind::HaltedRun, tr("Run halted"), text);
        const QString floor = confirmationFloor();
        if (floor.isEmpty() && confirmations > m_confirmations)
            tell(Kind::Confirmation, tr("Confirmation needed"),
                 tr("%n new operation(s) wait for a person to confirm what happened.", nullptr,
                    static_cast<int>(confirmations - m_confirmations)));
        if (!floor.isEmpty()) {
            QStringList above;
            for (const Operation &op : s.valuableWaiting)
                if (!m_valuable.contains(identity(op)) &&
                    needsFourEyes(*op.value, floor.toStdString(), s.referenceRates))
                    above << tr("%1 of %2 (namespace %3)")
                                 .arg(displayText(op.key),
                                      QString::fromStdString(formatAmount(*op.value)).trimmed(),
                                      displayText(op.ns));
            if (above.size() > MaxHaltsTold)
                tell(Kind::Confirmation, tr("Confirmations needed"),
                     tr("%1 new operations above %2 wait for a person: see Confirmations.")
                         .arg(above.size())
                         .arg(floor));
            else
                for (const QString &text : std::as_const(above))
                    tell(Kind::Confirmation, tr("Confirmation needed above %1").arg(floor), text);
        }
        if (s.dlqDepth > m_deadLetters)
            tell(Kind::DeadLetter, tr("Dead letters"),
                 tr("%n new message(s) in the dead-letter queues.", nullptr,
                    static_cast<int>(s.dlqDepth - m_deadLetters)));
    }
    m_hasBaseline = true;
    m_halted = halted;
    m_confirmations = confirmations;
    m_valuable.clear();
    for (const Operation &op : s.valuableWaiting)
        m_valuable.insert(identity(op));
    m_deadLetters = s.dlqDepth;
    if (m_tray)
        m_tray->setToolTip(tr("Idempo: %1 halted run(s), %2 confirmation(s), %3 dead letter(s)")
                               .arg(s.haltedRuns.size())
                               .arg(confirmations)
                               .arg(s.dlqDepth));
}

void Notifier::tell(Kind kind, const QString &title, const QString &text)
{
    if (!isEnabled(kind))
        return;
    if (m_tray)
        m_tray->showMessage(title, text, QSystemTrayIcon::Warning);
    Q_EMIT notified(kind, title, text);
}

} // namespace idempo
