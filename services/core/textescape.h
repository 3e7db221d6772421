// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>

namespace idempo {

/// True for a character a reader cannot see for what it is: controls (C0, DEL, C1), format
/// characters (bidi embeddings, overrides and isolates, zero-width characters), line and
/// paragraph separators, surrogates and unassigned code points. Operation keys may not hold
/// them; every output of stored text shows them escaped.
bool isUnprintable(char32_t c);

/// Free text that people or providers wrote (a reason, an error detail, an actor, a reference)
/// as a terminal, a CSV cell or a table view shows it: unchanged but for each unprintable
/// character, written as \n, \r, \t, \xNN (other ASCII controls, and bytes that are not UTF-8),
/// \uNNNN or \UNNNNNNNN. No stored text can then move the cursor, recolour the terminal,
/// reorder a line or start a new one. Backslashes stay as they are: the exact value is what
/// the JSON output carries.
std::string escapedText(std::string_view text);

/// escapedText for output that has lines of its own (reports, help): '\n' passes.
std::string escapedLines(std::string_view text);

/// JSON text with every unprintable character that a JSON writer leaves raw (DEL, C1 controls,
/// format characters, separators) written as a \u escape (a surrogate pair above U+FFFF), so
/// the value it stands for is exactly the same. ASCII is never touched: a JSON writer already
/// escapes the controls inside strings, and the layout outside them stays.
std::string escapedJson(std::string_view json);

/// One CSV field (RFC 4180) of stored text: escapedText, then quoted when it holds a comma or a
/// quote (doubled inside). For a JSON-valued field pass escapedJson(text).
std::string csvField(std::string_view text);

} // namespace idempo
