// SPDX-License-Identifier: Apache-2.0
#include "output.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <QByteArray>
#include <QString>
#include <QtGlobal>

#include "textescape.h"

namespace idempo::cli {
namespace {

/// One write per line, so that lines from several threads never interleave.
void write(std::FILE *stream, std::string_view text, bool flush)
{
    std::fwrite(text.data(), 1, text.size(), stream);
    if (flush)
        std::fflush(stream);
}

/// spdlog's records on stderr, one line each (a line break inside a message is shown as \n).
class StderrSink final : public spdlog::sinks::base_sink<std::mutex>
{
public:
    explicit StderrSink(bool colour) : m_colour(colour) {}

protected:
    void sink_it_(const spdlog::details::log_msg &msg) override
    {
        spdlog::memory_buf_t formatted;
        formatter_->format(msg, formatted);
        std::string_view text(formatted.data(), formatted.size());
        while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
            text.remove_suffix(1);
        const std::size_t start = std::min(msg.color_range_start, text.size());
        const std::size_t end = std::min(msg.color_range_end, text.size());
        std::string line;
        if (m_colour && start < end) {
            line = escapedText(text.substr(0, start)) + colourOf(msg.level) +
                   escapedText(text.substr(start, end - start)) + "\033[m" +
                   escapedText(text.substr(end));
        } else {
            line = escapedText(text);
        }
        line += '\n';
        write(stderr, line, false);
    }

    void flush_() override { std::fflush(stderr); }

private:
    /// spdlog's own colours per level.
    static const char *colourOf(spdlog::level::level_enum level)
    {
        switch (level) {
        case spdlog::level::trace:
            return "\033[37m";
        case spdlog::level::debug:
            return "\033[36m";
        case spdlog::level::info:
            return "\033[32m";
        case spdlog::level::warn:
            return "\033[33m\033[1m";
        case spdlog::level::err:
            return "\033[31m\033[1m";
        case spdlog::level::critical:
            return "\033[1m\033[41m";
        default:
            return "";
        }
    }

    bool m_colour;
};

void qtMessage(QtMsgType type, const QMessageLogContext &context, const QString &message)
{
    printErr(qFormatLogMessage(type, context, message).toStdString());
}

} // namespace

void printOut(std::string_view text)
{
    write(stdout, escapedLines(text) + '\n', false);
}

void printErr(std::string_view text)
{
    write(stderr, escapedLines(text) + '\n', false);
}

void printJson(const nlohmann::json &document)
{
    // "replace": text that is not UTF-8 cannot be JSON; the writer says so instead of failing.
    printJsonLine(document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void printJsonLine(std::string_view json)
{
    write(stdout, escapedJson(json) + '\n', true);
}

void printProgress(std::string_view text)
{
    write(stderr, '\r' + escapedText(text), true);
}

void captureQtMessages()
{
    qInstallMessageHandler(qtMessage);
}

void setUpLogging(bool verbose)
{
    auto logger = std::make_shared<spdlog::logger>(
        "idempo", std::make_shared<StderrSink>(isatty(STDERR_FILENO) != 0));
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
    spdlog::set_default_logger(logger);
    const QByteArray level = qgetenv("IDEMPO_LOG_LEVEL");
    spdlog::set_level(verbose ? spdlog::level::info
                              : (level.isEmpty() ? spdlog::level::warn
                                                 : spdlog::level::from_str(level.toStdString())));
}

} // namespace idempo::cli
