// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace idempo::cli {

// Every byte `idempo` writes goes through these functions. Text is UTF-8 throughout: the
// engine's strings as they are, Qt's through QString::toUtf8 (toStdString), source literals as
// the compiler stores them; none is decoded a second time. What a terminal would act on
// (controls, bidi and other format characters) is shown escaped (escapedLines), so that no
// stored or given text steers the operator's terminal; JSON is written by one writer and
// escaped by escapedJson, exact for whoever parses it.

/// `text` and a line break on stdout.
void printOut(std::string_view text);

/// `text` and a line break on stderr.
void printErr(std::string_view text);

/// One compact JSON document and a line break on stdout.
void printJson(const nlohmann::json &document);

/// JSON text serialised elsewhere (the worker's event lines) and a line break on stdout,
/// flushed: a supervisor reads it as it comes.
void printJsonLine(std::string_view json);

/// A progress line redrawn in place on stderr ("\r" first, no line break), flushed.
void printProgress(std::string_view text);

/// Routes Qt's messages (warnings of QCommandLineParser, Qt Sql, …) to stderr through this unit.
void captureQtMessages();

/// Routes the engine's log (spdlog) to stderr through this unit: one line per record, with
/// colours on a terminal. `verbose` logs info and up, else $IDEMPO_LOG_LEVEL (default warn).
void setUpLogging(bool verbose);

} // namespace idempo::cli
