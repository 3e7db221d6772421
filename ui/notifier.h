// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>

#include <QObject>
#include <QSet>
#include <QString>

class QSystemTrayIcon;

namespace idempo {

class OverviewModel;

/// Tells the person at the console what needs them as it happens: a run that halted on its
/// budget, new confirmations, new dead letters; each can be switched off (remembered in the
/// settings). Each Overview snapshot is compared with the one before it; the first snapshot of a
/// ledger is the baseline, so opening a ledger does not announce what was already there. A
/// desktop notification where the desktop has a tray (its tooltip counts what waits), and
/// notified() for the status bar either way.
class Notifier final : public QObject
{
    Q_OBJECT
public:
    enum class Kind
    {
        HaltedRun,
        Confirmation,
        DeadLetter,
    };
    Q_ENUM(Kind)

    explicit Notifier(OverviewModel *model, QObject *parent = nullptr);

    bool isEnabled(Kind kind) const;
    void setEnabled(Kind kind, bool on);
    /// Another ledger opened: its first snapshot is the new baseline.
    void resetBaseline();
    /// "halted runs", "new confirmations", "new dead letters", for the menu.
    static QString kindText(Kind kind);
    /// Tell only of new confirmations whose value is above `amount` (major units; in the
    /// reference currency when the ledger has reference rates, and then a value in a currency
    /// without a rate counts as above); empty tells of every new confirmation. Remembered.
    void setConfirmationFloor(const QString &amount);
    QString confirmationFloor() const;

Q_SIGNALS:
    void notified(idempo::Notifier::Kind kind, const QString &title, const QString &text);

private:
    void compare();
    void tell(Kind kind, const QString &title, const QString &text);

    OverviewModel *m_model;
    QSystemTrayIcon *m_tray = nullptr;
    bool m_hasBaseline = false;
    QSet<QString> m_halted; ///< (namespace, run id) identities halted in the last snapshot
    std::int64_t m_confirmations = 0;
    QSet<QString> m_valuable; ///< (namespace, key) of the valuable waiting operations last seen
    std::int64_t m_deadLetters = 0;
};

} // namespace idempo
