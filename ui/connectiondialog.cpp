// SPDX-License-Identifier: Apache-2.0
#include "connectiondialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

#include "connectionprofiles.h"

namespace idempo {

ConnectionDialog::ConnectionDialog(const QString &currentUrl, QWidget *parent)
    : QDialog(parent), m_profiles(new QListWidget(this)), m_name(new QLineEdit(this)),
      m_url(new QLineEdit(this)), m_error(new QLabel(this))
{
    setWindowTitle(tr("Open a ledger"));
    auto *layout = new QVBoxLayout(this);
    m_error->setWordWrap(true);
    m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_error->hide();
    layout->addWidget(m_error);
    layout->addWidget(new QLabel(tr("Saved ledgers"), this));
    for (const ConnectionProfiles::Profile &p : ConnectionProfiles::load()) {
        auto *item = new QListWidgetItem(p.name + QStringLiteral("\n  ") + p.url, m_profiles);
        item->setData(Qt::UserRole, p.url);
        item->setData(Qt::UserRole + 1, p.name);
        if (p.url == currentUrl)
            m_profiles->setCurrentItem(item);
    }
    layout->addWidget(m_profiles, 1);
    auto *form = new QFormLayout;
    form->addRow(tr("&Name"), m_name);
    form->addRow(tr("&Address"), m_url);
    m_url->setPlaceholderText(tr("sqlite:/path/ledger.db · postgresql://host/db · service=name"));
    layout->addLayout(form);
    auto *note = new QLabel(
        tr("Passwords are never stored here: libpq reads them from ~/.pgpass, PGPASSFILE "
           "or a service file."),
        this);
    note->setWordWrap(true);
    layout->addWidget(note);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel, this);
    auto *remove = buttons->addButton(tr("Remove"), QDialogButtonBox::ActionRole);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &ConnectionDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &ConnectionDialog::reject);
    connect(remove, &QPushButton::clicked, this, [this] {
        if (m_profiles->currentRow() > 0) {
            delete m_profiles->currentItem();
            saveProfiles();
        }
    });
    connect(m_profiles, &QListWidget::currentItemChanged, this, [this](QListWidgetItem *item) {
        if (!item)
            return;
        m_name->setText(item->data(Qt::UserRole + 1).toString());
        m_url->setText(item->data(Qt::UserRole).toString());
    });
    connect(m_profiles, &QListWidget::itemDoubleClicked, this, &ConnectionDialog::accept);
    if (!m_profiles->currentItem())
        m_url->setText(currentUrl);
    else
        m_url->setText(m_profiles->currentItem()->data(Qt::UserRole).toString());
    resize(560, 420);
}

QString ConnectionDialog::url() const
{
    return m_url->text().trimmed();
}

void ConnectionDialog::setError(const QString &message, const QString &hint)
{
    m_error->setText(
        tr("<b style='color:#d64545'>Could not open the ledger.</b><br>%1<br><i>%2</i>")
            .arg(message.toHtmlEscaped(), hint.toHtmlEscaped()));
    m_error->show();
}

void ConnectionDialog::accept()
{
    const QString refusal = ConnectionProfiles::refusal(url());
    if (url().isEmpty() || !refusal.isEmpty()) {
        setError(url().isEmpty() ? tr("No address given.") : refusal,
                 tr("Enter sqlite:PATH, a postgresql:// URI without a password, or service=NAME."));
        return;
    }
    // What libpq cannot parse fails to open with its reason, and is not kept.
    const QString kept = ConnectionProfiles::storable(url());
    bool known = kept.isEmpty();
    for (int i = 0; i < m_profiles->count(); ++i)
        known = known || m_profiles->item(i)->data(Qt::UserRole).toString() == kept;
    if (!known) {
        const QString name = m_name->text().trimmed().isEmpty() ? kept : m_name->text().trimmed();
        auto *item = new QListWidgetItem(name + QStringLiteral("\n  ") + kept, m_profiles);
        item->setData(Qt::UserRole, kept);
        item->setData(Qt::UserRole + 1, name);
        saveProfiles();
    }
    QDialog::accept();
}

void ConnectionDialog::saveProfiles()
{
    QList<ConnectionProfiles::Profile> profiles;
    for (int i = 0; i < m_profiles->count(); ++i)
        profiles.append({m_profiles->item(i)->data(Qt::UserRole + 1).toString(),
                         m_profiles->item(i)->data(Qt::UserRole).toString()});
    ConnectionProfiles::save(profiles);
}

} // namespace idempo
