// Packs prepared samples into a micro-batch (first fit over the rows, so short captions fill the
// gaps). Deterministic: the same samples in the same order give the same micro-batch. One thread.
#pragma once

#include "runtime/data/micro_batch.h"

namespace wb::rt {

class SamplePacker {
public:
    SamplePacker(int rows, int seqLength, int mergeSize, int patchDim);

    /// Tokens the sample takes (image tokens + bos/caption/eos), after truncating the caption.
    int64_t tokensFor(const PreparedSample& sample) const;

    /// Places the sample in the first row with room. False (sample untouched) when none has room:
    /// the micro-batch is full, call take() and add it again.
    bool tryAdd(PreparedSample& sample);

    void countSkipped(const PreparedSample& sample);
    bool empty() const { return m_placed == 0; }

    /// Builds the micro-batch (padding the rows) and starts a new one.
    MicroBatch take(int64_t nextSampleSeq);

private:
    void appendSample(MicroBatch& batch, int row, int offset, PreparedSample& sample, int docId) const;

    int m_rows;
    int m_seqLength;
    int m_mergeSize;
    int m_patchDim;
    std::vector<std::vector<PreparedSample>> m_rowSamples;
    std::vector<int64_t> m_rowUsed;
    int64_t m_placed = 0;
    int64_t m_skipped = 0;
    std::vector<std::string> m_warnings;
};

}  // namespace wb::rt
