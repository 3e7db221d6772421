// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace idempo::sandbox {

/// A fixed set of threads that run one round of work items at a time. Threads live as long as
/// the pool, so each keeps its one ledger connection (SqliteLedgerStore opens one per thread).
class WorkerPool final
{
public:
    explicit WorkerPool(int threads);
    ~WorkerPool();
    WorkerPool(const WorkerPool &) = delete;
    WorkerPool &operator=(const WorkerPool &) = delete;

    /// Calls `body(thread, item)` for every item in [0, items) across the threads and returns
    /// when all are done. Rethrows the first exception a body threw (the others finish first).
    void run(std::size_t items, const std::function<void(int, std::size_t)> &body);

    int size() const { return static_cast<int>(m_threads.size()); }

private:
    void loop(int thread);

    std::vector<std::thread> m_threads;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::condition_variable m_done;
    const std::function<void(int, std::size_t)> *m_body = nullptr;
    std::size_t m_items = 0;
    std::size_t m_next = 0;
    int m_busy = 0;
    std::uint64_t m_round = 0;
    bool m_stop = false;
    std::exception_ptr m_error;
};

} // namespace idempo::sandbox
