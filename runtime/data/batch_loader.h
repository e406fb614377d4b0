// Prefetching, multi-threaded loader: N worker threads decode and resize images of a
// deterministic sample stream (epoch e = the manifest shuffled with seed + e), one packer thread
// packs them in stream order into micro-batches, and a bounded queue holds up to
// `prefetchBatches` of them. next() is called from the training thread only; the constructor
// starts the threads and the destructor joins them.
#pragma once

#include "core/run_config.h"
#include "runtime/data/manifest.h"
#include "runtime/data/micro_batch.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace wb::rt {

struct LoaderOptions {
    bool mock = false;
    int mockImageSize = 0;       ///< mock: noise image side (0 = text only)
    int numWorkers = 2;
    int prefetchBatches = 4;
    int rows = 4;                ///< micro_batch_size
    int seqLength = 256;
    int captionMaxTokens = 64;
    int64_t minPixels = 32 * 32;
    int64_t maxPixels = 128 * 128;
    int patchSize = 16;
    int temporalPatchSize = 1;
    int mergeSize = 2;
    uint64_t seed = 1234;
    int64_t startSampleSeq = 0;  ///< resume: first stream position to load

    static LoaderOptions fromConfig(const core::RunConfig& config);
};

/// What next() throws when a loader thread failed: the thread stops the loader instead of letting
/// the exception end the process (std::terminate). `outOfMemory`: std::bad_alloc in a worker or the
/// packer (host memory for decoding, resizing or packing).
struct LoaderError : std::runtime_error {
    LoaderError(const std::string& message, bool outOfMemory, bool badData = false)
        : std::runtime_error(message), outOfMemory(outOfMemory), badData(badData) {}
    bool outOfMemory;
    bool badData;  ///< the data cannot be trained on (no entry of the manifest loads): exit 2
};

class BatchLoader {
public:
    /// `entries` must be non-empty (mock without a manifest passes synthetic captions).
    BatchLoader(std::vector<ManifestEntry> entries, LoaderOptions options);
    ~BatchLoader();
    BatchLoader(const BatchLoader&) = delete;
    BatchLoader& operator=(const BatchLoader&) = delete;

    /// Blocks until a micro-batch is ready; nullopt after stop() or once `interrupted` (checked
    /// every 100 ms, e.g. a SIGTERM flag) says so. Throws LoaderError when a loader thread failed
    /// (then every thread has stopped), also when a whole pass over the manifest was skipped (no
    /// image decodes, or every sample is too long): badData. Training thread only.
    std::optional<MicroBatch> next(const std::function<bool()>& interrupted = {});
    /// Wakes every thread and makes next() return nullopt. Any thread.
    void stop();

    /// Decodes one sample (stream position `seq`); public for tests. Any thread.
    PreparedSample prepare(int64_t seq) const;

private:
    size_t entryIndexFor(int64_t seq) const;
    void workerLoop();
    void packerLoop();
    /// Runs a thread's loop; an exception stops the loader and is kept for next() to throw.
    void guarded(const char* thread, void (BatchLoader::*loop)());

    const std::vector<ManifestEntry> m_entries;
    const LoaderOptions m_options;
    const int64_t m_window;  // how far workers may run ahead of the packer, in samples

    std::atomic<bool> m_stop{false};
    std::atomic<int64_t> m_nextToPrepare;

    mutable std::mutex m_orderMutex;
    mutable std::map<int64_t, std::vector<size_t>> m_epochOrder;  // guarded by m_orderMutex

    std::mutex m_mutex;
    std::condition_variable m_preparedChanged;
    std::condition_variable m_queueChanged;
    std::map<int64_t, PreparedSample> m_prepared;  // guarded by m_mutex
    int64_t m_nextToPack;                          // guarded by m_mutex
    std::deque<MicroBatch> m_queue;                // guarded by m_mutex
    std::optional<LoaderError> m_failure;          // guarded by m_mutex; the first thread failure

    std::vector<std::thread> m_workers;
    std::thread m_packer;
};

}  // namespace wb::rt
