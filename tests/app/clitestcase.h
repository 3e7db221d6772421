// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

/// What one run of the real `idempo` binary did.
struct Run
{
    int exitCode = -1;
    QJsonObject json;
    QByteArray out;
    QByteArray err;
};

/// The base of the suites that drive the real `idempo` binary: a home and data folder of their
/// own, and before every test function a fresh embedded ledger named after it, initialised.
class CliTestCase : public QObject
{
    Q_OBJECT

protected:
    QTemporaryDir m_dir;
    QString m_ledger;

    /// Starts `idempo ARGS…` (no --ledger added), with `input` on stdin when not null.
    QProcess *start(const QStringList &args, const QByteArray &input = {});

    /// Waits for `p` to finish and collects what it did.
    Run finish(QProcess *p);

    /// `idempo --ledger LEDGER ARGS…`, run to its end.
    Run idempo(QStringList args, const QByteArray &input = {});

private Q_SLOTS:
    void init();
};
