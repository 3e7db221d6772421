// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QFrame>

class QLabel;
class QPushButton;

namespace idempo {

/// What the Overview shows on a ledger without a single operation, instead of six zeros and
/// empty charts: that it is empty and what to do next: run a sandbox scenario (embedded ledger)
/// or open a PostgreSQL ledger. Its buttons and the lists' guidance() emit the same links.
class FirstStepsPanel final : public QFrame
{
    Q_OBJECT
public:
    /// Goes to the Sandbox tab.
    static constexpr char SandboxLink[] = "idempo:sandbox";
    /// Opens the ledger picker.
    static constexpr char ConnectLink[] = "idempo:connect";

    explicit FirstStepsPanel(QWidget *parent = nullptr);

    /// Words the panel for the open ledger: `embedded` (the sandbox can run on it) and its
    /// address as shown (never a password).
    void setLedger(bool embedded, const QString &address);
    /// The one line a list adds to its empty message on an empty ledger, with the same links.
    static QString guidance(bool embedded);

    QPushButton *sandboxButton() const { return m_sandbox; }
    QPushButton *connectButton() const { return m_connect; }

Q_SIGNALS:
    void linkActivated(const QString &link);

private:
    QLabel *m_title;
    QLabel *m_body;
    QPushButton *m_sandbox;
    QPushButton *m_connect;
};

} // namespace idempo
