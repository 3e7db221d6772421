// SPDX-License-Identifier: Apache-2.0
#include "journallookup.h"

#include <utility>

#include "ledgerstore.h"
#include "sandboxjournal.h"
#include "scenario.h"

namespace idempo {
namespace {

ProviderEvidence cannotKnow(std::string provider, const std::string &why)
{
    ProviderEvidence e;
    e.status = ProviderEvidence::Status::Unsupported;
    e.provider = std::move(provider);
    e.raw = {{"answer", "no lookup for this operation: " + why}};
    return e;
}

} // namespace

JournalLookup::JournalLookup(LedgerStore &store, std::unique_ptr<sandbox::SandboxJournal> journal)
    : m_store(store), m_journal(std::move(journal))
{
}

JournalLookup::~JournalLookup() = default;

ProviderEvidence JournalLookup::lookup(const Operation &op)
{
    const std::optional<sandbox::RunRecord> run =
        op.runId.empty() ? std::nullopt : m_journal->findRun(op.ns, op.runId);
    if (!run)
        return cannotKnow({}, "run '" + op.runId +
                                  "' is not a sandbox run, and no provider lookup is configured");
    if (run->naive)
        return cannotKnow({}, "run '" + op.runId + "' ran without the engine (naive mode)");
    const sandbox::Scenario *scenario = sandbox::Scenario::find(run->scenario);
    const int index = scenario ? scenario->stepIndex(op.stepId) : -1;
    if (index < 0 || op.key != op.runId + ":" + op.stepId)
        return cannotKnow({}, "'" + op.key + "' is not a step of sandbox run '" + op.runId + "' (" +
                                  run->scenario + ")");
    const sandbox::WorkflowStep &step = scenario->steps()[static_cast<std::size_t>(index)];
    if (step.kind == ToolKind::Read || !step.capabilities.lookupByKey)
        return cannotKnow(step.provider, step.provider + " cannot be asked by key");

    ProviderEvidence e;
    e.provider = step.provider;
    const std::optional<sandbox::Effect> effect = m_journal->lookup(op.ns, step.provider, op.key);
    if (!effect) {
        e.status = ProviderEvidence::Status::NotFound;
        e.raw = {{"effect", nullptr}};
        return e;
    }
    e.status = effect->confirmedAtMs <= m_store.nowMs() ? ProviderEvidence::Status::Found
                                                        : ProviderEvidence::Status::Pending;
    if (e.status == ProviderEvidence::Status::Found)
        e.reference = effect->effectId;
    e.raw = {{"effect",
              {{"effect_id", effect->effectId},
               {"at_ms", effect->atMs},
               {"confirmed_at_ms", effect->confirmedAtMs}}}};
    return e;
}

std::unique_ptr<ProviderLookup> openProviderLookup(LedgerStore &store)
{
    if (std::unique_ptr<sandbox::SandboxJournal> journal = store.sandboxJournal())
        return std::make_unique<JournalLookup>(store, std::move(journal));
    return std::make_unique<NoProviderLookup>();
}

} // namespace idempo
