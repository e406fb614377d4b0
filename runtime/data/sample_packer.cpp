// Sample packing (see sample_packer.h). One thread (the loader's packer thread, or a test).
#include "runtime/data/sample_packer.h"

#include "runtime/data/tokenizer.h"

#include <algorithm>

namespace wb::rt {

SamplePacker::SamplePacker(int rows, int seqLength, int mergeSize, int patchDim)
    : m_rows(rows), m_seqLength(seqLength), m_mergeSize(mergeSize), m_patchDim(patchDim),
      m_rowSamples(rows), m_rowUsed(rows, 0)
{
}

static int64_t imageTokensOf(const PreparedSample& s, int merge)
{
    return s.hasImage ? s.image.numPatches() / (static_cast<int64_t>(merge) * merge) : 0;
}

int64_t SamplePacker::tokensFor(const PreparedSample& sample) const
{
    const int64_t fixed = imageTokensOf(sample, m_mergeSize) + (sample.hasImage ? 0 : 1) + 1;
    return fixed + std::min<int64_t>(static_cast<int64_t>(sample.caption.size()),
                                     std::max<int64_t>(0, m_seqLength - fixed));
}

bool SamplePacker::tryAdd(PreparedSample& sample)
{
    const int64_t need = tokensFor(sample);
    for (int row = 0; row < m_rows; ++row) {
        if (m_rowUsed[row] + need <= m_seqLength) {
            m_rowUsed[row] += need;
            m_rowSamples[row].push_back(std::move(sample));
            ++m_placed;
            return true;
        }
    }
    return false;
}

void SamplePacker::countSkipped(const PreparedSample& sample)
{
    ++m_skipped;
    if (m_warnings.size() < 8)
        m_warnings.push_back(sample.warning);
}

void SamplePacker::appendSample(MicroBatch& b, int row, int offset, PreparedSample& s, int docId) const
{
    const int64_t base = static_cast<int64_t>(row) * m_seqLength + offset;
    const int64_t total = static_cast<int64_t>(m_rows) * m_seqLength;
    const int64_t nImg = imageTokensOf(s, m_mergeSize);
    const int64_t length = tokensFor(s);
    const int64_t textStart = s.hasImage ? nImg : 1;  // first token that is a loss target
    std::vector<int64_t> ids;
    ids.reserve(length);
    ids.insert(ids.end(), nImg, kImageId);
    if (!s.hasImage)
        ids.push_back(kBosId);
    ids.insert(ids.end(), s.caption.begin(), s.caption.begin() + (length - static_cast<int64_t>(ids.size()) - 1));
    ids.push_back(kEosId);

    const int mergedW = s.hasImage ? s.image.gridW / m_mergeSize : 0;
    const int mergedH = s.hasImage ? s.image.gridH / m_mergeSize : 0;
    const int64_t textPos0 = std::max(mergedH, mergedW);  // M-RoPE: text continues after the image
    for (int64_t j = 0; j < length; ++j) {
        const int64_t at = base + j;
        b.tokenIds[at] = ids[j];
        b.labels[at] = (j + 1 < length && j + 1 >= textStart) ? ids[j + 1] : kIgnoreLabel;
        b.docIds[at] = docId;
        b.pos1d[at] = j;
        if (j < nImg) {
            b.pos3[at] = 0;
            b.pos3[total + at] = j / mergedW;
            b.pos3[2 * total + at] = j % mergedW;
        } else {
            const int64_t p = textPos0 + (j - nImg);
            b.pos3[at] = b.pos3[total + at] = b.pos3[2 * total + at] = p;
        }
    }
    if (s.hasImage) {
        const int32_t imageIndex = static_cast<int32_t>(b.images);
        b.patchPixels.insert(b.patchPixels.end(), s.image.pixels.begin(), s.image.pixels.end());
        b.temporalPatchSize = s.image.temporalPatchSize;
        b.patchImage.insert(b.patchImage.end(), s.image.numPatches(), imageIndex);
        b.patchRow.insert(b.patchRow.end(), s.image.patchRow.begin(), s.image.patchRow.end());
        b.patchCol.insert(b.patchCol.end(), s.image.patchCol.begin(), s.image.patchCol.end());
        b.imageGridH.push_back(s.image.gridH);
        b.imageGridW.push_back(s.image.gridW);
        ++b.images;
    }
    b.imageTokens += nImg;
    b.textTokens += length - nImg;
    b.sampleLengths.push_back(length);
    ++b.samples;
}

MicroBatch SamplePacker::take(int64_t nextSampleSeq)
{
    MicroBatch b;
    b.rows = m_rows;
    b.seqLength = m_seqLength;
    const int64_t total = static_cast<int64_t>(m_rows) * m_seqLength;
    b.tokenIds.assign(total, kPadId);
    b.labels.assign(total, kIgnoreLabel);
    b.docIds.assign(total, -1);
    b.pos1d.assign(total, 0);
    b.pos3.assign(3 * total, 0);
    // Rows are emitted in order so that image order equals the row-major order of image tokens.
    int docId = 0;
    for (int row = 0; row < m_rows; ++row) {
        int offset = 0;
        for (PreparedSample& s : m_rowSamples[row]) {
            appendSample(b, row, offset, s, docId++);
            offset += static_cast<int>(tokensFor(s));
        }
        m_rowSamples[row].clear();
        m_rowUsed[row] = 0;
    }
    b.padTokens = total - b.imageTokens - b.textTokens;
    b.skippedImages = m_skipped;
    b.warnings = std::move(m_warnings);
    b.nextSampleSeq = nextSampleSeq;
    m_warnings.clear();
    m_skipped = 0;
    m_placed = 0;
    return b;
}

}  // namespace wb::rt
