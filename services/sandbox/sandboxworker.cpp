// SPDX-License-Identifier: Apache-2.0
#include "sandboxworker.h"

#include <chrono>
#include <cstdlib>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "engineconsumer.h"
#include "error.h"
#include "ledgerstore.h"
#include "messagequeue.h"
#include "naiveconsumer.h"
#include "queueenvelope.h"
#include "sandboxjournal.h"

namespace idempo::sandbox {

SandboxWorker::SandboxWorker(std::shared_ptr<LedgerStore> store,
                             std::shared_ptr<MessageQueue> queue, WorkerOptions options,
                             std::function<void(const std::string &line)> emit)
    : m_options(std::move(options)), m_emit(std::move(emit))
{
    if (m_options.owner.empty())
        throw Error(ErrorCode::InvalidArgument, "a worker needs a lease owner name");
    m_journal = SandboxJournal::open(*store);
    m_journal->createTables();
    m_ctx = std::make_unique<SandboxContext>(
        store, std::move(queue), std::make_shared<SystemClock>(), m_options.faults, m_options.ns, 1,
        m_options.naive, m_options.timings, m_options.queue);
    // A worker announces readiness only when it can work: a missing queue fails here, before
    // "start".
    m_ctx->queue().metrics(m_options.queue);
    WorkerProcess process;
    process.owner = m_options.owner;
    process.index = m_options.index;
    process.journal = m_journal.get();
    process.crash = [this](Fault fault, const std::string &operationKey) {
        nlohmann::json line = status("crash");
        line["fault"] = FaultPlan::name(fault);
        line["operation"] = operationKey;
        m_emit(line.dump());
        // The crash point: nothing more happens in this process. The driver kills it; a stop
        // request ends it just as abruptly, with no ack and no record.
        for (;;) {
            if (m_stop && m_stop->load())
                std::_Exit(137);
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    };
    m_ctx->setWorkerProcess(std::move(process));
    for (auto &[name, provider] : m_ctx->providers())
        provider->setJournal(m_journal.get(), m_options.ns);
}

SandboxWorker::~SandboxWorker() = default;

nlohmann::json SandboxWorker::status(const char *event) const
{
    std::int64_t deduplicated = 0;
    for (const auto &[name, provider] : m_ctx->providers())
        deduplicated += provider->deduplicatedCount();
    const TimeSlot &slot = m_ctx->slots().front();
    const std::int64_t inHand = m_busy ? std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now() - m_busySince)
                                             .count()
                                       : 0;
    return {{"event", event},
            {"owner", m_options.owner},
            {"pid", static_cast<std::int64_t>(::getpid())},
            {"handled", m_handled},
            {"counters", m_ctx->counters().toJson()},
            {"provider_dedupe", deduplicated},
            {"engine_ns", slot.engineNs},
            {"queue_ns", slot.queueNs},
            {"busy_ns", slot.busyNs + inHand},
            {"stalled_ns", slot.stalledNs}};
}

bool SandboxWorker::waitForLedger(const Error &cause, const std::atomic<bool> &stop)
{
    const std::string ledger = m_ctx->store().describe();
    bool first = true;
    return retryThroughOutage(
        m_options.reconnect, ledger,
        [&] {
            // The first try is the call that failed: the wait starts from it.
            if (std::exchange(first, false))
                throw cause;
            m_ctx->queue().metrics(m_options.queue);
        },
        [&](const std::string &reason) {
            nlohmann::json line = status("ledger_lost");
            line["ledger"] = ledger;
            line["error"] = reason;
            line["reconnect_deadline_ms"] = m_options.reconnect.deadlineMs;
            m_emit(line.dump());
            spdlog::warn("worker {}: lost the ledger {} ({}); reconnecting for up to {} s",
                         m_options.owner, ledger, reason, m_options.reconnect.deadlineMs / 1000.0);
        },
        [&](std::int64_t afterMs) {
            nlohmann::json line = status("ledger_back");
            line["after_ms"] = afterMs;
            m_emit(line.dump());
            spdlog::warn("worker {}: the ledger {} answers again after {} s; carrying on",
                         m_options.owner, ledger, afterMs / 1000.0);
        },
        &stop);
}

nlohmann::json SandboxWorker::run(const std::atomic<bool> &stop)
{
    m_stop = &stop;
    m_emit(status("start").dump());
    for (;;) {
        try {
            consume(stop);
            break;
        } catch (const Error &e) {
            if (!isLedgerOutage(e.code()))
                throw;
            // The delivery in hand is abandoned (see the class comment): its message comes back.
            m_busy = false;
            if (!waitForLedger(e, stop))
                break;
        }
    }
    nlohmann::json line = status("exit");
    m_emit(line.dump());
    return line;
}

void SandboxWorker::consume(const std::atomic<bool> &stop)
{
    EngineConsumer engineConsumer(*m_ctx);
    NaiveConsumer naiveConsumer(*m_ctx);
    TimeSlot &slot = m_ctx->slot(0);
    auto idleSince = std::chrono::steady_clock::now();
    while (!stop.load() && (m_options.maxMessages == 0 || m_handled < m_options.maxMessages)) {
        const std::vector<QueueMessage> batch = timed(slot.queueNs, [&] {
            return m_ctx->queue().read(m_options.queue, m_options.timings.visibilityTimeoutMs, 1);
        });
        if (batch.empty()) {
            const auto idle = std::chrono::steady_clock::now() - idleSince;
            if (m_options.idleExitMs > 0 && idle >= std::chrono::milliseconds(m_options.idleExitMs))
                break;
            std::this_thread::sleep_for(std::chrono::milliseconds(m_options.pollMs));
            continue;
        }
        m_busySince = std::chrono::steady_clock::now();
        m_busy = true;
        const QueueMessage &message = batch.front();
        RunState *run = nullptr;
        try {
            run = &m_ctx->runFor(
                QueueEnvelope::fromJson(nlohmann::json::parse(message.message)).runId);
        } catch (const std::exception &e) {
            // Not a sandbox envelope: set aside in the archive rather than redelivered forever.
            spdlog::warn("worker {}: message {} is not a sandbox envelope ({}); archived",
                         m_options.owner, message.msgId, e.what());
            m_ctx->queue().archive(m_options.queue, message.msgId);
            m_busy = false;
            continue;
        }
        if (m_ctx->deliverable(*run, message, slot.queueNs)) {
            if (m_options.naive)
                naiveConsumer.deliver(0, *run, message);
            else
                engineConsumer.deliver(0, *run, message);
        }
        ++m_handled;
        slot.busyNs += std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - m_busySince)
                           .count();
        m_busy = false;
        idleSince = std::chrono::steady_clock::now();
    }
}

} // namespace idempo::sandbox
