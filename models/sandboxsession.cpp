// SPDX-License-Identifier: Apache-2.0
#include "sandboxsession.h"

#include <chrono>

#include <QDateTime>
#include <QThread>

#include "clock.h"
#include "faultplan.h"
#include "sandboxrunner.h"
#include "scenario.h"

namespace idempo {

namespace {

/// Progress reaches the GUI at most this often: a round can take well under a millisecond.
constexpr auto ProgressEvery = std::chrono::milliseconds(50);

sandbox::SandboxOptions optionsFor(const SandboxRequest &request)
{
    sandbox::SandboxOptions o;
    o.scenarioLabel = request.scenario.toStdString();
    if (request.scenario == QLatin1String("all")) {
        for (const sandbox::Scenario &s : sandbox::Scenario::all())
            o.scenarios.push_back(&s);
    } else if (const sandbox::Scenario *s =
                   sandbox::Scenario::find(request.scenario.toStdString())) {
        o.scenarios.push_back(s);
    }
    o.runs = request.runs;
    o.workers = request.workers;
    o.faults = sandbox::FaultPlan(request.seed);
    for (const QString &name : request.faults)
        if (const auto fault = sandbox::FaultPlan::parseName(name.toStdString()))
            o.faults.enable(*fault, sandbox::FaultPlan::defaultRate(*fault));
    o.ns = request.ns.toStdString();
    return o;
}

} // namespace

SandboxSession::SandboxSession(QObject *parent) : QObject(parent) {}

SandboxSession::~SandboxSession()
{
    if (!m_thread)
        return;
    cancel();
    m_thread->wait();
}

int SandboxSession::maxRuns()
{
    return sandbox::SandboxOptions::MaxRuns;
}

bool SandboxSession::supportsLedger(const QString &url)
{
    return url.startsWith(QLatin1String("sqlite:"));
}

QStringList SandboxSession::scenarioNames()
{
    QStringList names;
    for (const sandbox::Scenario &s : sandbox::Scenario::all())
        names << QString::fromStdString(s.name());
    return names;
}

QStringList SandboxSession::faultNames()
{
    QStringList names;
    for (int i = 0; i < sandbox::FaultCount; ++i)
        names << QString::fromUtf8(sandbox::FaultPlan::name(static_cast<sandbox::Fault>(i)));
    return names;
}

QString SandboxSession::freshNamespace()
{
    return QStringLiteral("sandbox-") +
           QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyyMMdd-HHmmss-zzz"));
}

bool SandboxSession::start(const SandboxRequest &request)
{
    if (m_thread)
        return false;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    sandbox::SandboxOptions options = optionsFor(request);
    options.cancelled = [cancel = m_cancel] { return cancel->load(); };
    options.progress = [this, last = std::chrono::steady_clock::time_point()](
                           const sandbox::SandboxProgress &p) mutable {
        const auto now = std::chrono::steady_clock::now();
        if (now - last < ProgressEvery && p.settled < p.runs)
            return;
        last = now;
        QMetaObject::invokeMethod(
            this, [this, p] { Q_EMIT progressed(p.settled, p.runs, p.deliveries, p.virtualMs); },
            Qt::QueuedConnection);
    };
    const QString url = request.ledgerUrl;
    m_thread = QThread::create([this, url, options = std::move(options)] {
        nlohmann::json report;
        sandbox::SandboxSummary summary;
        QString error;
        try {
            // The runner's clock starts at the wall clock and only it moves it (virtual time).
            auto clock = std::make_shared<ManualClock>(QDateTime::currentMSecsSinceEpoch());
            sandbox::SandboxRunner runner(
                sandbox::SandboxRunner::openLedger(url, clock, OpenMode::OpenExisting), clock,
                options);
            report = runner.run();
            summary = sandbox::SandboxSummary::read(report);
        } catch (const std::exception &e) {
            error = QString::fromStdString(e.what());
        }
        QMetaObject::invokeMethod(
            this,
            [this, report = std::move(report), summary = std::move(summary), error] {
                done();
                if (!error.isEmpty()) {
                    Q_EMIT failed(error);
                    return;
                }
                m_report = report;
                m_summary = summary;
                Q_EMIT finished();
            },
            Qt::QueuedConnection);
    });
    m_thread->setObjectName(QStringLiteral("idempo-sandbox"));
    m_thread->start();
    return true;
}

void SandboxSession::cancel()
{
    if (m_cancel)
        m_cancel->store(true);
}

void SandboxSession::done()
{
    m_thread->wait();
    delete m_thread;
    m_thread = nullptr;
}

} // namespace idempo
