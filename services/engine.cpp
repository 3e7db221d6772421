// SPDX-License-Identifier: Apache-2.0
#include "engine.h"

#include "canonicaljson.h"
#include "error.h"
#include "operationkey.h"

#include <spdlog/spdlog.h>

#include <QCoreApplication>
#include <QSysInfo>

namespace idempo {
namespace {

void validateIdentity(const std::string &ns, const std::string &key)
{
    validateNamespace(ns);
    validateOperationKey(key);
}

void checkLease(std::int64_t leaseMs)
{
    if (leaseMs <= 0 || leaseMs > 24 * 3600'000)
        throw Error(ErrorCode::InvalidArgument, "lease must be between 1 ms and 24 h, not " + std::to_string(leaseMs) + " ms");
}

/// A write by the lease holder: applies only while the operation is dispatching under `token`.
TransitionRequest workerWrite(const std::string &ns, const std::string &key, std::int64_t token, OperationState to)
{
    validateIdentity(ns, key);
    TransitionRequest request;
    request.ns = ns;
    request.key = key;
    request.from = OperationState::Dispatching;
    request.fencingToken = token;
    request.to = to;
    request.actor = defaultOwner();
    return request;
}

} // namespace

std::string defaultOwner()
{
    return QSysInfo::machineHostName().toStdString() + ":" + std::to_string(QCoreApplication::applicationPid());
}

Engine::Engine(std::shared_ptr<LedgerStore> store, Settings settings, RetryPolicy policy)
    : m_store(std::move(store)), m_settings(settings), m_policy(std::move(policy))
{
}

Engine::Engine(std::shared_ptr<LedgerStore> store) : Engine(std::move(store), Settings{}, RetryPolicy{}) {}

nlohmann::json Engine::parse(const std::string &json, const char *what) const
{
    if (json.size() > m_settings.maxPayloadBytes) {
        throw Error(ErrorCode::PayloadTooLarge, std::string(what) + " is " + std::to_string(json.size())
                                                    + " bytes; the limit is "
                                                    + std::to_string(m_settings.maxPayloadBytes) + " bytes");
    }
    try {
        return parseStrictJson(json);
    } catch (const Error &e) {
        throw Error(e.code(), std::string(what) + ": " + e.what());
    }
}

std::string Engine::canonicalise(const std::string &json, const char *what) const
{
    return canonicalJson(parse(json, what));
}

ClaimResult Engine::claim(const ClaimInput &input)
{
    validateIdentity(input.ns, input.key);
    ClaimRequest request;
    request.ns = input.ns;
    request.key = input.key;
    request.runId = input.runId;
    request.stepId = input.stepId;
    request.target = input.target;
    request.kind = input.kind;
    request.owner = input.owner.empty() ? defaultOwner() : input.owner;
    request.leaseMs = input.leaseMs.value_or(m_settings.leaseMs);
    checkLease(request.leaseMs);
    request.maxAttempts = input.maxAttempts.value_or(m_settings.maxAttempts);
    if (request.maxAttempts < 1 || request.maxAttempts > 100)
        throw Error(ErrorCode::InvalidArgument, "max attempts must be 1..100");
    request.requiresApproval = input.requiresApproval;
    request.fingerprintFields = input.fingerprintFields;

    const nlohmann::json payload = parse(input.payloadJson, "payload");
    request.payload = canonicalJson(payload);
    request.fingerprint = payloadFingerprint(payload, request.fingerprintFields);

    ClaimResult result = m_store->claim(request);
    spdlog::info("claim ns={} key={} run={} step={} owner={} outcome={} state={} token={} attempt={}",
                 request.ns, request.key, request.runId, request.stepId, request.owner,
                 claimOutcomeName(result.outcome), stateName(result.operation.state),
                 result.operation.fencingToken, result.operation.attempt);
    return result;
}

Operation Engine::complete(const std::string &ns, const std::string &key, std::int64_t fencingToken,
                           const std::string &resultJson, const std::string &receiptJson)
{
    TransitionRequest request = workerWrite(ns, key, fencingToken, OperationState::Succeeded);
    request.detail = "completed";
    if (!resultJson.empty())
        request.result = canonicalise(resultJson, "result");
    if (!receiptJson.empty())
        request.receipt = canonicalise(receiptJson, "receipt");
    request.retentionMs = m_settings.retentionMs;
    Operation op = m_store->transition(request);
    spdlog::info("complete ns={} key={} token={}", ns, key, fencingToken);
    return op;
}

Operation Engine::fail(const std::string &ns, const std::string &key, std::int64_t fencingToken,
                       ErrorClass errorClass, const std::string &detail, std::optional<std::int64_t> retryAfterMs)
{
    if (retryAfterMs && *retryAfterMs < 0)
        throw Error(ErrorCode::InvalidArgument, "retry-after must not be negative");
    const Operation current = get(ns, key);
    // A stale caller must learn that before the policy speaks about an attempt it does not own.
    TransitionRequest request = workerWrite(ns, key, fencingToken, OperationState::FailedRetryable);
    if (current.fencingToken == fencingToken && current.state == OperationState::Dispatching) {
        const FailureDecision decision =
            m_policy.decide(errorClass, current.kind, current.attempt, current.maxAttempts, retryAfterMs);
        request.to = decision.next;
        request.retryDelayMs = decision.retryDelayMs;
    }
    request.detail = "attempt " + std::to_string(current.attempt) + " failed: " + std::string(errorClassName(errorClass));
    request.errorClass = errorClass;
    request.errorDetail = detail;
    request.retentionMs = m_settings.retentionMs;
    Operation op = m_store->transition(request);
    spdlog::info("fail ns={} key={} token={} class={} next={}", ns, key, fencingToken,
                 errorClassName(errorClass), stateName(op.state));
    return op;
}

Operation Engine::heartbeat(const std::string &ns, const std::string &key, std::int64_t fencingToken,
                            std::optional<std::int64_t> leaseMs)
{
    TransitionRequest request = workerWrite(ns, key, fencingToken, OperationState::Dispatching);
    request.leaseMs = leaseMs.value_or(m_settings.leaseMs);
    checkLease(*request.leaseMs);
    request.detail = "heartbeat";
    return m_store->transition(request);
}

Operation Engine::get(const std::string &ns, const std::string &key)
{
    validateIdentity(ns, key);
    auto op = m_store->find(ns, key);
    if (!op)
        throw Error(ErrorCode::NotFound, "no operation '" + key + "' in namespace '" + ns + "'");
    return *op;
}

} // namespace idempo
