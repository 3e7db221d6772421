// SPDX-License-Identifier: Apache-2.0
// Writes ConsoleFixture's prepared ledger to PATH: make_console_ledger /tmp/demo.db
#include <cstdio>

#include <QCoreApplication>
#include <QFile>

#include "consolefixture.h"

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_console_ledger PATH\n");
        return 64;
    }
    const QString path = QString::fromLocal8Bit(argv[1]);
    QFile::remove(path);
    idempo::test::ConsoleFixture fixture(path);
    fixture.populate();
    std::printf("sqlite:%s\n", argv[1]);
    return 0;
}
