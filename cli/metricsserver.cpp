// SPDX-License-Identifier: Apache-2.0
#include "metricsserver.h"

#include <csignal>

#include <sys/socket.h>
#include <unistd.h>

#include <QCoreApplication>
#include <QHttpServerRequest>
#include <QHttpServerResponse>
#include <QSocketNotifier>

#include "error.h"
#include "metricsexposition.h"

namespace idempo::cli {
namespace {

/// The write end of the pair SIGINT and SIGTERM report on: write() is async-signal-safe, and the
/// event loop reads the other end.
int g_signalFd = -1;

void onStopSignal(int)
{
    const char byte = 1;
    [[maybe_unused]] const auto written = ::write(g_signalFd, &byte, 1);
}

} // namespace

MetricsServer::MetricsServer(Render render, QObject *parent)
    : QObject(parent), m_render(std::move(render)), m_tcp(new QTcpServer(this))
{
    // Installed before the address is announced, so a stop sent right after it is not lost:
    // the event loop sees the byte as soon as it runs.
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, m_signalPair) != 0)
        throw Error(ErrorCode::Internal, "cannot create the pipe SIGINT and SIGTERM stop on");
    g_signalFd = m_signalPair[0];
    auto *notifier = new QSocketNotifier(m_signalPair[1], QSocketNotifier::Read, this);
    connect(notifier, &QSocketNotifier::activated, QCoreApplication::instance(),
            &QCoreApplication::quit);
    std::signal(SIGINT, onStopSignal);
    std::signal(SIGTERM, onStopSignal);
    m_http.route(QStringLiteral("/metrics"), QHttpServerRequest::Method::Get,
                 [this](const QHttpServerRequest &request) {
                     const bool openMetrics =
                         request.value("Accept").contains("application/openmetrics-text");
                     try {
                         const std::string body = m_render(openMetrics);
                         return QHttpServerResponse(
                             QByteArray(openMetrics ? MetricsExposition::OpenMetricsContentType
                                                    : MetricsExposition::PrometheusContentType),
                             QByteArray(body.data(), static_cast<qsizetype>(body.size())));
                     } catch (const Error &e) {
                         // The store's messages name the ledger without secrets (ledgerfactory.h).
                         return QHttpServerResponse(
                             QByteArray("text/plain; charset=utf-8"), QByteArray(e.what()) + '\n',
                             QHttpServerResponse::StatusCode::ServiceUnavailable);
                     }
                 });
}

QString MetricsServer::listen(const QHostAddress &address, quint16 port)
{
    if (!m_tcp->listen(address, port))
        return m_tcp->errorString();
    m_http.bind(m_tcp);
    return {};
}

MetricsServer::~MetricsServer()
{
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    g_signalFd = -1;
    ::close(m_signalPair[0]);
    ::close(m_signalPair[1]);
}

void MetricsServer::exec()
{
    QCoreApplication::exec();
    m_tcp->close();
}

} // namespace idempo::cli
