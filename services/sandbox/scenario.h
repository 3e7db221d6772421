// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "amount.h"
#include "faultplan.h"
#include "vocabulary.h"

namespace idempo::sandbox {

/// What a simulated provider does with the operation key it is given.
struct ProviderCapabilities
{
    bool acceptsKey = false;  ///< takes our operation key (and fencing token) with a call
    bool dedupeByKey = false; ///< a repeated key returns the original effect instead of a new one
    bool lookupByKey = false; ///< can answer "did you perform the effect for this key?"
};

/// One step of a workflow, as data.
struct WorkflowStep
{
    std::string stepId; ///< stable step id: part of the operation key
    ToolKind kind = ToolKind::Read;
    std::string provider; ///< the provider the step calls
    ProviderCapabilities capabilities;
    bool writeBoundary = false; ///< the run's first protected write
    bool callsModel = false;    ///< an LLM-like, nondeterministic decision
    std::string agent;          ///< the agent that performs the step (envelope target_agent)
};

/// A workflow with the providers it calls. Each step's input is the previous step's recorded
/// output (the ledger's result), so a retried run reuses recorded decisions.
class Scenario final
{
public:
    enum class Kind
    {
        KycOnboarding,
        PaymentRefund,
        TravelBooking,
        InvoiceEmail
    };

    /// Refunds above this amount, in cents, wait for approval.
    static constexpr std::int64_t RefundApprovalThresholdCents = 75'000;

    Kind kind() const { return m_kind; }
    const std::string &name() const { return m_name; }
    /// The short prefix of run ids ("kyc", "refund", "travel", "invoice").
    const std::string &runPrefix() const { return m_prefix; }
    const std::vector<WorkflowStep> &steps() const { return m_steps; }

    /// The step's position, or -1.
    int stepIndex(std::string_view stepId) const;

    /// The first step's input for run `runId`, drawn from `plan`'s seed.
    nlohmann::json firstPayload(const FaultPlan &plan, const std::string &runId) const;

    /// A read step's output for `payload`; `decision` is the model's answer for steps that
    /// call it ("approve" or "review"), ignored otherwise.
    nlohmann::json readOutput(const WorkflowStep &step, const nlohmann::json &payload,
                              const std::string &decision) const;

    /// True when the write must wait in awaiting_approval (a flagged client, a large refund).
    bool requiresApproval(const WorkflowStep &step, const nlohmann::json &payload) const;

    /// What a protected write moves (the refund's amount); empty for the other steps.
    std::optional<Amount> value(const WorkflowStep &step, const nlohmann::json &payload) const;

    /// The four scenarios, in a fixed order.
    static const std::vector<Scenario> &all();
    /// The scenario named `name`, or null.
    static const Scenario *find(std::string_view name);

private:
    Scenario(Kind kind, std::string name, std::string prefix, std::vector<WorkflowStep> steps);

    Kind m_kind;
    std::string m_name;
    std::string m_prefix;
    std::vector<WorkflowStep> m_steps;
};

} // namespace idempo::sandbox
