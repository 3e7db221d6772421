// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerview.h"

namespace idempo {

/// Where sandbox scenarios will run against the open ledger (scenario, runs, faults, seed,
/// progress with cancel, the invariant report). The sandbox runner is not in the engine yet,
/// so the controls are shown disabled and say so.
class SandboxPanel final : public LedgerView
{
    Q_OBJECT
public:
    explicit SandboxPanel(QWidget *parent = nullptr);

    void reload() override {}
    void refresh() override {}
};

} // namespace idempo
