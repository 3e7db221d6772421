// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

/// What one run of the real `idempo` binary did.
struct CliRun
{
    int exitCode = -1; ///< -1 when it crashed or did not finish
    QJsonObject json;  ///< stdout parsed as one JSON object (empty when it is not one)
    QByteArray out;
    QByteArray err;
};

/// Runs the real `idempo` binary the way a user does, with a home, data folder and embedded
/// ledger of its own that are never the user's.
class CliRunner final
{
public:
    CliRunner();

    /// Switches to a fresh ledger file `name`.db and runs `idempo init` on it; true when it worked.
    bool useNewLedger(const QString &name);

    /// Switches to the ledger at `url` as it is (no init).
    void useLedger(const QString &url) { m_ledger = url; }

    /// `idempo --ledger LEDGER ARGS…`, with `input` on stdin when not null.
    CliRun run(const QStringList &args, const QByteArray &input = {}) const;
    /// The idempo binary under test.
    static QString program();

    /// `idempo ARGS…` without --ledger (help, version, man page).
    CliRun runBare(const QStringList &args) const;

    QString ledgerUrl() const { return m_ledger; }

    /// Sets `name` in the environment of every later run.
    void setEnv(const QString &name, const QString &value) { m_env.insert(name, value); }

    /// A path inside the runner's own folder.
    QString filePath(const QString &name) const { return m_dir.filePath(name); }

private:
    CliRun exec(const QStringList &args, const QByteArray &input) const;

    QTemporaryDir m_dir;
    QString m_ledger;
    QProcessEnvironment m_env;
};
