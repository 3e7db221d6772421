// SPDX-License-Identifier: Apache-2.0
#include "workerpool.h"

#include <utility>

namespace idempo::sandbox {

WorkerPool::WorkerPool(int threads)
{
    for (int i = 0; i < threads; ++i)
        m_threads.emplace_back([this, i] { loop(i); });
}

WorkerPool::~WorkerPool()
{
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    for (auto &t : m_threads)
        t.join();
}

void WorkerPool::run(std::size_t items, const std::function<void(int, std::size_t)> &body)
{
    std::unique_lock lock(m_mutex);
    m_body = &body;
    m_items = items;
    m_next = 0;
    m_busy = static_cast<int>(m_threads.size());
    m_error = nullptr;
    ++m_round;
    m_wake.notify_all();
    m_done.wait(lock, [this] { return m_busy == 0; });
    m_body = nullptr;
    if (m_error)
        std::rethrow_exception(std::exchange(m_error, nullptr));
}

void WorkerPool::loop(int thread)
{
    std::uint64_t seen = 0;
    std::unique_lock lock(m_mutex);
    for (;;) {
        m_wake.wait(lock, [&] { return m_stop || m_round != seen; });
        if (m_stop)
            return;
        seen = m_round;
        while (m_next < m_items) {
            const std::size_t item = m_next++;
            lock.unlock();
            try {
                (*m_body)(thread, item);
            } catch (...) {
                lock.lock();
                if (!m_error)
                    m_error = std::current_exception();
                m_next = m_items;
                continue;
            }
            lock.lock();
        }
        if (--m_busy == 0)
            m_done.notify_one();
    }
}

} // namespace idempo::sandbox
