// SPDX-License-Identifier: Apache-2.0
#include "engine.h"

#include <spdlog/spdlog.h>

#include <QCoreApplication>
#include <QSysInfo>

#include "canonicaljson.h"
#include "clock.h"
#include "error.h"
#include "operationkey.h"
#include "queuerules.h"

namespace idempo {
namespace {

/// A projection as an error message names it.
std::string projectionText(const std::vector<std::string> &pointers)
{
    return pointers.empty() ? std::string("the whole payload")
                            : "the projection " + nlohmann::json(pointers).dump();
}

void validateIdentity(const std::string &ns, const std::string &key)
{
    validateNamespace(ns);
    validateOperationKey(key);
}

void checkLease(std::int64_t leaseMs)
{
    if (leaseMs <= 0 || leaseMs > Engine::MaxLeaseMs)
        throw Error(ErrorCode::InvalidArgument,
                    "lease must be between 1 ms and 24 h, not " + std::to_string(leaseMs) + " ms");
}

constexpr std::size_t MaxDetailBytes = 4096;

/// Error details come from providers and must never fail the write that records them: what
/// no text column can hold (bytes that are not UTF-8, NUL) becomes U+FFFD, and the text is cut
/// to `maxBytes` on a character boundary. Everything else is kept as written; every output
/// shows controls and format characters escaped (textescape.h).
std::string plainText(const std::string &text, std::size_t maxBytes)
{
    QString clean = QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
    clean.replace(QChar(u'\0'), QChar::ReplacementCharacter);
    QByteArray utf8 = clean.toUtf8();
    if (static_cast<std::size_t>(utf8.size()) > maxBytes) {
        qsizetype cut = static_cast<qsizetype>(maxBytes);
        while (cut > 0 && (static_cast<unsigned char>(utf8[cut]) & 0xC0) == 0x80)
            --cut;
        utf8.truncate(cut);
    }
    return utf8.toStdString();
}

/// A write by the lease holder: applies only while the operation is dispatching under `token`.
TransitionRequest workerWrite(const std::string &ns, const std::string &key, std::int64_t token,
                              OperationState to)
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
    return QSysInfo::machineHostName().toStdString() + ":" +
           std::to_string(QCoreApplication::applicationPid());
}

Engine::Engine(std::shared_ptr<LedgerStore> store, Settings settings, RetryPolicy policy)
    : m_store(std::move(store)), m_settings(settings), m_policy(std::move(policy))
{
    if (m_settings.retentionMs < MinRetentionMs) {
        throw Error(ErrorCode::InvalidArgument,
                    "retention must be at least " + std::to_string(MinRetentionMs / 1000) +
                        " s: a shorter one lets a finished operation run again");
    }
    if (m_settings.retentionMs > MaxDurationMs) {
        throw Error(ErrorCode::InvalidArgument, "retention must be at most " +
                                                    std::to_string(MaxDurationMs / 1000) +
                                                    " s (ten years)");
    }
    checkLease(m_settings.leaseMs);
}

Engine::Engine(std::shared_ptr<LedgerStore> store)
    : Engine(std::move(store), Settings{}, RetryPolicy{})
{
}

nlohmann::json Engine::parse(const std::string &json, const char *what) const
{
    if (json.size() > m_settings.maxPayloadBytes) {
        throw Error(ErrorCode::PayloadTooLarge,
                    std::string(what) + " is " + std::to_string(json.size()) +
                        " bytes; the limit is " + std::to_string(m_settings.maxPayloadBytes) +
                        " bytes");
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
    validateIdentifier(input.runId, "run id");
    validateIdentifier(input.stepId, "step id");
    validateIdentifier(input.target, "target");
    validateIdentifier(input.owner, "lease owner");
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
    if (request.maxAttempts < 1 || request.maxAttempts > Engine::MaxAttempts)
        throw Error(ErrorCode::InvalidArgument, "max attempts must be 1.." +
                                                    std::to_string(Engine::MaxAttempts) + ", not " +
                                                    std::to_string(request.maxAttempts));
    request.requiresApproval = input.requiresApproval;
    if (input.value)
        validateAmount(*input.value);
    request.value = input.value;
    if (input.cost)
        validateAmount(*input.cost);
    if (input.tokens < 0 || input.tokens > MaxClaimTokens)
        throw Error(ErrorCode::InvalidArgument, "tokens must be 0.." +
                                                    std::to_string(MaxClaimTokens) + ", not " +
                                                    std::to_string(input.tokens));
    if ((input.cost || input.tokens > 0) && input.runId.empty())
        throw Error(ErrorCode::InvalidArgument,
                    "a cost or tokens count against a run's budget: name the run (run id)");
    request.cost = input.cost;
    request.tokens = input.tokens;
    request.fingerprintFields = projectionSet(input.fingerprintFields);

    const nlohmann::json payload = parse(input.payloadJson, "payload");
    request.payload = canonicalJson(payload);
    if (!request.fingerprintFields.empty() &&
        projectJson(payload, request.fingerprintFields).empty()) {
        // Fingerprinting nothing would make every payload match: a typo must not turn off
        // mismatch detection.
        throw Error(ErrorCode::InvalidArgument,
                    "none of the fingerprint fields selects anything in the payload");
    }
    request.fingerprint = payloadFingerprint(payload, request.fingerprintFields);

    ClaimResult result = m_store->claim(request);
    // The record's projection decides. A caller that names none is fingerprinted by it (a new
    // record in between may bring another); one that names another is refused as such.
    for (int attempt = 0; result.projectionDiffers; ++attempt) {
        const std::vector<std::string> &recorded = result.operation.fingerprintFields;
        if (!input.fingerprintFields.empty())
            throw Error(
                ErrorCode::ProjectionMismatch,
                "operation '" + request.key + "' fingerprints " + projectionText(recorded) +
                    "; this claim names " + projectionText(request.fingerprintFields) +
                    ": the projection differs (omit the fingerprint fields to use the record's)");
        if (attempt == 3)
            throw Error(ErrorCode::LedgerUnavailable,
                        "claim of '" + request.key +
                            "' kept meeting records of other projections; try again");
        request.fingerprintFields = projectionSet(recorded);
        request.fingerprint = payloadFingerprint(payload, request.fingerprintFields);
        result = m_store->claim(request);
    }
    spdlog::info(
        "claim ns={} key={} run={} step={} owner={} outcome={} state={} token={} attempt={}",
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
    try {
        Operation op = m_store->transition(request);
        spdlog::info("complete ns={} key={} token={}", ns, key, fencingToken);
        return op;
    } catch (const Error &e) {
        // A worker that lost the reply to its own complete retries it: the same token with the
        // same result and receipt is the same write, already applied.
        if (e.code() != ErrorCode::StaleLease)
            throw;
        const Operation current = get(ns, key);
        const bool repeat = current.state == OperationState::Succeeded &&
                            current.fencingToken == fencingToken &&
                            current.result == request.result.value_or(std::string()) &&
                            current.receipt == request.receipt.value_or(std::string());
        if (!repeat)
            throw;
        return current;
    }
}

Operation Engine::fail(const std::string &ns, const std::string &key, std::int64_t fencingToken,
                       ErrorClass errorClass, const std::string &detail,
                       std::optional<std::int64_t> retryAfterMs)
{
    if (retryAfterMs)
        checkDuration(*retryAfterMs, "retry-after");
    if (errorClass == ErrorClass::StaleLease)
        throw Error(ErrorCode::InvalidArgument,
                    "stale_lease is the engine's refusal, not a failure class to report");
    const Operation current = get(ns, key);
    // A stale caller must learn that before the policy speaks about an attempt it does not own.
    TransitionRequest request = workerWrite(ns, key, fencingToken, OperationState::FailedRetryable);
    if (current.fencingToken == fencingToken && current.state == OperationState::Dispatching) {
        const FailureDecision decision = m_policy.decide(errorClass, current.kind, current.attempt,
                                                         current.maxAttempts, retryAfterMs);
        request.to = decision.next;
        request.retryDelayMs = decision.retryDelayMs;
    }
    request.detail = "attempt " + std::to_string(current.attempt) +
                     " failed: " + std::string(errorClassName(errorClass));
    request.errorClass = errorClass;
    request.errorDetail = plainText(detail, MaxDetailBytes);
    request.retentionMs = m_settings.retentionMs;
    Operation op = m_store->transition(request);
    spdlog::info("fail ns={} key={} token={} class={} next={}", ns, key, fencingToken,
                 errorClassName(errorClass), stateName(op.state));
    return op;
}

Operation Engine::heartbeat(const std::string &ns, const std::string &key,
                            std::int64_t fencingToken, std::optional<std::int64_t> leaseMs)
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
