// SPDX-License-Identifier: Apache-2.0
#include "clirunner.h"

#include <QJsonDocument>
#include <QProcess>

CliRunner::CliRunner() = default;

bool CliRunner::useNewLedger(const QString &name)
{
    if (!m_dir.isValid())
        return false;
    m_ledger = QStringLiteral("sqlite:") + m_dir.filePath(name + QStringLiteral(".db"));
    return run({QStringLiteral("init")}).exitCode == 0;
}

CliRun CliRunner::run(const QStringList &args, const QByteArray &input) const
{
    return exec(QStringList{QStringLiteral("--ledger"), m_ledger} + args, input);
}

QString CliRunner::program()
{
    return QStringLiteral(IDEMPO_CLI_PATH);
}

CliRun CliRunner::runBare(const QStringList &args) const
{
    return exec(args, {});
}

CliRun CliRunner::exec(const QStringList &args, const QByteArray &input) const
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(QStringLiteral("IDEMPO_LEDGER"));
    env.remove(QStringLiteral("IDEMPO_NAMESPACE"));
    env.remove(QStringLiteral("IDEMPO_LOG_LEVEL"));
    env.insert(QStringLiteral("HOME"), m_dir.path());
    env.insert(QStringLiteral("XDG_DATA_HOME"), m_dir.filePath(QStringLiteral("xdg")));
    env.insert(m_env);
    p.setProcessEnvironment(env);
    p.start(program(), args);
    if (!input.isNull()) {
        p.write(input);
        p.closeWriteChannel();
    }
    CliRun r;
    if (!p.waitForFinished(60'000)) {
        qWarning("idempo did not finish");
        p.kill();
        p.waitForFinished();
    }
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    r.json = QJsonDocument::fromJson(r.out).object();
    return r;
}
