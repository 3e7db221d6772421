// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QLabel>

class QAbstractItemView;

namespace idempo {

/// What a list says in place of rows when it has none: what the list would hold (or that the
/// filters hide everything), and on an empty ledger what to do first. Shown over the view's
/// viewport once the model has answered and holds no rows; links come back through
/// QLabel::linkActivated().
class EmptyState final : public QLabel
{
    Q_OBJECT
public:
    /// Asks the list to clear its filters.
    static constexpr char ClearFiltersLink[] = "idempo:clear-filters";

    /// Watches `view`'s model (set it first).
    explicit EmptyState(QAbstractItemView *view);

    /// The message of a list whose filters hide every row, with a ClearFiltersLink.
    static QString filteredMessage();
    /// A line for a list that hides the sandbox's namespaces: how to see them.
    static QString sandboxHiddenNote();

    /// The list's own words, rich text: a headline and a sentence.
    void setMessage(const QString &message);
    /// The next step on an empty ledger (FirstStepsPanel::guidance()), or empty.
    void setGuidance(const QString &guidance);
    /// The model has answered its query: shows the message when it holds no rows.
    void modelAnswered();
    /// Why the list cannot show anything (no ledger open), shown over it whatever the model
    /// holds; empty to go back to the list's own words.
    void setUnavailable(const QString &why);
    QString unavailable() const { return m_unavailable; }

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void updateVisibility();
    void updateText();

    QAbstractItemView *m_view;
    QString m_message;
    QString m_guidance;
    QString m_unavailable;
    bool m_answered = false;
};

} // namespace idempo
