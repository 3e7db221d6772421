// SPDX-License-Identifier: Apache-2.0
// The console shows stored free text by the CLI's rule (textescape.h): the audit table, its CSV
// and JSON exports, and displayText / prettyJson for every other view. The audit table pages a
// long log from the ledger, filtered there, never holding all of it.
#include <QAbstractItemModelTester>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QtTest>

#include "audittablemodel.h"
#include "consolefixture.h"
#include "displayformat.h"
#include "guardsettingcommand.h"
#include "ledgerconnection.h"

using namespace idempo;

namespace {

/// ESC [ 2 J, U+202E RIGHT-TO-LEFT OVERRIDE, a line break.
const std::string kReason = "ok\x1b[2J\xe2\x80\xae"
                            "exe\nforged";
const QString kReasonShown = QStringLiteral(R"(ok\x1b[2J\u202eexe\nforged)");

AuditRecord record()
{
    AuditRecord r;
    r.seq = 1;
    r.atMs = 1'700'000'000'000;
    r.entry = {"ops\x1b[31m",
               "approver",
               "reject",
               "default/run-1:refund",
               kReason,
               "{\"state\":\"confirmation_required\"}",
               "{\"state\":\"failed_terminal\",\"note\":\"a\xe2\x80\xae"
               "b\"}",
               "ap-1",
               "{\"decision\":\"reject\"}"};
    r.prevHash = std::string(64, '0');
    r.hash = std::string(64, 'f');
    return r;
}

} // namespace

class TestAuditTableModel final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void cellsShowFreeTextEscaped()
    {
        const AuditRecord r = record();
        QCOMPARE(AuditTableModel::cell(r, AuditTableModel::Reason, Qt::DisplayRole).toString(),
                 kReasonShown);
        QCOMPARE(AuditTableModel::cell(r, AuditTableModel::Who, Qt::DisplayRole).toString(),
                 QStringLiteral(R"(ops\x1b[31m)"));
        // Click-through reads the target as stored.
        QCOMPARE(AuditTableModel::cell(r, 0, AuditTableModel::TargetRole).toString(),
                 QStringLiteral("default/run-1:refund"));
    }

    void csvEscapesAndJsonIsExact()
    {
        const QString csv = AuditTableModel::csv({record()});
        QVERIFY2(!csv.contains(QChar(0x1b)) && !csv.contains(QChar(0x202e)), qPrintable(csv));
        QCOMPARE(csv.count(QLatin1Char('\n')), 2); // the header and one record
        QVERIFY2(csv.contains(QLatin1Char(',') + kReasonShown + QLatin1Char(',')), qPrintable(csv));
        QVERIFY2(csv.contains(QStringLiteral(
                     "\"{\"\"state\"\":\"\"failed_terminal\"\",\"\"note\"\":\"\"a\\u202eb\"\"}\"")),
                 qPrintable(csv));

        const QString json = AuditTableModel::json({record()});
        QVERIFY2(!json.contains(QChar(0x1b)) && !json.contains(QChar(0x202e)), qPrintable(json));
        const QJsonObject exported =
            QJsonDocument::fromJson(json.toUtf8()).array().at(0).toObject();
        QCOMPARE(exported.value(QStringLiteral("reason")).toString(),
                 QString::fromStdString(kReason));
        QCOMPARE(exported.value(QStringLiteral("after"))
                     .toObject()
                     .value(QStringLiteral("note"))
                     .toString(),
                 QStringLiteral("a\u202eb"));
    }

    /// 600 records, pages of 50: the model holds one page until asked for more, newest first,
    /// and a filter is answered by the ledger (the matches of a page are all matches).
    void pagesTheLogWithoutLoadingIt()
    {
        test::ConsoleFixture f;
        LedgerStore &store = f.store();
        for (int i = 0; i < 600; ++i)
            GuardSettingCommand(store, store.actor(), "four_eyes_above",
                                i % 3 == 0 ? std::string()
                                           : QString::number(1000 + i).toStdString(),
                                "review " + std::to_string(i))
                .execute();
        LedgerConnection c;
        QSignalSpy opened(&c, &LedgerConnection::opened);
        c.open(f.url());
        QVERIFY(opened.wait());
        AuditTableModel m(&c);
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        m.setPageSize(50);
        QSignalSpy pages(&m, &AuditTableModel::pageLoaded);
        m.setFilter({});
        QVERIFY(pages.wait());
        QCOMPARE(m.rowCount(), 50);
        QCOMPARE(m.recordAt(0).seq, std::int64_t{600});
        QCOMPARE(m.recordAt(49).seq, std::int64_t{551});
        QVERIFY(m.canFetchMore({}));
        m.fetchMore({});
        QVERIFY(pages.wait());
        QCOMPARE(m.rowCount(), 100);
        QCOMPARE(m.recordAt(99).seq, std::int64_t{501});

        AuditFilter reviews;
        reviews.targetPrefix = "setting:four";
        reviews.fromMs = 0;
        m.setFilter(reviews);
        QCOMPARE(m.rowCount(), 0); // dropped at once, answered by the worker
        QVERIFY(pages.wait());
        QCOMPARE(m.rowCount(), 50);
        QCOMPARE(m.recordAt(0).seq, std::int64_t{600});

        AuditFilter none;
        none.who = "nobody";
        m.setFilter(none);
        QVERIFY(pages.wait());
        QCOMPARE(m.rowCount(), 0);
        QVERIFY(!m.canFetchMore({}));
    }

    void displayFormatEscapes()
    {
        QCOMPARE(displayText("timeout\x1b]0;t\x07"), QStringLiteral(R"(timeout\x1b]0;t\x07)"));
        QCOMPARE(displayText("café ✓"), QStringLiteral("café ✓"));
        const QString pretty = prettyJson(R"({"a":"x)"
                                          "\xe2\x80\xae"
                                          R"(y"})");
        QVERIFY2(pretty.contains(QStringLiteral("\"x\\u202ey\"")) &&
                     pretty.contains(QLatin1Char('\n')),
                 qPrintable(pretty));
        QCOMPARE(prettyJson("not json \x1b[m"), QStringLiteral(R"(not json \x1b[m)"));
    }
};

QTEST_MAIN(TestAuditTableModel)
#include "tst_audittablemodel.moc"
