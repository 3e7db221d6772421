// SPDX-License-Identifier: Apache-2.0
// `idempo metrics` through the real binary: its Prometheus text parses with prometheus_client's
// own parsers (tests/app/metrics/), every figure in it is the one `metrics --json` gives on the
// same ledger, and `metrics serve` answers /metrics with the same, on loopback only unless told.
// On a fresh embedded ledger, and on PostgreSQL when run under tests/pg/with-postgres.sh.
#include <csignal>

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QRegularExpression>
#include <QtTest>

#include "clirunner.h"

namespace {

QString S(const char *utf8)
{
    return QString::fromUtf8(utf8);
}

/// Parses an exposition (`text`, or what `url` serves) with prometheus_client in the pinned
/// virtual environment: {"samples": [...], "families": {...}} and, for a URL, "status".
QJsonObject parse(const QString &format, const QByteArray &text, const QString &url = {})
{
    QProcess p;
    QStringList args{format};
    if (!url.isEmpty())
        args << url;
    p.start(S(IDEMPO_METRICS_TESTS "/parse.sh"), args);
    p.write(text);
    p.closeWriteChannel();
    if (!p.waitForFinished(600'000) || p.exitCode() != 0)
        qWarning("parser failed: %s", p.readAllStandardError().constData());
    return QJsonDocument::fromJson(p.readAllStandardOutput()).object();
}

/// The figure `metrics --json` gives for one sample, and whether it is an age (which grows
/// between two reads by at most the time between them).
struct Expected
{
    QJsonValue value;
    bool age = false;
};

Expected expectedFor(const QJsonObject &sample, const QJsonObject &figures,
                     const QJsonObject &audit)
{
    const QString name = sample.value(S("name")).toString();
    const QJsonObject labels = sample.value(S("labels")).toObject();
    const QJsonObject toFinal = figures.value(S("time_to_final")).toObject();
    if (name == S("idempo_operations"))
        return {figures.value(S("operations_by_state"))
                    .toObject()
                    .value(labels.value(S("state")).toString())};
    if (name == S("idempo_suppressions_total"))
        return {figures.value(S("suppressions_by_outcome"))
                    .toObject()
                    .value(labels.value(S("outcome")).toString())};
    if (name == S("idempo_time_to_final_seconds")) {
        const QString q = labels.value(S("quantile")).toString();
        return {toFinal.value(q == S("0.5")    ? S("p50_s")
                              : q == S("0.95") ? S("p95_s")
                                               : S("max_s"))};
    }
    if (name == S("idempo_audit_chain_ok"))
        return {audit.value(S("ok")).toBool() ? 1 : 0};
    if (name == S("idempo_audit_records"))
        return {audit.value(S("records"))};
    if (name == S("idempo_finals_last_hour"))
        return {toFinal.value(S("finals"))};
    const QHash<QString, const char *> plain{
        {S("idempo_suppressions_last_hour"), "suppressions_last_hour"},
        {S("idempo_suppression_rate_per_second"), "suppression_rate_per_s"},
        {S("idempo_leases_live"), "leases_live"},
        {S("idempo_leases_lapsed"), "leases_lapsed"},
        {S("idempo_retries_waiting"), "retries_waiting"},
        {S("idempo_runs_halted"), "runs_halted"}};
    if (plain.contains(name))
        return {figures.value(S(plain.value(name)))};
    const QHash<QString, const char *> ages{
        {S("idempo_oldest_unknown_outcome_age_seconds"), "oldest_unknown_outcome_age_s"},
        {S("idempo_oldest_confirmation_age_seconds"), "oldest_confirmation_age_s"},
        {S("idempo_oldest_retry_age_seconds"), "oldest_retry_age_s"}};
    if (ages.contains(name))
        return {figures.value(S(ages.value(name))), true};
    return {};
}

} // namespace

class TestCliMetrics final : public QObject
{
    Q_OBJECT

private:
    CliRunner m_cli;
    QString m_secret; ///< a password in the ledger's address, which no output may show

    /// Compares every sample of `parsed` with `json` (one namespace's figures, or
    /// {"namespaces": [...]}), read `slackS` seconds or less apart; returns the samples compared.
    int compare(const QJsonObject &parsed, const QJsonObject &json, double slackS)
    {
        QHash<QString, QJsonObject> byNamespace;
        if (json.contains(S("namespaces")))
            for (const QJsonValue &f : json.value(S("namespaces")).toArray())
                byNamespace.insert(f.toObject().value(S("namespace")).toString(), f.toObject());
        else
            byNamespace.insert(json.value(S("namespace")).toString(), json);
        const QString ledger = json.value(S("ledger")).toString();
        const QJsonObject audit = json.value(S("audit_chain")).toObject();
        int compared = 0;
        for (const QJsonValue &v : parsed.value(S("samples")).toArray()) {
            const QJsonObject sample = v.toObject();
            const QJsonObject labels = sample.value(S("labels")).toObject();
            const QString what =
                QString::fromUtf8(QJsonDocument(sample).toJson(QJsonDocument::Compact));
            if (!m_secret.isEmpty() && what.contains(m_secret))
                qFatal("a password in a sample: %s", qPrintable(what));
            if (labels.value(S("ledger")).toString() != ledger)
                qFatal("ledger label: %s", qPrintable(what));
            // The audit chain is the whole ledger's; every other figure is a namespace's.
            const QString ns = labels.value(S("namespace")).toString();
            const bool ledgerWide =
                sample.value(S("name")).toString().startsWith(S("idempo_audit_"));
            if (labels.contains(S("namespace")) == ledgerWide ||
                (!ledgerWide && !byNamespace.contains(ns)))
                qFatal("namespace label: %s", qPrintable(what));
            const Expected expected = expectedFor(sample, byNamespace.value(ns), audit);
            if (!expected.value.isDouble())
                qFatal("no figure in --json for %s", qPrintable(what));
            const double got = sample.value(S("value")).toDouble();
            const double want = expected.value.toDouble();
            const bool ok = expected.age ? got >= want && got <= want + slackS : got == want;
            if (!ok)
                qFatal("%s: --json says %.17g", qPrintable(what), want);
            ++compared;
        }
        return compared;
    }

    CliRun json(const QStringList &args = {})
    {
        const CliRun r = m_cli.run(QStringList{S("--json"), S("metrics")} + args);
        if (r.exitCode != 0)
            qFatal("metrics --json: %s", r.err.constData());
        if (!m_secret.isEmpty() && r.out.contains(m_secret.toUtf8()))
            qFatal("a password in metrics --json");
        return r;
    }

    /// Starts `metrics serve ARGS…` and waits for its first line; the port it listens on, or 0.
    quint16 startServe(QProcess &p, const QStringList &args)
    {
        p.start(CliRunner::program(),
                QStringList{S("--ledger"), m_cli.ledgerUrl(), S("metrics"), S("serve")} + args);
        if (!p.waitForReadyRead(30'000))
            return 0;
        const QString line = QString::fromUtf8(p.readLine());
        const auto m =
            QRegularExpression(S("^serving http://127\\.0\\.0\\.1:(\\d+)/metrics ")).match(line);
        return m.hasMatch() ? static_cast<quint16>(m.captured(1).toUInt()) : 0;
    }

private Q_SLOTS:
    void initTestCase()
    {
        const QString postgres = qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL");
        if (postgres.isEmpty()) {
            QVERIFY(m_cli.useNewLedger(S("metrics")));
        } else {
            // The throwaway server trusts loopback: the password is never checked, only shown.
            m_secret = S("s3cret-pw");
            QString url = postgres;
            url.replace(S("://idempo@"), S("://idempo:") + m_secret + S("@"));
            QVERIFY(url.contains(m_secret));
            m_cli.useLedger(url);
            QCOMPARE(m_cli.run({S("init")}).exitCode, 0);
        }
        const auto ok = [this](const QStringList &args, int exitCode = 0) {
            const CliRun r = m_cli.run(args);
            if (r.exitCode != exitCode)
                qFatal("%s: exit %d: %s", qPrintable(args.join(u' ')), r.exitCode,
                       r.err.constData());
        };
        const auto claim = [&](const QString &key, QStringList more = {}) {
            ok(QStringList{S("claim"), key, S("--payload"), S("{\"n\":1}")} + more);
        };
        const auto token = [this](const QString &key) {
            return QString::number(m_cli.run({S("--json"), S("show"), key})
                                       .json.value(S("fencing_token"))
                                       .toInteger());
        };
        for (const char *key : {"pay:1", "pay:2"}) {
            claim(S(key));
            ok({S("complete"), S(key), S("--token"), token(S(key))});
        }
        claim(S("mail:1"));
        ok({S("fail"), S("mail:1"), S("--token"), token(S("mail:1")), S("--class"),
            S("validation")});
        claim(S("book:1"));
        ok({S("fail"), S("book:1"), S("--token"), token(S("book:1")), S("--class"),
            S("unknown_outcome")});
        claim(S("kyc:1"), {S("--max-attempts"), S("1")});
        ok({S("fail"), S("kyc:1"), S("--token"), token(S("kyc:1")), S("--class"), S("transient")});
        for (const char *step : {"run-7:a", "run-7:b", "run-7:c"}) {
            claim(S(step), {S("--run"), S("run-7")});
            ok({S("fail"), S(step), S("--token"), token(S(step)), S("--class"), S("transient")});
        }
        claim(S("lease:1"), {S("--lease"), S("0.001")});
        claim(S("lease:2"), {S("--lease"), S("600")});
        ok({S("claim"), S("pay:1"), S("--payload"), S("{\"n\":1}")});
        ok({S("claim"), S("pay:1"), S("--payload"), S("{\"n\":2}")}, 65);
        ok({S("--namespace"), S("other"), S("claim"), S("x:1"), S("--payload"), S("{}")});
    }

    void openMetricsEqualsJson_data()
    {
        QTest::addColumn<QString>("format");
        QTest::addColumn<QStringList>("scope");
        QTest::addColumn<int>("samples");
        // 8 states, 2 suppression outcomes, 3 quantiles, 10 single figures, 2 audit figures.
        QTest::newRow("openmetrics") << S("openmetrics") << QStringList{} << 25;
        QTest::newRow("prometheus") << S("prometheus") << QStringList{} << 25;
        // "other": 8 states and 7 figures (no suppression, quantile or age has a sample).
        QTest::newRow("every namespace")
            << S("openmetrics") << QStringList{S("--all-namespaces")} << 25 + 8 + 7;
    }

    void openMetricsEqualsJson()
    {
        QFETCH(QString, format);
        QFETCH(QStringList, scope);
        QFETCH(int, samples);
        QElapsedTimer between;
        between.start();
        const CliRun figures = json(scope);
        const CliRun text = m_cli.run(QStringList{S("metrics"), S("--format"), format} + scope);
        const double slackS = static_cast<double>(between.elapsed()) / 1000.0;
        QCOMPARE(text.exitCode, 0);
        QVERIFY(m_secret.isEmpty() || !text.out.contains(m_secret.toUtf8()));
        QCOMPARE(text.out.endsWith("# EOF\n"), format == S("openmetrics"));
        const QJsonObject parsed = parse(format, text.out);
        QVERIFY2(parsed.contains(S("samples")), "the parser refused the text");
        QCOMPARE(compare(parsed, figures.json, slackS), samples);
        QCOMPARE(parsed.value(S("families")).toObject().value(S("idempo_suppressions")).toString(),
                 S("counter"));
    }

    void figuresOfTheLedger()
    {
        const QJsonObject f = json().json;
        QCOMPARE(f.value(S("namespace")).toString(), S("default"));
        QCOMPARE(f.value(S("unknown_outcome")).toInt(), 1);
        QCOMPARE(f.value(S("confirmations_waiting")).toInt(), 1);
        QCOMPARE(f.value(S("retries_waiting")).toInt(), 3);
        QCOMPARE(f.value(S("leases_lapsed")).toInt(), 1);
        QCOMPARE(f.value(S("leases_live")).toInt(), 1);
        QCOMPARE(f.value(S("runs_halted")).toInt(), 1);
        QCOMPARE(f.value(S("suppressions_last_hour")).toInt(), 2);
        QCOMPARE(f.value(S("time_to_final")).toObject().value(S("finals")).toInt(), 3);
        QVERIFY(f.value(S("oldest_unknown_outcome_age_s")).toDouble() >=
                f.value(S("oldest_confirmation_age_s")).toDouble());
        QVERIFY(f.value(S("audit_chain")).toObject().value(S("ok")).toBool());
    }

    void serveAnswersWithTheSameFigures()
    {
        QProcess serve;
        const quint16 port = startServe(serve, {S("--listen"), S("127.0.0.1:0")});
        QVERIFY2(port != 0, serve.readAllStandardError().constData());
        const QString base = S("http://127.0.0.1:%1").arg(port);

        QElapsedTimer between;
        between.start();
        const CliRun figures = json();
        for (const QString &format : {S("openmetrics"), S("prometheus")}) {
            const QJsonObject parsed = parse(format, {}, base + S("/metrics"));
            QCOMPARE(parsed.value(S("status")).toInt(), 200);
            QVERIFY(parsed.value(S("content_type"))
                        .toString()
                        .startsWith(format == S("openmetrics") ? S("application/openmetrics-text")
                                                               : S("text/plain; version=0.0.4")));
            QCOMPARE(compare(parsed, figures.json, static_cast<double>(between.elapsed()) / 1000.0),
                     25);
        }
        QCOMPARE(parse(S("prometheus"), {}, base + S("/")).value(S("status")).toInt(), 404);
        QCOMPARE(parse(S("prometheus"), {}, base + S("/metricsx")).value(S("status")).toInt(), 404);

        QProcess second;
        second.start(CliRunner::program(),
                     {S("--ledger"), m_cli.ledgerUrl(), S("metrics"), S("serve"), S("--listen"),
                      S("127.0.0.1:%1").arg(port)});
        QVERIFY(second.waitForFinished(30'000));
        QCOMPARE(second.exitCode(), 69);
        const QByteArray why = second.readAllStandardError();
        const QByteArray expected = "cannot listen on 127.0.0.1:" + QByteArray::number(port);
        QVERIFY2(why.contains(expected), why.constData());

        serve.terminate(); // SIGTERM
        QVERIFY(serve.waitForFinished(30'000));
        QCOMPARE(serve.exitStatus(), QProcess::NormalExit);
        QCOMPARE(serve.exitCode(), 0);
    }

    void serveStaysOnLoopbackUnlessTold()
    {
        for (const QString &address : {S("0.0.0.0:0"), S("[::]:0"), S("192.0.2.1:9464")}) {
            const CliRun r =
                m_cli.run({S("--json"), S("metrics"), S("serve"), S("--listen"), address});
            QCOMPARE(r.exitCode, 64);
            QVERIFY2(r.json.value(S("message")).toString().contains(S("--allow-remote")),
                     r.err.constData());
        }
        QProcess serve;
        serve.start(CliRunner::program(),
                    {S("--ledger"), m_cli.ledgerUrl(), S("metrics"), S("serve"), S("--listen"),
                     S("0.0.0.0:0"), S("--allow-remote")});
        QVERIFY(serve.waitForReadyRead(30'000));
        QVERIFY(serve.readLine().startsWith("serving http://0.0.0.0:"));
        ::kill(static_cast<pid_t>(serve.processId()), SIGINT);
        QVERIFY(serve.waitForFinished(30'000));
        QCOMPARE(serve.exitCode(), 0);
    }

    void serveSaysWhereInJson()
    {
        QProcess serve;
        serve.start(CliRunner::program(),
                    {S("--json"), S("--ledger"), m_cli.ledgerUrl(), S("metrics"), S("serve"),
                     S("--listen"), S("127.0.0.1:0"), S("--all-namespaces")});
        QVERIFY(serve.waitForReadyRead(30'000));
        const QJsonObject ready = QJsonDocument::fromJson(serve.readLine()).object();
        QVERIFY(ready.value(S("url")).toString().startsWith(S("http://127.0.0.1:")));
        QVERIFY(ready.value(S("namespace")).isNull());
        serve.terminate();
        QVERIFY(serve.waitForFinished(30'000));
        QCOMPARE(serve.exitCode(), 0);
    }

    void usageMistakes_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("named");
        QTest::newRow("format") << QStringList{S("metrics"), S("--format"), S("xml")} << S("'xml'");
        QTest::newRow("json and format")
            << QStringList{S("metrics"), S("--format"), S("openmetrics")} << S("--json");
        QTest::newRow("listen without serve")
            << QStringList{S("metrics"), S("--listen"), S("127.0.0.1:1")} << S("--listen");
        QTest::newRow("listen") << QStringList{S("metrics"), S("serve"), S("--listen"),
                                               S("nowhere")}
                                << S("'nowhere'");
        QTest::newRow("namespace and every namespace")
            << QStringList{S("--namespace"), S("a"), S("metrics"), S("--all-namespaces")}
            << S("--all-namespaces");
    }

    void usageMistakes()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, named);
        const CliRun r = m_cli.run(QStringList{S("--json")} + args);
        QCOMPARE(r.exitCode, 64);
        QVERIFY2(r.json.value(S("message")).toString().contains(named), r.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestCliMetrics)
#include "tst_cli_metrics.moc"
