// SPDX-License-Identifier: Apache-2.0
#include "simulatedprovider.h"

#include <utility>

#include "sandboxjournal.h"

namespace idempo::sandbox {

SimulatedProvider::SimulatedProvider(std::string name, ProviderCapabilities capabilities,
                                     bool performsEffects, std::int64_t confirmationDelayMs,
                                     std::int64_t retryAfterMs)
    : m_name(std::move(name)), m_capabilities(capabilities), m_performsEffects(performsEffects),
      m_confirmationDelayMs(confirmationDelayMs), m_retryAfterMs(retryAfterMs)
{
}

ProviderAnswer SimulatedProvider::call(const ProviderCall &call)
{
    ProviderAnswer answer;
    if (call.fault == Fault::Provider5xx) {
        answer.status = ProviderAnswer::Status::Failed;
        answer.errorClass = ErrorClass::Transient;
        answer.detail = m_name + ": 503 service unavailable";
        return answer;
    }
    if (call.fault == Fault::Provider429) {
        answer.status = ProviderAnswer::Status::Failed;
        answer.errorClass = ErrorClass::RateLimited;
        answer.retryAfterMs = m_retryAfterMs;
        answer.detail = m_name + ": 429 too many requests";
        return answer;
    }
    if (call.fault == Fault::ProviderRejection) {
        answer.status = ProviderAnswer::Status::Failed;
        answer.errorClass = call.rejection;
        answer.detail = m_name + ": refused (" + std::string(errorClassName(call.rejection)) + ")";
        return answer;
    }

    if (m_performsEffects && m_journal) {
        const bool keyed = m_capabilities.acceptsKey && !call.key.empty();
        Effect e;
        e.ns = call.ns;
        e.provider = m_name;
        e.operationKey = call.operationKey;
        e.receivedKey = keyed ? call.key : std::string();
        e.fencingToken = keyed ? call.fencingToken : 0;
        e.atMs = call.nowMs;
        e.confirmedAtMs = call.fault == Fault::DelayedConfirmation
                              ? call.nowMs + m_confirmationDelayMs
                              : call.nowMs;
        const Performed performed = m_journal->perform(e, m_capabilities.dedupeByKey);
        answer.effectId = performed.effect.effectId;
        answer.deduplicated = performed.deduplicated;
        std::lock_guard lock(m_mutex);
        ++(performed.deduplicated ? m_deduplicated : m_effects);
    } else if (m_performsEffects) {
        std::lock_guard lock(m_mutex);
        const bool keyed = m_capabilities.acceptsKey && !call.key.empty();
        const auto seen = keyed ? m_byKey.find(call.key) : m_byKey.end();
        if (m_capabilities.dedupeByKey && seen != m_byKey.end()) {
            answer.effectId = seen->second.effectId;
            answer.deduplicated = true;
            ++m_deduplicated;
        } else {
            // Effect ids number the effects of one business operation, so they do not depend
            // on which thread reached the provider first.
            const int n = ++m_effectsPerOperation[call.operationKey];
            Effect e;
            e.ns = call.ns;
            e.provider = m_name;
            e.operationKey = call.operationKey;
            e.receivedKey = keyed ? call.key : std::string();
            e.fencingToken = keyed ? call.fencingToken : 0;
            e.effectId = m_name + "/" + call.operationKey + "/" + std::to_string(n);
            e.atMs = call.nowMs;
            e.confirmedAtMs = call.fault == Fault::DelayedConfirmation
                                  ? call.nowMs + m_confirmationDelayMs
                                  : call.nowMs;
            if (keyed)
                m_byKey[call.key] = e;
            m_unsaved.push_back(e);
            ++m_effects;
            answer.effectId = e.effectId;
        }
    }
    if (call.fault == Fault::ProviderTimeout) {
        answer.status = ProviderAnswer::Status::NoAnswer;
        answer.detail = m_name + ": timed out after the provider committed";
    } else if (call.fault == Fault::DelayedConfirmation && m_performsEffects) {
        answer.status = ProviderAnswer::Status::Pending;
        answer.detail = m_name + ": accepted, confirmation pending";
    }
    return answer;
}

LookupAnswer SimulatedProvider::lookup(const std::string &key, std::int64_t nowMs)
{
    if (!m_capabilities.lookupByKey)
        return {LookupAnswer::Status::Unsupported, {}};
    if (m_journal) {
        const std::optional<Effect> found = m_journal->lookup(m_ns, m_name, key);
        if (!found)
            return {};
        if (found->confirmedAtMs > nowMs)
            return {LookupAnswer::Status::Pending, {}};
        return {LookupAnswer::Status::Found, found->effectId};
    }
    std::lock_guard lock(m_mutex);
    const auto found = m_byKey.find(key);
    if (found == m_byKey.end())
        return {};
    if (found->second.confirmedAtMs > nowMs)
        return {LookupAnswer::Status::Pending, {}};
    return {LookupAnswer::Status::Found, found->second.effectId};
}

std::vector<Effect> SimulatedProvider::takeNewEffects()
{
    std::lock_guard lock(m_mutex);
    return std::exchange(m_unsaved, {});
}

std::int64_t SimulatedProvider::effectCount()
{
    std::lock_guard lock(m_mutex);
    return m_effects;
}

std::int64_t SimulatedProvider::deduplicatedCount()
{
    std::lock_guard lock(m_mutex);
    return m_deduplicated;
}

} // namespace idempo::sandbox
