// SPDX-License-Identifier: Apache-2.0
#include "firststepspanel.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace idempo {

FirstStepsPanel::FirstStepsPanel(QWidget *parent)
    : QFrame(parent), m_title(new QLabel(tr("This ledger is empty"), this)),
      m_body(new QLabel(this)), m_sandbox(new QPushButton(tr("Run a sandbox scenario…"), this)),
      m_connect(new QPushButton(this))
{
    setFrameShape(QFrame::StyledPanel);
    setMaximumWidth(820);
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);
    QFont title = m_title->font();
    title.setPointSizeF(title.pointSizeF() * 1.6);
    title.setBold(true);
    m_title->setFont(title);
    m_body->setWordWrap(true);
    m_body->setTextFormat(Qt::RichText);
    m_body->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(32, 28, 32, 28);
    layout->setSpacing(14);
    layout->addWidget(m_title);
    layout->addWidget(m_body);
    auto *buttons = new QHBoxLayout;
    // The first step stands out; neither button takes Enter, which belongs to no form here.
    m_sandbox->setDefault(true);
    m_sandbox->setAutoDefault(false);
    m_connect->setAutoDefault(false);
    buttons->addWidget(m_sandbox);
    buttons->addWidget(m_connect);
    buttons->addStretch(1);
    layout->addLayout(buttons);
    connect(m_sandbox, &QPushButton::clicked, this,
            [this] { Q_EMIT linkActivated(QLatin1String(SandboxLink)); });
    connect(m_connect, &QPushButton::clicked, this,
            [this] { Q_EMIT linkActivated(QLatin1String(ConnectLink)); });
    setLedger(true, QString());
}

void FirstStepsPanel::setLedger(bool embedded, const QString &address)
{
    if (embedded) {
        m_body->setText(tr(
            "<p>No operation has been recorded here yet, so there is nothing to watch.</p>"
            "<p><b>See it at work:</b> a sandbox scenario runs simulated agents (KYC onboarding, "
            "payment "
            "refunds, travel bookings, invoice emails) while crashes and duplicate deliveries are "
            "injected; "
            "every view then fills, and the invariant check shows that nothing happened twice.</p>"
            "<p><b>Watch your own agents:</b> open the PostgreSQL ledger their workers share (a "
            "<tt>postgresql://</tt> URI or <tt>service=</tt> name; passwords stay in "
            "~/.pgpass).</p>"));
        m_connect->setText(tr("Open a PostgreSQL ledger…"));
    } else {
        m_body->setText(
            tr("<p>No agent has recorded an operation on <tt>%1</tt> yet.</p>"
               "<p>Operations appear here as soon as workers claim them on this ledger, e.g. "
               "<tt>IDEMPO_LEDGER='%1' idempo worker</tt>, or through the Python client.</p>"
               "<p>The console's sandbox runs on the embedded ledger; on this one, "
               "<tt>idempo sandbox run --processes</tt> runs it with worker processes.</p>")
                .arg(address.toHtmlEscaped()));
        m_connect->setText(tr("Open another ledger…"));
    }
    m_sandbox->setVisible(embedded);
}

QString FirstStepsPanel::guidance(bool embedded)
{
    if (embedded)
        return tr("This ledger is empty: <a href='%1'>run a sandbox scenario</a> to see the "
                  "console at work, "
                  "or <a href='%2'>open a PostgreSQL ledger</a>.")
            .arg(QLatin1String(SandboxLink), QLatin1String(ConnectLink));
    return tr("No agent has recorded an operation on this ledger yet. <a href='%1'>Open another "
              "ledger</a>.")
        .arg(QLatin1String(ConnectLink));
}

} // namespace idempo
