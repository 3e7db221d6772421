// SPDX-License-Identifier: Apache-2.0
#include "guardedactiondialog.h"

#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QShortcut>
#include <QTabWidget>
#include <QUuid>
#include <QVBoxLayout>

namespace idempo {

GuardedActionDialog::GuardedActionDialog(const QString &title, const QString &sentence,
                                         const QString &okText, QWidget *parent)
    : QDialog(parent), m_submissionId(QUuid::createUuid().toString(QUuid::WithoutBraces)),
      m_sentence(new QLabel(sentence, this)), m_subject(new QLabel(this)), m_note(new QLabel(this)),
      m_details(new QTabWidget(this)), m_form(new QFormLayout), m_reason(new QPlainTextEdit(this)),
      m_referenceLabel(new QLabel(this)), m_reference(new QLineEdit(this)),
      m_countLabel(new QLabel(this)), m_count(new QLineEdit(this)), m_outcome(new QLabel(this)),
      m_buttons(new QDialogButtonBox(this))
{
    setWindowTitle(title);
    setModal(true);
    m_sentence->setWordWrap(true);
    m_sentence->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_sentence->setTextFormat(Qt::PlainText);
    QFont big = m_sentence->font();
    big.setPointSizeF(big.pointSizeF() * 1.3);
    big.setBold(true);
    m_sentence->setFont(big);
    m_subject->setWordWrap(true);
    m_subject->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_subject->setTextFormat(Qt::PlainText);
    m_subject->setVisible(false);
    m_note->setWordWrap(true);
    m_note->setVisible(false);
    m_details->setVisible(false);
    m_reason->setPlaceholderText(tr("Why: recorded in the audit log with your name (required)"));
    m_reason->setTabChangesFocus(true);
    m_reason->setFixedHeight(m_reason->fontMetrics().lineSpacing() * 4);
    m_reference->setPlaceholderText(tr("the provider's reference of the effect (required)"));
    m_count->setPlaceholderText(tr("type the number of messages"));
    m_outcome->setWordWrap(true);
    m_outcome->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_outcome->setVisible(false);

    auto *reasonLabel = new QLabel(tr("&Reason"), this);
    reasonLabel->setBuddy(m_reason);
    m_form->addRow(reasonLabel, m_reason);
    m_referenceLabel->setBuddy(m_reference);
    m_form->addRow(m_referenceLabel, m_reference);
    m_countLabel->setBuddy(m_count);
    m_form->addRow(m_countLabel, m_count);
    for (QWidget *w :
         {static_cast<QWidget *>(m_referenceLabel), static_cast<QWidget *>(m_reference),
          static_cast<QWidget *>(m_countLabel), static_cast<QWidget *>(m_count)})
        w->setVisible(false);

    m_cancel = m_buttons->addButton(QDialogButtonBox::Cancel);
    m_ok = m_buttons->addButton(okText, QDialogButtonBox::AcceptRole);
    // Enter must never confirm: Cancel is the default, and OK never becomes it by taking focus.
    m_ok->setAutoDefault(false);
    m_cancel->setAutoDefault(true);
    m_cancel->setDefault(true);
    m_ok->setEnabled(false);
    m_ok->setToolTip(tr("Click, or press Ctrl+Enter"));
    auto *submitShortcut = new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return), this);
    connect(submitShortcut, &QShortcut::activated, this, &GuardedActionDialog::submit);
    auto *submitEnter = new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Enter), this);
    connect(submitEnter, &QShortcut::activated, this, &GuardedActionDialog::submit);

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_sentence);
    layout->addWidget(m_subject);
    layout->addWidget(m_note);
    layout->addWidget(m_details, 1);
    layout->addLayout(m_form);
    layout->addWidget(m_outcome);
    layout->addWidget(m_buttons);

    connect(m_reason, &QPlainTextEdit::textChanged, this, &GuardedActionDialog::updateOk);
    connect(m_reference, &QLineEdit::textChanged, this, &GuardedActionDialog::updateOk);
    connect(m_count, &QLineEdit::textChanged, this, &GuardedActionDialog::updateOk);
    connect(m_ok, &QPushButton::clicked, this, &GuardedActionDialog::submit);
    connect(m_cancel, &QPushButton::clicked, this, &GuardedActionDialog::reject);
    m_reason->setFocus();
    resize(680, 520);
}

void GuardedActionDialog::addDetail(const QString &title, const QString &text)
{
    auto *edit = new QPlainTextEdit(text, m_details);
    edit->setReadOnly(true);
    edit->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    edit->setLineWrapMode(QPlainTextEdit::NoWrap);
    addDetailWidget(title, edit);
}

void GuardedActionDialog::addDetailWidget(const QString &title, QWidget *widget)
{
    m_details->addTab(widget, title);
    m_details->setVisible(true);
}

void GuardedActionDialog::addField(const QString &label, QWidget *field)
{
    m_form->addRow(label, field);
}

void GuardedActionDialog::requireReference(const QString &label)
{
    m_needsReference = true;
    m_referenceLabel->setText(label);
    m_referenceLabel->setVisible(true);
    m_reference->setVisible(true);
    updateOk();
}

void GuardedActionDialog::requireTypedCount(qint64 count)
{
    m_expectedCount = count;
    m_countLabel->setText(tr("&Type %1 to confirm").arg(count));
    m_countLabel->setVisible(true);
    m_count->setVisible(true);
    updateOk();
}

void GuardedActionDialog::setSubject(const QString &text)
{
    m_subject->setText(text);
    m_subject->setVisible(!text.isEmpty());
}

QString GuardedActionDialog::subjectText() const
{
    return m_subject->text();
}

void GuardedActionDialog::showEvent(QShowEvent *event)
{
    QDialog::showEvent(event);
    // QDialog would focus the default button (Cancel), where a typed space would close it.
    if (m_reason->isEnabled())
        m_reason->setFocus(Qt::OtherFocusReason);
}

void GuardedActionDialog::keyPressEvent(QKeyEvent *event)
{
    const bool enter = event->key() == Qt::Key_Return || event->key() == Qt::Key_Enter;
    QWidget *focus = focusWidget();
    if (enter && event->modifiers() == Qt::NoModifier &&
        (focus == m_reason || focus == m_reference || focus == m_count)) {
        // A line edit passes Enter on to the default button: what was typed must not be lost.
        event->accept();
        return;
    }
    QDialog::keyPressEvent(event);
}

void GuardedActionDialog::setNote(const QString &text)
{
    m_note->setText(text);
    m_note->setVisible(!text.isEmpty());
}

bool GuardedActionDialog::complete() const
{
    if (m_reason->toPlainText().trimmed().isEmpty())
        return false;
    if (m_needsReference && m_reference->text().trimmed().isEmpty())
        return false;
    if (m_expectedCount) {
        bool ok = false;
        const qint64 typed = m_count->text().trimmed().toLongLong(&ok);
        // Zero never confirms: there is nothing to apply.
        if (!ok || typed != *m_expectedCount || typed == 0)
            return false;
    }
    return true;
}

void GuardedActionDialog::updateOk()
{
    m_ok->setEnabled(!m_submitting && !m_done && complete());
}

void GuardedActionDialog::submit()
{
    if (m_submitting || m_done || !complete())
        return;
    m_submitting = true;
    updateOk();
    for (QWidget *w : {static_cast<QWidget *>(m_reason), static_cast<QWidget *>(m_reference),
                       static_cast<QWidget *>(m_count)})
        w->setEnabled(false);
    m_outcome->setStyleSheet(QString());
    m_outcome->setText(tr("Applying…"));
    m_outcome->setVisible(true);
    Submission s;
    s.submissionId = m_submissionId;
    s.reason = m_reason->toPlainText().trimmed();
    s.externalReference = m_reference->text().trimmed();
    if (m_expectedCount)
        s.typedCount = m_count->text().trimmed().toLongLong();
    Q_EMIT submitted(s);
}

void GuardedActionDialog::finish(bool ok, const QString &outcome)
{
    m_submitting = false;
    m_outcome->setText(outcome);
    m_outcome->setVisible(true);
    if (ok) {
        m_done = true;
        m_outcome->setStyleSheet(QStringLiteral("color:#3fa35b; font-weight:bold"));
        m_ok->setVisible(false);
        m_cancel->setText(tr("Close"));
    } else {
        m_outcome->setStyleSheet(QStringLiteral("color:#d64545; font-weight:bold"));
        for (QWidget *w : {static_cast<QWidget *>(m_reason), static_cast<QWidget *>(m_reference),
                           static_cast<QWidget *>(m_count)})
            w->setEnabled(true);
    }
    updateOk();
}

QString GuardedActionDialog::outcomeText() const
{
    return m_outcome->text();
}

void GuardedActionDialog::reject()
{
    if (m_submitting)
        return;
    if (m_done)
        done(QDialog::Accepted);
    else
        QDialog::reject();
}

} // namespace idempo
