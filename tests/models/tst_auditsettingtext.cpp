// SPDX-License-Identifier: Apache-2.0
#include <QTest>

#include "approvecommand.h"
#include "audittablemodel.h"
#include "consolefixture.h"
#include "guardsettingcommand.h"
#include "money.h"

using namespace idempo;

/// A guard setting's audit record says in the Audit view what the setting was and became, as
/// `idempo audit list` does (auditchange.h).
class TestAuditSettingText final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void settingShowsBeforeAndAfter();
};

void TestAuditSettingText::settingShowsBeforeAndAfter()
{
    test::ConsoleFixture fixture;
    const ActorIdentity admin{"olga", "owner"};
    for (const auto &[name, value] :
         {std::pair{FourEyesSetting, "1000.00"}, std::pair{FourEyesSetting, "5000.00"},
          std::pair{ReferenceRatesSetting, "EUR USD=0.92"}, std::pair{ReferenceRatesSetting, ""}}) {
        GuardSettingCommand command(fixture.store(), admin, name, value, "policy");
        command.execute();
    }
    AuditFilter filter;
    filter.action = "setting";
    const std::vector<AuditRecord> records = fixture.store().auditRecords(filter);
    QCOMPARE(records.size(), std::size_t(4));
    QStringList shown;
    for (const AuditRecord &r : records)
        shown << AuditTableModel::cell(r, AuditTableModel::Change, Qt::DisplayRole).toString();
    QCOMPARE(shown, QStringList({QStringLiteral("four_eyes_above: (none) → 1000.00"),
                                 QStringLiteral("four_eyes_above: 1000.00 → 5000.00"),
                                 QStringLiteral("reference_rates: (none) → EUR USD=0.92"),
                                 QStringLiteral("reference_rates: EUR USD=0.92 → (none)")}));
}

QTEST_MAIN(TestAuditSettingText)
#include "tst_auditsettingtext.moc"
