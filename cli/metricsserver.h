// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <string>

#include <QHostAddress>
#include <QHttpServer>
#include <QObject>
#include <QTcpServer>

namespace idempo::cli {

/// `idempo metrics serve`: answers `GET /metrics` with a fresh read of the ledger's figures in
/// the text format the scraper's Accept header asks for (OpenMetrics, else the classic
/// Prometheus text), and 404 for every other path. Runs until SIGINT or SIGTERM.
class MetricsServer final : public QObject
{
    Q_OBJECT
public:
    /// One scrape's body in OpenMetrics (`openMetrics`) or the classic text format. Throws
    /// idempo::Error when the ledger cannot be read; the scrape is answered 503 then.
    using Render = std::function<std::string(bool openMetrics)>;

    /// Takes over SIGINT and SIGTERM until destroyed.
    explicit MetricsServer(Render render, QObject *parent = nullptr);
    ~MetricsServer() override;

    /// Listens on `address`:`port`; returns the system's reason when it cannot (a port already
    /// taken, an address not on this host), else an empty string.
    QString listen(const QHostAddress &address, quint16 port);

    /// The port listened on (the one the system chose for port 0).
    quint16 port() const { return m_tcp->serverPort(); }

    /// Serves until SIGINT or SIGTERM; returns once the listener is closed.
    void exec();

private:
    Render m_render;
    QHttpServer m_http;
    QTcpServer *m_tcp;
    int m_signalPair[2] = {-1, -1}; ///< the signal handler writes to [0], the event loop reads [1]
};

} // namespace idempo::cli
