// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QDialog>

class QLabel;
class QLineEdit;
class QListWidget;

namespace idempo {

/// Picks the ledger to open from saved profiles (the embedded ledger first) or a new address:
/// `sqlite:PATH`, a `postgresql://` URI or `service=NAME`. Refuses an address that holds a
/// secret by libpq's parse (ConnectionProfiles::refusal) and saves only non-secret fields.
class ConnectionDialog final : public QDialog
{
    Q_OBJECT
public:
    explicit ConnectionDialog(const QString &currentUrl, QWidget *parent = nullptr);

    QString url() const;
    /// Shows why the last attempt failed and what to check, above the list.
    void setError(const QString &message, const QString &hint);

    void accept() override;

private:
    void saveProfiles();

    QListWidget *m_profiles;
    QLineEdit *m_name;
    QLineEdit *m_url;
    QLabel *m_error;
};

} // namespace idempo
