// SPDX-License-Identifier: Apache-2.0
// `idempo list --where POINTER=VALUE` and `--customer C` through the real binary: what they
// find, with --json and in text, and a bad pointer refused with exit 64 naming it.
#include <QJsonArray>
#include <QtTest>

#include "clirunner.h"

namespace {

QString S(const char *utf8)
{
    return QString::fromUtf8(utf8);
}

QStringList keysOf(const CliRun &run)
{
    QStringList keys;
    for (const QJsonValue &op : run.json.value(S("operations")).toArray())
        keys << op.toObject().value(S("key")).toString();
    return keys;
}

} // namespace

class TestCliSearch final : public QObject
{
    Q_OBJECT

private:
    CliRunner m_cli;

private Q_SLOTS:
    void init()
    {
        QVERIFY(m_cli.useNewLedger(QString::fromLatin1(QTest::currentTestFunction())));
        for (const auto &[key, payload] :
             {std::pair{"k-1", R"({"customer":"cust-42","refund":{"order_id":"o-7"}})"},
              std::pair{"k-2", R"({"client_id":"cust-42","refund":{"order_id":"o-8"}})"},
              std::pair{"k-3", R"({"customer":"cust-43","refund":{"order_id":"o-7"}})"}})
            QCOMPARE(m_cli.run({S("claim"), S(key), S("--payload"), S(payload)}).exitCode, 0);
    }

    void findsByFieldAndCustomer()
    {
        const CliRun byField =
            m_cli.run({S("--json"), S("list"), S("--where"), S("/refund/order_id=o-7")});
        QCOMPARE(byField.exitCode, 0);
        QCOMPARE(keysOf(byField), (QStringList{S("k-1"), S("k-3")}));

        const CliRun byCustomer =
            m_cli.run({S("--json"), S("list"), S("--customer"), S("cust-42")});
        QCOMPARE(keysOf(byCustomer), (QStringList{S("k-1"), S("k-2")}));

        const CliRun both = m_cli.run({S("--json"), S("list"), S("--customer"), S("cust-42"),
                                       S("--where"), S("/refund/order_id=o-7")});
        QCOMPARE(keysOf(both), QStringList{S("k-1")});

        const CliRun text = m_cli.run({S("list"), S("--where"), S("/customer=cust-43")});
        QCOMPARE(text.exitCode, 0);
        QVERIFY2(text.out.contains("k-3") && !text.out.contains("k-1"), text.out.constData());
        const CliRun none = m_cli.run({S("list"), S("--where"), S("/customer=nobody")});
        QCOMPARE(none.exitCode, 0);
        QVERIFY(none.out.contains("no operations"));
    }

    void badPointerIsRefusedByName()
    {
        const CliRun bad =
            m_cli.run({S("--json"), S("list"), S("--where"), S("refund.order_id=o-7")});
        QCOMPARE(bad.exitCode, 64);
        QCOMPARE(bad.json.value(S("error")).toString(), S("invalid_argument"));
        QVERIFY2(bad.json.value(S("message"))
                     .toString()
                     .contains(S("'refund.order_id' is not a JSON Pointer")),
                 bad.out.constData());
        const CliRun tilde = m_cli.run({S("list"), S("--where"), S("/a~2=x")});
        QCOMPARE(tilde.exitCode, 64);
        QVERIFY2(tilde.err.contains("'/a~2'"), tilde.err.constData());
        const CliRun noValue = m_cli.run({S("list"), S("--where"), S("/customer")});
        QCOMPARE(noValue.exitCode, 64);
        QVERIFY2(noValue.err.contains("has no '='"), noValue.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestCliSearch)
#include "tst_cli_search.moc"
