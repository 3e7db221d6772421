// SPDX-License-Identifier: Apache-2.0
#include <QCoreApplication>

#include "cli.h"

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("idempo"));
    return idempo::cli::run(argc, argv);
}
