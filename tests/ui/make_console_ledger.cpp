// SPDX-License-Identifier: Apache-2.0
// Writes ConsoleFixture's prepared ledger to PATH: make_console_ledger [--four-eyes] /tmp/demo.db
// With --four-eyes the refund also waits for a second approver (a row in Four eyes).
#include <cstdio>
#include <cstring>

#include <QCoreApplication>
#include <QFile>

#include "consolefixture.h"

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    const bool fourEyes = argc == 3 && std::strcmp(argv[1], "--four-eyes") == 0;
    if (argc != 2 && !fourEyes) {
        std::fprintf(stderr, "usage: make_console_ledger [--four-eyes] PATH\n");
        return 64;
    }
    const QString path = QString::fromLocal8Bit(argv[argc - 1]);
    QFile::remove(path);
    idempo::test::ConsoleFixture fixture(path);
    fixture.populate();
    if (fourEyes && fixture.approveRefundOnce() != "pending") {
        std::fprintf(stderr, "make_console_ledger: the refund's first approval was not recorded "
                             "as waiting for a second approver\n");
        return 70;
    }
    std::printf("sqlite:%s\n", argv[argc - 1]);
    return 0;
}
