// SPDX-License-Identifier: Apache-2.0
// The console shows stored free text by the CLI's rule (textescape.h): the audit table, its CSV
// and JSON exports, and displayText / prettyJson for every other view.
#include <QAbstractItemModelTester>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include "audittablemodel.h"
#include "displayformat.h"

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
    void cellsShowFreeTextEscaped()
    {
        AuditTableModel model;
        QAbstractItemModelTester tester(&model);
        model.setRecords({record()});
        QCOMPARE(model.index(0, AuditTableModel::Reason).data().toString(), kReasonShown);
        QCOMPARE(model.index(0, AuditTableModel::Who).data().toString(),
                 QStringLiteral(R"(ops\x1b[31m)"));
    }

    void csvEscapesAndJsonIsExact()
    {
        AuditTableModel model;
        model.setRecords({record()});
        const QString csv = model.csv();
        QVERIFY2(!csv.contains(QChar(0x1b)) && !csv.contains(QChar(0x202e)), qPrintable(csv));
        QCOMPARE(csv.count(QLatin1Char('\n')), 2); // the header and one record
        QVERIFY2(csv.contains(QLatin1Char(',') + kReasonShown + QLatin1Char(',')), qPrintable(csv));
        QVERIFY2(csv.contains(QStringLiteral(
                     "\"{\"\"state\"\":\"\"failed_terminal\"\",\"\"note\"\":\"\"a\\u202eb\"\"}\"")),
                 qPrintable(csv));

        const QString json = model.json();
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
