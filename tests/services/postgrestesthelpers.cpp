// SPDX-License-Identifier: Apache-2.0
#include "postgrestesthelpers.h"

#include <QString>
#include <QUrl>

namespace idempo::test::pg {

std::string testUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString();
}

std::string urlFor(const std::string &user, const std::string &database)
{
    QUrl url(QString::fromStdString(testUrl()));
    url.setUserName(QString::fromStdString(user));
    url.setPath(QLatin1Char('/') + QString::fromStdString(database));
    return url.toString().toStdString();
}

ClaimInput claimInput(const std::string &key)
{
    ClaimInput in;
    in.ns = kNs;
    in.key = key;
    in.payloadJson = R"({"amount":100})";
    in.owner = "worker-a";
    in.runId = "run-42";
    return in;
}

Error errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e;
    }
    return Error(ErrorCode::Internal, "no error");
}

} // namespace idempo::test::pg
