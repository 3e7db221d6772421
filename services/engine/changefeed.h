// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace idempo {

/// How a live view learns that someone wrote to the ledger, without reading it: what
/// LedgerStore::changeFeed() offers. A feed either pushes, on a connection of its own whose
/// socket() turns readable when changes arrive, or is polled (socket() is -1) on the calling
/// thread's connection. Use it from one thread.
class ChangeFeed
{
public:
    virtual ~ChangeFeed() = default;

    /// The descriptor to watch for pushed changes; -1 for a polled feed.
    virtual int socket() const = 0;

    /// True when the ledger was written since the previous call; a polled feed's first call
    /// only takes its starting point. Throws Error(LedgerUnavailable) when the feed's connection
    /// is lost.
    virtual bool changed() = 0;

    /// One round trip on a pushing feed's connection, which a silent socket cannot reveal as
    /// dropped; a polled feed does nothing. Throws Error(LedgerUnavailable) when it is lost.
    virtual void ping() = 0;
};

} // namespace idempo
