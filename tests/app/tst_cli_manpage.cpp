// SPDX-License-Identifier: Apache-2.0
// idempo(1) as the build renders and installs it: the same document as `idempo --help`, every
// command synopsis and global option in it, valid roff.
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QtTest>

#include "clirunner.h"

namespace {

QString S(const char *utf8)
{
    return QString::fromUtf8(utf8);
}

/// The text roff would print, for the escapes the page uses: \fB \fI \fR, \-, \e, \&, \[uXXXX];
/// the text of .B lines kept, other request lines (starting with '.') dropped.
QStringList deroffedLines(const QString &page)
{
    static const QRegularExpression unicode(S(R"(\\\[u([0-9A-F]{4,6})\])"));
    QStringList lines;
    for (QString line : page.split(QLatin1Char('\n'))) {
        if (line.startsWith(S(".B ")))
            line = line.mid(3);
        else if (line.startsWith(QLatin1Char('.')))
            continue;
        line.replace(S("\\fB"), QString())
            .replace(S("\\fI"), QString())
            .replace(S("\\fR"), QString());
        line.replace(S("\\-"), S("-")).replace(S("\\&"), QString());
        for (auto m = unicode.globalMatch(line); m.hasNext();) {
            const auto match = m.next();
            const char32_t c = match.captured(1).toUInt(nullptr, 16);
            line.replace(match.captured(0), QString::fromUcs4(&c, 1));
        }
        line.replace(S("\\e"), S("\\"));
        lines << line.trimmed();
    }
    return lines;
}

/// The synopsis lines of `idempo --help`: in "Commands:", a line indented by two spaces starts
/// a synopsis; the lines after it, up to the summary (indented by six), continue it.
QStringList synopsisLines(const QString &help)
{
    QStringList synopses;
    const QStringList lines = help.split(QLatin1Char('\n'));
    const qsizetype start = lines.indexOf(S("Commands:"));
    bool inSynopsis = false;
    for (qsizetype i = start + 1; i < lines.size() && !lines.at(i).isEmpty(); ++i) {
        const QString &line = lines.at(i);
        const qsizetype indent = line.size() - line.trimmed().size();
        if (indent == 2) {
            inSynopsis = true;
        } else if (indent == 6) {
            inSynopsis = false;
        }
        if (inSynopsis)
            synopses << line.trimmed();
    }
    return synopses;
}

} // namespace

class TestCliManPage final : public QObject
{
    Q_OBJECT

private:
    CliRunner m_cli;
    QString m_page;

private Q_SLOTS:
    void initTestCase()
    {
        QFile file(QStringLiteral(IDEMPO_MAN_PAGE));
        QVERIFY2(file.open(QIODevice::ReadOnly), qPrintable(file.fileName()));
        m_page = QString::fromUtf8(file.readAll());
    }

    /// The installed page is what the binary renders now: built from its current --help text.
    void pageIsTheBinarysOwnRendering()
    {
        const CliRun r = m_cli.runBare({S("--help-man")});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(QString::fromUtf8(r.out), m_page);
        QVERIFY(m_page.startsWith(S(".\\\" ")));
        QVERIFY(m_page.contains(S("\n.TH IDEMPO 1 ")));
        for (const char *section : {"NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS",
                                    "ENVIRONMENT", "EXIT STATUS"})
            QVERIFY2(m_page.contains(S("\n.SH ") + S(section) + QLatin1Char('\n')), section);
    }

    void pageHasEveryCommandSynopsisAndOption()
    {
        const CliRun help = m_cli.runBare({S("--help")});
        QCOMPARE(help.exitCode, 0);
        const QString text = QString::fromUtf8(help.out);
        const QStringList synopses = synopsisLines(text);
        QVERIFY2(synopses.size() >= 20, qPrintable(synopses.join(QLatin1Char('\n'))));
        QVERIFY(synopses.contains(S("claim KEY --payload JSON|@FILE [options]")));
        QVERIFY(synopses.contains(
            S("[--naive] [--reconnect-deadline S]; sandbox reset"))); // a continuation line of
                                                                      // sandbox run
        const QStringList page = deroffedLines(m_page);
        for (const QString &synopsis : synopses)
            QVERIFY2(page.contains(synopsis), qPrintable(synopsis));
        // Every global option and every option of every command (`idempo COMMAND --help`),
        // with its value name.
        static const QRegularExpression option(S(R"(^  (--[a-z-]+(?: [A-Z|]+)?)$)"),
                                               QRegularExpression::MultilineOption);
        QStringList helps{text};
        static const QRegularExpression command(S(R"(^  ([a-z-]+))"),
                                                QRegularExpression::MultilineOption);
        const QString commands =
            text.section(S("Commands:"), 1).section(S("Global options:"), 0, 0);
        for (auto m = command.globalMatch(commands); m.hasNext();) {
            const CliRun r = m_cli.runBare({m.next().captured(1), S("--help")});
            QCOMPARE(r.exitCode, 0);
            helps << QString::fromUtf8(r.out);
        }
        int options = 0;
        for (const QString &h : helps) {
            for (auto m = option.globalMatch(h); m.hasNext(); ++options) {
                const QString o = m.next().captured(1);
                QVERIFY2(page.contains(o), qPrintable(o));
            }
        }
        QVERIFY2(options > 60, qPrintable(QString::number(options)));
        for (const char *name : {"IDEMPO_LEDGER", "IDEMPO_NAMESPACE", "IDEMPO_LOG_LEVEL", "0", "64",
                                 "65", "69", "70", "75"})
            QVERIFY2(page.contains(S(name)), name);
        QVERIFY(page.contains(S("--payload JSON")));
        QVERIFY(page.contains(S("--max-attempts N")));
    }

    /// groff, where it is installed, reads the page without a warning.
    void pageIsValidRoff()
    {
        const QString groff = QStandardPaths::findExecutable(S("groff"));
        if (groff.isEmpty())
            QSKIP("groff is not installed");
        QProcess p;
        p.start(groff,
                {S("-man"), S("-Tutf8"), S("-ww"), S("-z"), QStringLiteral(IDEMPO_MAN_PAGE)});
        QVERIFY(p.waitForFinished(30'000));
        QCOMPARE(p.exitCode(), 0);
        const QByteArray warnings = p.readAllStandardError();
        QVERIFY2(warnings.isEmpty(), warnings.constData());
    }
};

QTEST_GUILESS_MAIN(TestCliManPage)
#include "tst_cli_manpage.moc"
