// The prefetching loader (see batch_loader.h for the threads and who may call what).
#include "runtime/data/batch_loader.h"

#include "runtime/data/sample_packer.h"
#include "runtime/data/tokenizer.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>

namespace wb::rt {

LoaderOptions LoaderOptions::fromConfig(const core::RunConfig& c)
{
    LoaderOptions o;
    o.mock = c.data.source == "mock";
    o.mockImageSize = c.data.mockImageSize;
    o.numWorkers = std::max(1, c.data.numWorkers);
    o.prefetchBatches = std::max(1, c.data.prefetchBatches);
    o.rows = c.train.microBatchSize;
    o.seqLength = c.train.seqLength;
    o.captionMaxTokens = c.data.captionMaxTokens;
    o.minPixels = c.data.minPixels;
    o.maxPixels = c.data.maxPixels;
    o.patchSize = c.model.vision.patchSize;
    o.temporalPatchSize = c.model.vision.temporalPatchSize;
    o.mergeSize = c.model.vision.spatialMergeSize;
    o.seed = c.train.seed;
    return o;
}

BatchLoader::BatchLoader(std::vector<ManifestEntry> entries, LoaderOptions options)
    : m_entries(std::move(entries)), m_options(options),
      m_window(std::max<int64_t>(64, int64_t{options.rows} * options.prefetchBatches * 8)),
      m_nextToPrepare(options.startSampleSeq), m_nextToPack(options.startSampleSeq)
{
    for (int i = 0; i < m_options.numWorkers; ++i)
        m_workers.emplace_back([this] { guarded("decoder", &BatchLoader::workerLoop); });
    m_packer = std::thread([this] { guarded("packer", &BatchLoader::packerLoop); });
}

BatchLoader::~BatchLoader()
{
    stop();
    for (std::thread& t : m_workers)
        t.join();
    m_packer.join();
}

void BatchLoader::stop()
{
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_preparedChanged.notify_all();
    m_queueChanged.notify_all();
}

void BatchLoader::guarded(const char* thread, void (BatchLoader::*loop)())
{
    std::optional<LoaderError> failure;
    try {
        (this->*loop)();
        return;
    } catch (const std::bad_alloc&) {
        failure.emplace(std::string("the data loader's ") + thread +
                            " thread ran out of host memory (std::bad_alloc) while decoding, resizing or packing "
                            "images — fix: lower data.max_pixels (or data.mock_image_size), data.num_workers or "
                            "data.prefetch_batches, or give the process more memory",
                        true);
    } catch (const LoaderError& e) {
        failure.emplace(e);
    } catch (const std::exception& e) {
        failure.emplace(std::string("the data loader's ") + thread + " thread failed: " + e.what(), false);
    }
    {
        std::lock_guard lock(m_mutex);
        if (!m_failure)
            m_failure = std::move(failure);
        m_stop = true;
    }
    m_preparedChanged.notify_all();
    m_queueChanged.notify_all();
}

size_t BatchLoader::entryIndexFor(int64_t seq) const
{
    const int64_t n = static_cast<int64_t>(m_entries.size());
    const int64_t epoch = seq / n;
    std::lock_guard lock(m_orderMutex);
    auto it = m_epochOrder.find(epoch);
    if (it == m_epochOrder.end()) {
        // Own Fisher–Yates over mt19937_64: std::shuffle's algorithm is implementation-defined, and
        // the order must not change with the standard library.
        std::vector<size_t> order(m_entries.size());
        std::iota(order.begin(), order.end(), size_t{0});
        std::mt19937_64 rng(m_options.seed + static_cast<uint64_t>(epoch) * 0x9E3779B97F4A7C15ull);
        for (size_t i = order.size(); i > 1; --i)
            std::swap(order[i - 1], order[rng() % i]);
        if (m_epochOrder.size() > 2)
            m_epochOrder.erase(m_epochOrder.begin());
        it = m_epochOrder.emplace(epoch, std::move(order)).first;
    }
    return it->second[static_cast<size_t>(seq % n)];
}

PreparedSample BatchLoader::prepare(int64_t seq) const
{
    const ManifestEntry& entry = m_entries[entryIndexFor(seq)];
    PreparedSample s;
    s.seq = seq;
    s.caption = tokenize(entry.caption, m_options.captionMaxTokens);
    const int factor = m_options.patchSize * m_options.mergeSize;
    RgbImage image;
    if (m_options.mock) {
        if (m_options.mockImageSize <= 0)
            return s;
        const int side = std::max(factor, m_options.mockImageSize / factor * factor);
        image.width = image.height = side;
        image.rgb.resize(static_cast<size_t>(side) * side * 3);
        std::mt19937 rng(static_cast<uint32_t>(m_options.seed ^ static_cast<uint64_t>(seq)));
        for (uint8_t& v : image.rgb)
            v = static_cast<uint8_t>(rng() & 0xff);
    } else {
        if (entry.imagePath.empty())
            return s;  // a caption-only line is a text sample
        auto decoded = decodeImage(entry.imagePath);
        if (!decoded) {
            s.skipped = true;
            s.warning = "skipped image: " + decoded.error().toString();
            return s;
        }
        int w = 0, h = 0;
        fitToPixelBudget(decoded->width, decoded->height, m_options.minPixels, m_options.maxPixels,
                         factor, w, h);
        image = resizeImage(*decoded, w, h);
    }
    s.hasImage = true;
    s.image = patchify(image, m_options.patchSize, m_options.temporalPatchSize, m_options.mergeSize);
    return s;
}

void BatchLoader::workerLoop()
{
    while (!m_stop) {
        const int64_t seq = m_nextToPrepare.fetch_add(1);
        {
            // Do not run further ahead of the packer than the window (bounded memory).
            std::unique_lock lock(m_mutex);
            m_preparedChanged.wait(lock, [&] { return m_stop || seq < m_nextToPack + m_window; });
            if (m_stop)
                return;
        }
        PreparedSample sample = prepare(seq);
        {
            std::lock_guard lock(m_mutex);
            m_prepared.emplace(seq, std::move(sample));
        }
        m_preparedChanged.notify_all();
    }
}

void BatchLoader::packerLoop()
{
    SamplePacker packer(m_options.rows, m_options.seqLength, m_options.mergeSize,
                        patchDim(m_options.patchSize, m_options.temporalPatchSize));
    std::optional<PreparedSample> carry;  // the sample that did not fit the previous micro-batch
    // Samples skipped since the last one packed: a whole pass over the manifest of them means no
    // entry can ever load (every image missing, corrupt or too large), and the step would wait
    // forever.
    size_t skippedInARow = 0, tooLong = 0;
    std::string firstWarning;
    while (true) {
        PreparedSample sample;
        int64_t seq = 0;
        if (carry) {
            sample = std::move(*carry);
            carry.reset();
            seq = sample.seq;
        } else {
            std::unique_lock lock(m_mutex);
            m_preparedChanged.wait(lock, [&] { return m_stop || m_prepared.count(m_nextToPack) > 0; });
            if (m_stop)
                return;
            auto node = m_prepared.extract(m_nextToPack);
            sample = std::move(node.mapped());
            seq = m_nextToPack++;
            lock.unlock();
            m_preparedChanged.notify_all();  // workers waiting on the window
        }
        // A sample the workers did not skip can still be too long for a sequence; every other skip
        // is an image that could not be read or decoded (prepare()).
        const bool overLength = !sample.skipped && packer.tokensFor(sample) > m_options.seqLength;
        if (overLength) {
            sample.skipped = true;
            sample.warning = "skipped sample: its image alone exceeds train.seq_length tokens";
        }
        if (sample.skipped) {
            packer.countSkipped(sample);
            if (skippedInARow == 0) {
                firstWarning = sample.warning;
                tooLong = 0;
            }
            tooLong += overLength;
            if (++skippedInARow >= m_entries.size())
                throw LoaderError("no sample of the manifest can be trained on: all " + std::to_string(skippedInARow) +
                                      " entries tried in a row were skipped (" + std::to_string(skippedInARow - tooLong) +
                                      " images could not be read or decoded, " + std::to_string(tooLong) +
                                      " samples exceed train.seq_length); the first: " + firstWarning +
                                      " — fix: data.manifest must name readable PNG/JPEG images (or raise "
                                      "train.seq_length / lower data.max_pixels)",
                                  false, true);
            continue;
        }
        skippedInARow = 0;
        if (packer.tryAdd(sample))
            continue;
        MicroBatch batch = packer.take(seq);  // `seq` did not fit: it is the next to load on resume
        carry = std::move(sample);
        std::unique_lock lock(m_mutex);
        m_queueChanged.wait(lock, [&] { return m_stop || static_cast<int>(m_queue.size()) < m_options.prefetchBatches; });
        if (m_stop)
            return;
        m_queue.push_back(std::move(batch));
        lock.unlock();
        m_queueChanged.notify_all();
    }
}

std::optional<MicroBatch> BatchLoader::next(const std::function<bool()>& interrupted)
{
    std::unique_lock lock(m_mutex);
    while (!m_queueChanged.wait_for(lock, std::chrono::milliseconds(100), [&] { return m_stop || !m_queue.empty(); }))
        if (interrupted && interrupted())
            return std::nullopt;
    if (m_failure)
        throw *m_failure;
    if (m_stop)
        return std::nullopt;
    MicroBatch batch = std::move(m_queue.front());
    m_queue.pop_front();
    lock.unlock();
    m_queueChanged.notify_all();
    return batch;
}

}  // namespace wb::rt
