// SPDX-License-Identifier: Apache-2.0
#include "guardedactionhelpers.h"

namespace idempo::test {

ClaimInput refundClaim(const std::string &key, const std::string &owner, const std::string &payload)
{
    ClaimInput in;
    in.ns = kNs;
    in.key = key;
    in.payloadJson = payload;
    in.owner = owner;
    in.stepId = "refund";
    in.target = "account DE44-5001";
    return in;
}

Operation needingConfirmation(LedgerFixture &f, const std::string &key, const std::string &owner)
{
    ClaimInput in = refundClaim(key, owner);
    in.maxAttempts = 1;
    const ClaimResult r = f.engine().claim(in);
    return f.engine().fail(kNs, key, r.operation.fencingToken, ErrorClass::Transient,
                           "503 from provider");
}

} // namespace idempo::test
