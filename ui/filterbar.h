// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <vector>

#include <QWidget>

#include "operationquery.h"

class QCheckBox;
class QComboBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QTimer;

namespace idempo {

/// The filters every list offers (namespace, state, run, key prefix, age; in Find also customer
/// and payload field), debounced so typing
/// does not start a query per key. The views push them into the store's ListFilter. A review view
/// (setReviewView) also offers "Hide sandbox", on by default: simulated runs stay out of the
/// queues a person works through unless asked for.
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
    /// The namespace typed; empty for every namespace.
    QString ns() const;
    /// Offers "Hide sandbox" and turns it on (and back on with clear()).
    void setReviewView(bool review);
    /// Lays the filters out in two rows (namespace and state; run, key and age), for a view
    /// that shares its width with a detail pane: one row squeezes the fields to a few characters.
    void setTwoRows(bool two);
    /// True when sandbox namespaces are left out (a review view with no namespace typed).
    bool hidesSandbox() const;
    void setNamespace(const QString &ns);
    void setHideSandbox(bool hide);
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

    /// Adds a second row with the customer and a payload field ("/pointer = value",
    /// payloadmatch.h), for the Find tab. A field that is not a JSON Pointer term is named in red
    /// beside it and changes nothing: the list keeps the filters it had.
    void enablePayloadSearch();
    void setCustomer(const QString &customer);
    void setPayloadField(const QString &term);
    /// Why the payload field is not applied; empty when it is (or is empty).
    QString payloadProblem() const { return m_problem; }

Q_SIGNALS:
    void changed();

private:
    /// Parses the payload field; applies it (after the debounce) or names what is wrong.
    void applyPayloadField();

    std::vector<OperationState> m_states;
    QComboBox *m_state = nullptr;
    QLineEdit *m_ns;
    QCheckBox *m_hideSandbox;
    bool m_review = false;
    QLineEdit *m_run;
    QLineEdit *m_key;
    QComboBox *m_age;
    QTimer *m_debounce;
    QHBoxLayout *m_first;
    QHBoxLayout *m_second;
    std::vector<QWidget *> m_secondRow; ///< what setTwoRows() moves to the second row
    QLineEdit *m_customer = nullptr;
    QLineEdit *m_field = nullptr;
    QLabel *m_fieldError = nullptr;
    QString m_problem;
    std::vector<PayloadMatch> m_payload; ///< the payload field as last applied
};

} // namespace idempo
