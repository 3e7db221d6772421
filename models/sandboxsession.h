// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include <nlohmann/json.hpp>

#include <QObject>
#include <QString>
#include <QStringList>

#include "sandboxreport.h"

class QThread;

namespace idempo {

/// What the sandbox panel asks for: one SandboxRunner run.
struct SandboxRequest
{
    QString ledgerUrl; ///< must be sqlite:PATH (SandboxRunner's only ledger)
    QString scenario;  ///< a scenario name, or "all" for every scenario round-robin
    int runs = 20;
    int workers = 2;
    QStringList faults; ///< fault names (FaultPlan::name), each at its default rate
    std::uint64_t seed = 1;
    QString ns; ///< a namespace that holds no operations yet
};

/// One sandbox run on a thread of its own with its own ledger connection (never the GUI
/// thread): progress as it goes, cancel between rounds, the report at the end. The console's
/// views see the rows arrive through their usual live updates.
class SandboxSession final : public QObject
{
    Q_OBJECT
public:
    explicit SandboxSession(QObject *parent = nullptr);
    /// Cancels a run still going and waits for it to stop.
    ~SandboxSession() override;

    /// Starts `request`; progressed() as rounds pass, then finished() or failed(). Returns false
    /// (and starts nothing) while a run is going.
    bool start(const SandboxRequest &request);
    /// Asks the run to stop after its current round; finished() follows with a report marked
    /// cancelled.
    void cancel();
    bool isRunning() const { return m_thread != nullptr; }
    /// The last run's report (SandboxRunner::run()'s JSON); null before the first.
    const nlohmann::json &report() const { return m_report; }
    /// What a view shows of it, read on the run's thread; empty before the first.
    const sandbox::SandboxSummary &summary() const { return m_summary; }

    /// Whether SandboxRunner can run on the ledger `url` names (the embedded one only).
    static bool supportsLedger(const QString &url);
    /// The scenario names, in SandboxRunner's order.
    static QStringList scenarioNames();
    /// Every fault name, in FaultPlan's order.
    static QStringList faultNames();
    /// A namespace for a new run: "sandbox-" and the UTC time to the millisecond.
    static QString freshNamespace();
    /// The most runs one request may ask for (SandboxOptions::MaxRuns).
    static int maxRuns();

Q_SIGNALS:
    /// Runs whose last operation settled out of `runs`; `virtualMs` of virtual time so far.
    void progressed(int settled, int runs, qint64 deliveries, qint64 virtualMs);
    /// The run ended (or was cancelled); report() and summary() hold its report.
    void finished();
    /// The run could not start or broke off, or its report could not be read: nothing to
    /// report.
    void failed(const QString &message);

private:
    void done();

    QThread *m_thread = nullptr;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    nlohmann::json m_report;
    sandbox::SandboxSummary m_summary;
};

} // namespace idempo
