// SPDX-License-Identifier: Apache-2.0
// `idempo audit list` says what a guard setting was and became, through the real binary: on a
// fresh embedded ledger, and on PostgreSQL when run under tests/pg/with-postgres.sh.
#include <QJsonArray>
#include <QtTest>

#include "clirunner.h"

namespace {

QString S(const char *utf8)
{
    return QString::fromUtf8(utf8);
}

} // namespace

class TestCliAuditSetting final : public QObject
{
    Q_OBJECT

private:
    CliRunner m_cli;

private Q_SLOTS:
    void initTestCase()
    {
        const QString postgres = qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL");
        if (postgres.isEmpty()) {
            QVERIFY(m_cli.useNewLedger(S("settings")));
            return;
        }
        m_cli.useLedger(postgres);
        QCOMPARE(m_cli.run({S("init")}).exitCode, 0);
    }

    void settingRecordShowsBeforeAndAfter()
    {
        for (const QStringList &args :
             {QStringList{S("--above"), S("1000.00")}, QStringList{S("--above"), S("5000.00")},
              QStringList{S("--rates"), S("EUR USD=0.92")}, QStringList{S("--rates"), S("off")}}) {
            const CliRun set = m_cli.run(QStringList{S("four-eyes")} + args +
                                         QStringList{S("--reason"), S("policy")});
            QVERIFY2(set.exitCode == 0, set.err.constData());
        }
        const CliRun list = m_cli.run({S("audit"), S("list"), S("--action"), S("setting")});
        QCOMPARE(list.exitCode, 0);
        const QList<QByteArray> lines = list.out.trimmed().split('\n');
        QCOMPARE(lines.size(), 4);
        const QList<QByteArray> expected = {"setting:four_eyes_above  policy  four_eyes_above: "
                                            "(none) → 1000.00",
                                            "four_eyes_above: 1000.00 → 5000.00",
                                            "reference_rates: (none) → EUR USD=0.92",
                                            "reference_rates: EUR USD=0.92 → (none)"};
        for (int i = 0; i < 4; ++i)
            QVERIFY2(lines[i].endsWith(expected[i]), lines[i].constData());
        // JSON keeps the recorded snapshots as they are.
        const CliRun json =
            m_cli.run({S("--json"), S("audit"), S("list"), S("--action"), S("setting")});
        const QJsonObject second = json.json.value(S("records")).toArray().at(1).toObject();
        QCOMPARE(second.value(S("before")).toString(), S("1000.00"));
        QCOMPARE(second.value(S("after")).toString(), S("5000.00"));
    }
};

QTEST_GUILESS_MAIN(TestCliAuditSetting)
#include "tst_cli_auditsetting.moc"
