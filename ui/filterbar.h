// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <vector>

#include <QWidget>

#include "operationquery.h"

class QComboBox;
class QLineEdit;
class QTimer;

namespace idempo {

/// The filters every list offers (state, run, key prefix, age), debounced so typing does not
/// start a query per key. The views push them into the store's ListFilter.
class FilterBar final : public QWidget
{
    Q_OBJECT
public:
    /// `states` are the choices of the state box ("all of them" first); empty hides the box.
    /// `ageLabel` words the age filter ("Untouched for", "Within").
    FilterBar(std::vector<OperationState> states, const QString &ageLabel,
              QWidget *parent = nullptr);

    /// The states chosen: one, or every offered state when "all" is picked.
    std::vector<OperationState> states() const;
    QString runId() const;
    QString keyPrefix() const;
    std::optional<std::int64_t> ageMs() const;
    /// The filters as an OperationQuery.
    OperationQuery query() const;

    /// True when any filter narrows the list (an empty list may then hold rows elsewhere).
    bool isActive() const;
    /// Back to every row: all states, no run, no key prefix, any age.
    void clear();

    void setRunId(const QString &runId);
    void setKeyPrefix(const QString &prefix);
    /// Puts keyboard focus in the key prefix field (Ctrl+F).
    void focusSearch();

Q_SIGNALS:
    void changed();

private:
    std::vector<OperationState> m_states;
    QComboBox *m_state = nullptr;
    QLineEdit *m_run;
    QLineEdit *m_key;
    QComboBox *m_age;
    QTimer *m_debounce;
};

} // namespace idempo
