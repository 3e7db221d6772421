// SPDX-License-Identifier: Apache-2.0
#include "filterbar.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QTimer>
#include <QVBoxLayout>

#include "displayformat.h"
#include "error.h"
#include "payloadmatch.h"

namespace idempo {

FilterBar::FilterBar(std::vector<OperationState> states, const QString &ageLabel, QWidget *parent)
    : QWidget(parent), m_states(std::move(states)), m_ns(new QLineEdit(this)),
      m_hideSandbox(new QCheckBox(tr("Hide sand&box"), this)), m_run(new QLineEdit(this)),
      m_key(new QLineEdit(this)), m_age(new QComboBox(this)), m_debounce(new QTimer(this))
{
    auto *rows = new QVBoxLayout(this);
    rows->setContentsMargins(0, 0, 0, 0);
    m_first = new QHBoxLayout;
    m_second = new QHBoxLayout;
    rows->addLayout(m_first);
    rows->addLayout(m_second);
    QHBoxLayout *layout = m_first;
    // However narrow the window, a field keeps room for a namespace, run id or key to be read.
    const int fieldWidth = fontMetrics().horizontalAdvance(QLatin1Char('x')) * 14;
    for (QLineEdit *field : {m_ns, m_run, m_key})
        field->setMinimumWidth(fieldWidth);
    m_ns->setPlaceholderText(tr("every namespace"));
    m_ns->setClearButtonEnabled(true);
    m_ns->setToolTip(tr("Only this namespace (exact name); empty for every namespace"));
    auto *nsLabel = new QLabel(tr("&Namespace"), this);
    nsLabel->setBuddy(m_ns);
    layout->addWidget(nsLabel);
    layout->addWidget(m_ns, 1);
    m_hideSandbox->setToolTip(tr("Leaves out the sandbox's namespaces (sandbox…): simulated runs "
                                 "are not work for a person"));
    m_hideSandbox->hide();
    layout->addWidget(m_hideSandbox);
    if (!m_states.empty()) {
        m_state = new QComboBox(this);
        m_state->setAccessibleName(tr("State filter"));
        // Its longest state name need not widen the window: the list shows them in full.
        m_state->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        m_state->setMinimumContentsLength(15);
        m_state->addItem(m_states.size() > 1 ? tr("All listed states")
                                             : stateText(m_states.front()));
        if (m_states.size() > 1)
            for (OperationState s : m_states)
                m_state->addItem(stateText(s));
        auto *label = new QLabel(tr("&State"), this);
        label->setBuddy(m_state);
        layout->addWidget(label);
        layout->addWidget(m_state);
        connect(m_state, &QComboBox::currentIndexChanged, this, &FilterBar::changed);
    }
    m_run->setPlaceholderText(tr("run id"));
    m_run->setClearButtonEnabled(true);
    m_key->setPlaceholderText(tr("operation key prefix  (Ctrl+F)"));
    m_key->setClearButtonEnabled(true);
    auto *runLabel = new QLabel(tr("&Run"), this);
    runLabel->setBuddy(m_run);
    auto *keyLabel = new QLabel(tr("&Key"), this);
    keyLabel->setBuddy(m_key);
    auto *ageLabelWidget = new QLabel(ageLabel, this);
    ageLabelWidget->setBuddy(m_age);
    m_age->addItem(tr("any time"), QVariant());
    m_age->addItem(tr("1 minute"), qlonglong{60'000});
    m_age->addItem(tr("5 minutes"), qlonglong{300'000});
    m_age->addItem(tr("1 hour"), qlonglong{3'600'000});
    m_age->addItem(tr("1 day"), qlonglong{86'400'000});
    m_secondRow = {runLabel, m_run, keyLabel, m_key, ageLabelWidget, m_age};
    setTwoRows(false);
    m_debounce->setSingleShot(true);
    m_debounce->setInterval(250);
    connect(m_debounce, &QTimer::timeout, this, &FilterBar::changed);
    connect(m_run, &QLineEdit::textChanged, m_debounce, qOverload<>(&QTimer::start));
    connect(m_ns, &QLineEdit::textChanged, m_debounce, qOverload<>(&QTimer::start));
    connect(m_ns, &QLineEdit::textChanged, m_hideSandbox,
            [this](const QString &text) { m_hideSandbox->setEnabled(text.trimmed().isEmpty()); });
    connect(m_hideSandbox, &QCheckBox::toggled, this, &FilterBar::changed);
    connect(m_key, &QLineEdit::textChanged, m_debounce, qOverload<>(&QTimer::start));
    connect(m_age, &QComboBox::currentIndexChanged, this, &FilterBar::changed);
}

std::vector<OperationState> FilterBar::states() const
{
    if (!m_state || m_state->currentIndex() <= 0)
        return m_states;
    return {m_states[static_cast<std::size_t>(m_state->currentIndex() - 1)]};
}

QString FilterBar::runId() const
{
    return m_run->text().trimmed();
}
QString FilterBar::ns() const
{
    return m_ns->text().trimmed();
}

void FilterBar::setReviewView(bool review)
{
    m_review = review;
    m_hideSandbox->setVisible(review);
    const QSignalBlocker block(m_hideSandbox);
    m_hideSandbox->setChecked(review);
}

void FilterBar::setTwoRows(bool two)
{
    QHBoxLayout *to = two ? m_second : m_first;
    for (QWidget *w : m_secondRow) {
        m_first->removeWidget(w);
        m_second->removeWidget(w);
        to->addWidget(w, w == m_run ? 1 : w == m_key ? 2 : 0);
    }
}

bool FilterBar::hidesSandbox() const
{
    return m_review && m_hideSandbox->isChecked() && ns().isEmpty();
}

void FilterBar::setNamespace(const QString &ns)
{
    m_ns->setText(ns);
}

void FilterBar::setHideSandbox(bool hide)
{
    m_hideSandbox->setChecked(hide);
}

QString FilterBar::keyPrefix() const
{
    return m_key->text();
}

std::optional<std::int64_t> FilterBar::ageMs() const
{
    const QVariant v = m_age->currentData();
    return v.isValid() ? std::optional<std::int64_t>(v.toLongLong()) : std::nullopt;
}

OperationQuery FilterBar::query() const
{
    OperationQuery q;
    q.states = states();
    q.ns = ns().toStdString();
    q.hideSandbox = hidesSandbox();
    q.runId = runId().toStdString();
    q.keyPrefix = keyPrefix().toStdString();
    q.minAgeMs = ageMs();
    if (m_customer)
        q.customer = m_customer->text().trimmed().toStdString();
    q.payload = m_payload;
    return q;
}

bool FilterBar::isActive() const
{
    return (m_state && m_state->currentIndex() > 0) || !ns().isEmpty() || !runId().isEmpty() ||
           !keyPrefix().isEmpty() || m_age->currentIndex() > 0 ||
           (m_customer && !m_customer->text().trimmed().isEmpty()) || !m_payload.empty();
}

void FilterBar::clear()
{
    if (m_state)
        m_state->setCurrentIndex(0);
    m_ns->clear();
    m_hideSandbox->setChecked(m_review);
    m_run->clear();
    m_key->clear();
    m_age->setCurrentIndex(0);
    if (m_customer) {
        m_customer->clear();
        m_field->clear();
    }
}

void FilterBar::setRunId(const QString &runId)
{
    m_run->setText(runId);
}
void FilterBar::setKeyPrefix(const QString &prefix)
{
    m_key->setText(prefix);
}

void FilterBar::focusSearch()
{
    m_key->setFocus(Qt::ShortcutFocusReason);
    m_key->selectAll();
}

void FilterBar::enablePayloadSearch()
{
    if (m_customer)
        return;
    auto *row = new QHBoxLayout;
    static_cast<QVBoxLayout *>(layout())->addLayout(row);
    m_customer = new QLineEdit(this);
    m_customer->setPlaceholderText(tr("customer, customer_id, client or client_id"));
    m_customer->setClearButtonEnabled(true);
    m_customer->setToolTip(tr("Only operations whose payload names this customer (exact text): "
                              "the first of customer, customer_id, client, client_id"));
    m_field = new QLineEdit(this);
    m_field->setPlaceholderText(tr("/refund/order_id = o-7"));
    m_field->setClearButtonEnabled(true);
    m_field->setToolTip(tr("A JSON Pointer (RFC 6901: /member/0/member, ~1 for '/', ~0 for '~') "
                           "and the exact text of the value there; numbers, true, false and null "
                           "match their text"));
    const int fieldWidth = fontMetrics().horizontalAdvance(QLatin1Char('x')) * 14;
    m_customer->setMinimumWidth(fieldWidth);
    m_field->setMinimumWidth(fieldWidth);
    m_fieldError = new QLabel(this);
    m_fieldError->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_fieldError->setStyleSheet(QStringLiteral("color: #d64545; font-weight: bold"));
    m_fieldError->setWordWrap(true);
    m_fieldError->hide();
    auto *customerLabel = new QLabel(tr("C&ustomer"), this);
    customerLabel->setBuddy(m_customer);
    auto *fieldLabel = new QLabel(tr("Pa&yload field"), this);
    fieldLabel->setBuddy(m_field);
    row->addWidget(customerLabel);
    row->addWidget(m_customer, 1);
    row->addWidget(fieldLabel);
    row->addWidget(m_field, 2);
    row->addWidget(m_fieldError, 2);
    connect(m_customer, &QLineEdit::textChanged, m_debounce, qOverload<>(&QTimer::start));
    connect(m_field, &QLineEdit::textChanged, this, &FilterBar::applyPayloadField);
}

void FilterBar::applyPayloadField()
{
    // "/pointer = value": the blanks around '=' are for reading; the store's own check names a
    // term that is not a JSON Pointer, and such a term runs no query.
    const QString term = m_field->text().trimmed();
    const qsizetype eq = term.indexOf(QLatin1Char('='));
    std::vector<PayloadMatch> payload;
    m_problem.clear();
    try {
        if (eq < 0 && !term.isEmpty())
            parsePayloadMatch(term.toStdString());
        if (eq >= 0) {
            PayloadMatch match{term.left(eq).trimmed().toStdString(),
                               term.mid(eq + 1).trimmed().toStdString()};
            checkPayloadMatch(match);
            payload.push_back(std::move(match));
        }
    } catch (const Error &e) {
        m_problem = QString::fromStdString(e.what());
    }
    m_fieldError->setText(m_problem);
    m_fieldError->setVisible(!m_problem.isEmpty());
    if (!m_problem.isEmpty())
        return;
    m_payload = std::move(payload);
    m_debounce->start();
}

void FilterBar::setCustomer(const QString &customer)
{
    if (m_customer)
        m_customer->setText(customer);
}

void FilterBar::setPayloadField(const QString &term)
{
    if (m_field)
        m_field->setText(term);
}

} // namespace idempo
