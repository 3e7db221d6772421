// SPDX-License-Identifier: Apache-2.0
#include "clitestcase.h"

#include <QJsonDocument>
#include <QtTest>

QProcess *CliTestCase::start(const QStringList &args, const QByteArray &input)
{
    auto *p = new QProcess(this);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(QStringLiteral("IDEMPO_LEDGER"));
    env.remove(QStringLiteral("IDEMPO_NAMESPACE"));
    env.insert(QStringLiteral("HOME"),
               m_dir.path()); // the default ledger must never be the user's
    env.insert(QStringLiteral("XDG_DATA_HOME"), m_dir.filePath(QStringLiteral("xdg")));
    p->setProcessEnvironment(env);
    p->start(QStringLiteral(IDEMPO_CLI_PATH), args);
    if (!input.isNull()) {
        p->write(input);
        p->closeWriteChannel();
    }
    return p;
}

Run CliTestCase::finish(QProcess *p)
{
    Run r;
    if (!p->waitForFinished(30'000))
        qWarning("idempo did not finish");
    r.exitCode = p->exitStatus() == QProcess::NormalExit ? p->exitCode() : -1;
    r.out = p->readAllStandardOutput();
    r.err = p->readAllStandardError();
    r.json = QJsonDocument::fromJson(r.out).object();
    p->deleteLater();
    return r;
}

Run CliTestCase::idempo(QStringList args, const QByteArray &input)
{
    args.prepend(m_ledger);
    args.prepend(QStringLiteral("--ledger"));
    return finish(start(args, input));
}

void CliTestCase::init()
{
    QVERIFY(m_dir.isValid());
    m_ledger = QStringLiteral("sqlite:") +
               m_dir.filePath(
                   QStringLiteral("ledger-%1.db").arg(QLatin1String(QTest::currentTestFunction())));
    const Run init = idempo({QStringLiteral("init")});
    QCOMPARE(init.exitCode, 0);
}
