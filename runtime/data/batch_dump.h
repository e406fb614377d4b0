// Batch dumps: the first N packed micro-batches the loader produces for a config, written as raw
// little-endian arrays plus a JSON index, so another implementation (the PyTorch-eager baseline in
// benchmarks/eager/) trains on exactly the same data as moe-train. No LibTorch here.
//
// DIR/index.json:
//   {"format": "moe-train-batch-dump", "version": 1, "config": {...the run config...},
//    "batches": [{"file": "batch_0000.bin", "rows": 4, "seq_length": 4096, "images": ..,
//                 "image_tokens": .., "text_tokens": .., "pad_tokens": .., "samples": ..,
//                 "skipped_images": .., "next_sample_seq": ..,
//                 "arrays": {"token_ids": {"dtype": "int64", "shape": [4, 4096], "offset": 0,
//                                           "bytes": 131072}, ...}}, ...]}
// DIR/batch_NNNN.bin: the arrays of one micro-batch back to back, each at a 64-byte aligned
// offset. Arrays (names as in the index): token_ids, labels, pos1d int64 [B, T]; doc_ids int32
// [B, T]; pos3 int64 [3, B, T] (M-RoPE planes t, h, w); patch_values float32 [P, C];
// patch_image, patch_row, patch_col int32 [P]; image_grid_h, image_grid_w int32 [I] (in
// patches); sample_lengths int64 [S]. Field meanings: micro_batch.h.
// Functions are pure apart from their files; any thread.
#pragma once

#include "core/result.h"
#include "core/run_config.h"
#include "runtime/data/micro_batch.h"

#include <string>
#include <vector>

namespace wb::rt {

inline constexpr int kBatchDumpVersion = 1;

/// Writes `batches` to `dir` (created; existing batch files are overwritten). `configJson` is the
/// run config as JSON text, stored in the index so a reader needs nothing else.
core::Result<void> writeBatchDump(const std::string& dir, const std::string& configJson,
                                  const std::vector<MicroBatch>& batches);

/// Reads a dump back (all arrays and the counts; warnings are not stored). Errors name the file
/// and what is wrong with it (missing, truncated, wrong dtype or shape, newer version).
core::Result<std::vector<MicroBatch>> readBatchDump(const std::string& dir);

/// Runs the data loader of `config` exactly as moe-train's trainer sets it up (same manifest
/// handling, same seed, stream from position 0) and dumps its first `count` micro-batches.
/// Returns the number of micro-batches written.
core::Result<int> dumpLoaderBatches(const core::RunConfig& config, const std::string& dir, int count);

/// `moe-train --config RUN.json --dump-batches DIR --dump-count N`: loads the config, dumps, prints
/// one line; returns the process exit code (0, or 2 for a bad config or count, 1 for I/O errors).
int runBatchDumpCommand(const std::string& configPath, const std::string& dir, const std::string& countText);

/// The packed workload the loader makes of a config's data, per packed sequence of seq_length
/// tokens (means over the micro-batches' rows): what the planner needs to predict a real-data run
/// (core/planner/workload.h PackedShape reads the JSON). Patches are counted per image before the
/// spatial merge; patches_squared and sample_tokens_squared are the sums of squares that the
/// per-image vision attention and the block-diagonal decoder attention cost.
struct PackedWorkload {
    int seqLength = 0;
    double sequences = 0;  ///< rows measured
    double images = 0, patches = 0, patchesSquared = 0, imageTokens = 0, textTokens = 0, padTokens = 0;
    double samples = 0, sampleTokensSquared = 0, skippedImages = 0;
};
PackedWorkload packedWorkload(const std::vector<MicroBatch>& batches);
/// {"format": "moe-train-workload", "version": 1, "source", "manifest", "seq_length",
///  "micro_batch_size", "sequences", "per_sequence": {"images", "patches", "patches_squared",
///  "image_tokens", "text_tokens", "pad_tokens", "samples", "sample_tokens_squared", "skipped_images"}}
std::string packedWorkloadJson(const PackedWorkload& w, const core::RunConfig& config);

/// `moe-train --config RUN.json --data-stats [--dump-count N]`: the loader's first N micro-batches
/// (default 16) summarized as packedWorkloadJson on stdout; no model, no GPU. Exit 0, 2 for a bad
/// config or count, 1 when the data cannot be read.
int runDataStatsCommand(const std::string& configPath, const std::string& countText);

}  // namespace wb::rt
