// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>

#include <QDialog>
#include <QString>

class QDialogButtonBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QTabWidget;

namespace idempo {

/// The confirmation of one guarded action (style.md 10): the consequence in one sentence, the
/// evidence behind it, a required reason and, where asked, an external reference or the typed
/// count of what will change. Cancel is the default button and Escape cancels; the OK button
/// names the consequence and stays disabled until every required field holds non-blank text.
/// Keyboard focus starts in the reason, so typing never presses a button; Enter in a field
/// neither submits nor cancels (in the reason it starts a new line); submitting takes a click on
/// OK or Ctrl+Enter.
///
/// The dialog never touches the ledger: OK emits submitted() once and waits for finish(). The
/// submission id is fixed when the dialog opens, so a double click, or OK again after a
/// failed attempt, is the same submission (the command answers a repeat with the first
/// decision and applies nothing again).
class GuardedActionDialog final : public QDialog
{
    Q_OBJECT
public:
    /// What the operator submitted.
    struct Submission
    {
        QString submissionId;             ///< the approval (or replay) id of this dialog
        QString reason;                   ///< trimmed, never empty
        QString externalReference;        ///< trimmed; empty unless required
        std::optional<qint64> typedCount; ///< the count typed, when required
    };

    /// `title`: the window title; `sentence`: the consequence, shown large at the top;
    /// `okText`: the OK button's label (the consequence, short). A fresh submission id is drawn.
    GuardedActionDialog(const QString &title, const QString &sentence, const QString &okText,
                        QWidget *parent = nullptr);

    /// Reuses an id the command chose (e.g. derived from the operation), instead of a fresh one.
    void setSubmissionId(const QString &id) { m_submissionId = id; }
    QString submissionId() const { return m_submissionId; }

    /// Adds a read-only tab of preformatted text (evidence, attempt history) below the sentence.
    void addDetail(const QString &title, const QString &text);
    /// Adds a tab holding `widget` (e.g. a dry-run table); the dialog takes ownership.
    void addDetailWidget(const QString &title, QWidget *widget);
    /// Asks for the provider's reference as evidence (required, non-blank).
    void requireReference(const QString &label);
    /// Asks the operator to type `count` (the number of items that will change) before OK; with
    /// a count of 0 OK stays disabled.
    void requireTypedCount(qint64 count);
    /// Adds an input of the action below the reason (e.g. what a resume adds to a budget); the
    /// dialog takes ownership. The caller reads it when submitted() is emitted.
    void addField(const QString &label, QWidget *field);
    /// A line under the sentence, e.g. why a second approver is needed.
    void setNote(const QString &text);
    /// What the action is on, under the sentence: the operation key, namespace and customer.
    void setSubject(const QString &text);
    QString subjectText() const;

    /// The outcome of the submission: on success the outcome replaces the buttons with Close;
    /// on failure the error shows in red and OK is enabled again for the same submission.
    void finish(bool ok, const QString &outcome);

    bool isSubmitting() const { return m_submitting; }
    QPushButton *okButton() const { return m_ok; }
    QPushButton *cancelButton() const { return m_cancel; }
    QPlainTextEdit *reasonEdit() const { return m_reason; }
    QLineEdit *referenceEdit() const { return m_reference; }
    QLineEdit *countEdit() const { return m_count; }
    QString outcomeText() const;

    /// Ignored while a submission runs, so its outcome is always seen.
    void reject() override;

protected:
    void showEvent(QShowEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;

Q_SIGNALS:
    /// OK with every required field filled; emitted once per attempt.
    void submitted(const idempo::GuardedActionDialog::Submission &submission);

private:
    void updateOk();
    void submit();
    bool complete() const;

    QString m_submissionId;
    QLabel *m_sentence;
    QLabel *m_subject;
    QLabel *m_note;
    QTabWidget *m_details;
    QFormLayout *m_form;
    QPlainTextEdit *m_reason;
    QLabel *m_referenceLabel;
    QLineEdit *m_reference;
    QLabel *m_countLabel;
    QLineEdit *m_count;
    QLabel *m_outcome;
    QDialogButtonBox *m_buttons;
    QPushButton *m_ok;
    QPushButton *m_cancel;
    std::optional<qint64> m_expectedCount;
    bool m_needsReference = false;
    bool m_submitting = false;
    bool m_done = false;
};

} // namespace idempo
