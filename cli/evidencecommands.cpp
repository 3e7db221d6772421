// SPDX-License-Identifier: Apache-2.0
// `idempo evidence`: the evidence pack of one operation (evidencepack.h), exported from the
// ledger, and checked offline, without any ledger, or against one.
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>

#include "context.h"
#include "error.h"
#include "evidencepack.h"
#include "ledgerfactory.h"
#include "operationkey.h"
#include "output.h"
#include "textescape.h"
#include "usageerror.h"

namespace idempo::cli {
namespace {

int verifyPack(Context &c, const QString &path)
{
    const bool against = c.parser.isSet(QStringLiteral("against-ledger"));
    if (against && !c.parser.isSet(QStringLiteral("ledger")) &&
        qEnvironmentVariableIsEmpty("IDEMPO_LEDGER") &&
        !QFileInfo::exists(defaultLedgerUrl().mid(7)))
        throw UsageError{"--against-ledger checks the pack against a ledger: name it with --ledger "
                         "URL (or IDEMPO_LEDGER); the embedded default ledger does not exist"};
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        throw Error(ErrorCode::NotFound, "cannot read evidence pack " +
                                             escapedText(path.toStdString()) + ": " +
                                             file.errorString().toStdString());
    const QByteArray bytes = file.readAll();
    std::string problem;
    const nlohmann::json pack = EvidencePack::parse(bytes.toStdString(), problem);
    EvidencePack::Verdict verdict;
    if (pack.is_discarded()) {
        verdict.ok = false;
        verdict.problem = problem;
    } else {
        verdict = against ? EvidencePack::verifyAgainst(c.engine().store(), pack)
                          : EvidencePack::verify(pack);
    }
    nlohmann::json answer = EvidencePack::toJson(verdict);
    std::string human;
    if (verdict.ok) {
        const auto &head = pack["chain"]["head"];
        answer["head"] = head;
        const std::string hash = head["hash"].get<std::string>();
        const std::string target = escapedText(pack["namespace"].get<std::string>()) + "/" +
                                   escapedText(pack["key"].get<std::string>());
        human = "evidence pack intact: " + std::to_string(verdict.records) +
                " audit record(s) of " + target +
                (verdict.links > 0 ? " and " + std::to_string(verdict.links) +
                                         " other chain record(s) around those written before "
                                         "records linked to their target's previous one"
                                   : std::string()) +
                " match their hashes; " +
                (verdict.linked ? "each links to the operation's record before it, back to its "
                                  "first, so none between its first and the newest in the pack "
                                  "is left out"
                                : "none between the operation's first record in the pack and the "
                                  "newest is left out") +
                "; the operation's state and version match its last hashed record, each approval "
                "says what its audit record says (decision, operator, role, reason, status) and "
                "none is left out, and each decision the history shows has an audit record.\n";
        if (against) {
            if (verdict.appendedSince > 0)
                human += "NEWER RECORDS: the ledger holds " +
                         std::to_string(verdict.appendedSince) +
                         " audit record(s) of the operation appended after this pack's head: the "
                         "pack shows it as it stood then, not as it stands now.\n";
            std::string uncompared;
            for (const std::string &name : verdict.uncompared)
                uncompared += (uncompared.empty() ? "" : ", ") + name;
            human +=
                "against the ledger: its audit chain verifies (" +
                std::to_string(verdict.ledgerRecords) +
                " records) and still holds the pack's head, record " + head["seq"].dump() +
                "; the pack's records are the ledger's and none of the operation's up to "
                "that head is left out; its history (every event up to its version) and its "
                "approvals are the ledger's; the operation record " +
                (verdict.versionNow == verdict.versionPacked
                     ? std::string("is the ledger's")
                     : "is version " + std::to_string(verdict.versionPacked.value_or(0)) +
                           " (the ledger's is " + std::to_string(verdict.versionNow.value_or(0)) +
                           " now): what no move changes and what the event of that version "
                           "recorded are the ledger's") +
                ".\nnot covered: " +
                (uncompared.empty() ? std::string()
                                    : "the operation's " + uncompared +
                                          " at that version (the ledger keeps only the "
                                          "newest); ") +
                "the run record (the run's budgets as they stood at export); who exported "
                "the pack, when and from where (exported_by, exported_at, ledger).";
        } else {
            human += "not covered offline: newer records of the operation cut from the end of the "
                     "pack, whether the records and that head (record " +
                     head["seq"].dump() + ", hash " + hash +
                     ") are the ledger's, the rows the chain does not hash (the operation's "
                     "other fields, the history, the run record), and who exported the pack, when "
                     "and from where.\nto check it against the ledger: idempo evidence verify FILE "
                     "--against-ledger --ledger URL";
        }
    } else {
        human = "evidence pack REFUSED" +
                (verdict.badSeq ? " at audit record " + std::to_string(*verdict.badSeq)
                                : std::string()) +
                ": " + escapedText(verdict.problem);
    }
    c.print(answer, human);
    return verdict.ok ? ExitOk : ExitRefused;
}

int cmdEvidence(Context &c)
{
    const QStringList args = c.parser.positionalArguments();
    if (args.size() == 3 && args.at(1) == QLatin1String("verify")) {
        if (c.parser.isSet(QStringLiteral("output")))
            throw UsageError{"evidence verify reads a pack; -o is for exporting one"};
        return verifyPack(c, args.at(2));
    }
    if (c.parser.isSet(QStringLiteral("against-ledger")))
        throw UsageError{"--against-ledger is for `evidence verify FILE`"};
    if (args.size() > 2 || (args.size() == 2 && args.at(1) == QLatin1String("verify")))
        throw UsageError{"expected `evidence KEY [-o FILE]` or `evidence verify FILE`"};
    const std::string key = c.key();
    validateOperationKey(key);
    validateNamespace(c.ns);
    const nlohmann::json pack = EvidencePack::build(c.engine().store(), c.ns, key);
    // ASCII only: every byte of stored text survives as an escape, and no terminal or viewer
    // interprets what an operation's payload holds.
    const std::string text = pack.dump(2, ' ', true) + "\n";
    const std::size_t records = pack["audit_records"].size();
    if (!c.parser.isSet(QStringLiteral("output"))) {
        printOut(text.substr(0, text.size() - 1));
        return ExitOk;
    }
    const QString path = c.parser.value(QStringLiteral("output"));
    if (path == QLatin1String("-")) {
        printOut(text.substr(0, text.size() - 1));
        return ExitOk;
    }
    const auto written = [&text](QFileDevice &file) {
        // flush() before commit(): a full disk fails the flush, which commit() alone may miss.
        return file.write(text.data(), static_cast<qint64>(text.size())) ==
                   static_cast<qint64>(text.size()) &&
               file.flush();
    };
    // A device or pipe is written in place: a save file would be renamed over it.
    const QFileInfo info(path);
    QSaveFile saved(path);
    QFile direct(path);
    QFileDevice &file = info.exists() && !info.isFile() ? static_cast<QFileDevice &>(direct)
                                                        : static_cast<QFileDevice &>(saved);
    const bool ok =
        file.open(QIODevice::WriteOnly) && written(file) && (&file == &direct || saved.commit());
    if (!ok)
        throw Error(ErrorCode::LedgerUnavailable,
                    "cannot write evidence pack " + escapedText(path.toStdString()) + ": " +
                        file.errorString().toStdString() + "; nothing was written");
    c.print(
        {{"file", path.toStdString()}, {"audit_records", records}, {"head", pack["chain"]["head"]}},
        "evidence pack of " + escapedText(c.ns + "/" + key) + " written to " +
            escapedText(path.toStdString()) + ": " + std::to_string(records) +
            " audit record(s), chain head record " + pack["chain"]["head"]["seq"].dump());
    return ExitOk;
}

} // namespace

void addEvidenceCommands(std::map<QString, Command> &table)
{
    table.insert(
        {QStringLiteral("evidence"),
         {2,
          "evidence KEY [-o FILE] | evidence verify FILE",
          "The evidence pack of one operation for a compliance case, as one JSON file: its\n"
          "record, history, approvals, run record, every audit record that targets it (each\n"
          "linked to the one before it) and the chain head at export.\n"
          "  verify FILE  recompute every record's hash, check that the operation's records\n"
          "               link without a gap and that the operation agrees with them, offline;\n"
          "               with --against-ledger also that the ledger's chain verifies and holds\n"
          "               the head, and that the records, operation, history and approvals are\n"
          "               the ledger's; a tampered pack is refused naming what is wrong (exit 65)",
          {QCommandLineOption(QStringList{QStringLiteral("output"), QStringLiteral("o")},
                              QStringLiteral("Write the pack to FILE (default, or -: stdout)."),
                              QStringLiteral("FILE")),
           QCommandLineOption(QStringLiteral("against-ledger"),
                              QStringLiteral("verify: also check the pack against the ledger "
                                             "(--ledger URL)."))},
          cmdEvidence}});
}

} // namespace idempo::cli
