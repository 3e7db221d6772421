// SPDX-License-Identifier: Apache-2.0
#include "scenario.h"

namespace idempo::sandbox {
namespace {

WorkflowStep readStep(std::string id, std::string provider, std::string agent, bool model = false)
{
    WorkflowStep s;
    s.stepId = std::move(id);
    s.kind = ToolKind::Read;
    s.provider = std::move(provider);
    s.callsModel = model;
    s.agent = std::move(agent);
    return s;
}

WorkflowStep writeStep(std::string id, std::string provider, std::string agent,
                       ProviderCapabilities caps)
{
    WorkflowStep s;
    s.stepId = std::move(id);
    s.kind = ToolKind::ProtectedWrite;
    s.provider = std::move(provider);
    s.capabilities = caps;
    s.writeBoundary = true;
    s.agent = std::move(agent);
    return s;
}

std::string suffixOf(const std::string &runId)
{
    const std::size_t dash = runId.rfind('-');
    return dash == std::string::npos ? runId : runId.substr(dash + 1);
}

} // namespace

Scenario::Scenario(Kind kind, std::string name, std::string prefix, std::vector<WorkflowStep> steps)
    : m_kind(kind), m_name(std::move(name)), m_prefix(std::move(prefix)), m_steps(std::move(steps))
{
}

const std::vector<Scenario> &Scenario::all()
{
    static const std::vector<Scenario> scenarios{
        Scenario(
            Kind::KycOnboarding, "kyc-onboarding", "kyc",
            {readStep("extract_documents", "document-extractor", "extractor"),
             readStep("compliance_check", "compliance-model", "compliance", true),
             writeStep("provision_account", "core-banking", "provisioner", {true, true, true})}),
        Scenario(Kind::PaymentRefund, "payment-refund", "refund",
                 {readStep("load_order", "order-service", "support"),
                  writeStep("refund_payment", "payments", "refunds", {true, true, true})}),
        Scenario(Kind::TravelBooking, "travel-booking", "travel",
                 {readStep("search_offers", "travel-search", "planner"),
                  writeStep("book_slot", "travel-booking", "booker", {true, false, true})}),
        Scenario(Kind::InvoiceEmail, "invoice-email", "invoice",
                 {readStep("render_invoice", "invoice-renderer", "billing"),
                  writeStep("send_email", "mailer", "mailer", {false, false, false})}),
    };
    return scenarios;
}

const Scenario *Scenario::find(std::string_view name)
{
    for (const Scenario &s : all())
        if (s.name() == name)
            return &s;
    return nullptr;
}

int Scenario::stepIndex(std::string_view stepId) const
{
    for (std::size_t i = 0; i < m_steps.size(); ++i)
        if (m_steps[i].stepId == stepId)
            return static_cast<int>(i);
    return -1;
}

nlohmann::json Scenario::firstPayload(const FaultPlan &plan, const std::string &runId) const
{
    const std::string n = suffixOf(runId);
    switch (m_kind) {
    case Kind::KycOnboarding:
        return {{"customer", "c-" + n}, {"document", "passport"}};
    case Kind::PaymentRefund: {
        // 10.00 to 1,000.00 EUR in whole cents, so the threshold splits the runs.
        const auto cents =
            1'000 + static_cast<std::int64_t>(plan.uniform(runId, "amount", 0) * 99'000.0);
        return {{"order", "o-" + n}, {"amount_cents", cents}, {"currency", "EUR"}};
    }
    case Kind::TravelBooking:
        return {{"traveller", "t-" + n}, {"route", "BRU-LIS"}};
    case Kind::InvoiceEmail:
        return {{"invoice", "inv-" + n}};
    }
    return nlohmann::json::object();
}

nlohmann::json Scenario::readOutput(const WorkflowStep &step, const nlohmann::json &payload,
                                    const std::string &decision) const
{
    nlohmann::json out = payload;
    if (step.callsModel) {
        out["decision"] = decision;
        return out;
    }
    switch (m_kind) {
    case Kind::KycOnboarding:
        out["document_ok"] = true;
        out["name"] = "Client " + payload.value("customer", std::string());
        break;
    case Kind::PaymentRefund:
        out["reason"] = "damaged";
        break;
    case Kind::TravelBooking:
        out["offer"] = "offer-" + payload.value("traveller", std::string());
        out["price_cents"] = 42'000;
        break;
    case Kind::InvoiceEmail:
        out["to"] = "billing@" + payload.value("invoice", std::string()) + ".example";
        out["subject"] = "Your invoice";
        break;
    }
    return out;
}

bool Scenario::requiresApproval(const WorkflowStep &step, const nlohmann::json &payload) const
{
    if (step.kind != ToolKind::ProtectedWrite)
        return false;
    if (m_kind == Kind::KycOnboarding)
        return payload.value("decision", std::string()) == "review";
    if (m_kind == Kind::PaymentRefund)
        return payload.value("amount_cents", std::int64_t{0}) > RefundApprovalThresholdCents;
    return false;
}

std::optional<Amount> Scenario::value(const WorkflowStep &step, const nlohmann::json &payload) const
{
    if (step.kind != ToolKind::ProtectedWrite || m_kind != Kind::PaymentRefund)
        return std::nullopt;
    return Amount{payload.at("amount_cents").get<std::int64_t>(),
                  payload.at("currency").get<std::string>()};
}

} // namespace idempo::sandbox
