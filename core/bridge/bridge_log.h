// Reading a Megatron-Bridge (or Megatron-LM) training log: the job's stdout/stderr as Slurm or a
// redirect wrote it. Formats, from the public sources (docs/bridge-import.md cites the lines):
// - the per-iteration line of `training_log` (Megatron-LM megatron/training/training.py and
//   Bridge src/megatron/bridge/training/utils/train_utils.py):
//     " [2025-08-01 07:19:37] iteration        2/    5000 | consumed samples:          256 |
//       elapsed time per iteration (ms): 12936.1 | throughput per GPU (TFLOP/s/GPU): 118.7 |
//       learning rate: 1.395349E-07 | global batch size:   128 | lm loss: 1.044022E+01 |
//       loss scale: 1.0 | grad norm: 26.305 | number of skipped iterations:   0 |
//       number of nan iterations:   0 |"   (one line; older Megatron has no timestamp and no
//     throughput field; every `key: value |` field is read by name, in any order);
// - the memory report after the first logged iterations, one per data-parallel-rank-0 rank:
//     Bridge:      "[Rank 0] (after 10 iterations) memory (GB) | mem-allocated-gigabytes: 30.1 |
//                   mem-max-allocated-gigabytes: 61.2 | mem-reserved-gigabytes: ... | ..."
//     Megatron-LM: "[Rank 0] (after 10 iterations) memory (MB) | allocated: 1234.5 |
//                   max allocated: 5678.9 | reserved: 6000.0 | max reserved: 6000.0";
// - the start-up facts: Megatron-LM's "using world size: 8, data-parallel size: 1, ...,
//   tensor-model-parallel size: 8, pipeline-model-parallel size: 1" and Bridge's "Configuration
//   Summary" block (`[model] Non-default values ...` then `  field: value  (Mcore default: d)`).
// Several ranks write into one file: lines may carry a launcher prefix (srun -l "3: ", torchrun
// "[default3]:" / "[rank3]:") and two ranks' records may share one physical line (a memory report
// glued to the next one); both are split and counted. Pure; any thread.
#pragma once

#include "core/metrics_schema.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wb::core::bridge {

/// One logged iteration: the values Megatron averaged over the log interval ending here.
struct IterationRecord {
    int64_t iteration = 0;
    int64_t trainIters = 0;
    std::optional<double> time;  ///< unix seconds of the line's "[YYYY-mm-dd HH:MM:SS]" (node clock, read as UTC)
    std::optional<int64_t> consumedSamples;
    std::optional<int64_t> skippedSamples;
    double elapsedMs = 0.0;
    std::optional<double> tflopsPerGpu;  ///< "throughput per GPU (TFLOP/s/GPU)"; absent in older Megatron
    std::optional<double> learningRate;
    std::optional<int64_t> globalBatchSize;
    std::map<std::string, double> losses;  ///< "lm loss", "load_balancing_loss", "mtp_1 loss", ...
    std::optional<double> lossScale;
    std::optional<double> gradNorm;
    std::optional<double> paramsNorm;
    int64_t skippedIterations = 0;
    int64_t nanIterations = 0;
    int64_t line = 0;  ///< 1-based line of the log
};

/// One rank's memory report, in GiB (converted from Bridge's GB or Megatron-LM's MB).
struct MemoryReport {
    int rank = 0;
    int64_t iteration = 0;
    std::optional<double> allocatedGib;
    std::optional<double> peakAllocatedGib;
    std::optional<double> reservedGib;
    std::optional<double> peakReservedGib;
};

/// What the start-up lines said; each may be absent.
struct LogFacts {
    std::optional<int> worldSize;
    std::optional<int> dataParallel, tensorParallel, pipelineParallel, contextParallel;
    /// Bridge's configuration summary: "model.tensor_model_parallel_size" -> "4" (Python repr).
    std::map<std::string, std::string> settings;
    /// Megatron-LM's argument dump ("  seq_length ........ 4096"): "seq_length" -> "4096".
    std::map<std::string, std::string> arguments;
    std::string flavor;  ///< "megatron-bridge" (a GB memory report or a config summary), "megatron-lm", "" unknown
    int highestRankPrefix = -1;  ///< the highest launcher rank prefix seen ("15: " -> 15)
};

/// How the lines of a log were read: the import prints it, the store keeps it.
struct LogCounts {
    int64_t lines = 0;
    int64_t iterationLines = 0;
    int64_t memoryLines = 0;
    int64_t rankPrefixedLines = 0;   ///< lines with a launcher prefix ("3: ", "[default3]:")
    int64_t sharedLines = 0;         ///< physical lines holding two ranks' records, split
    int64_t repeatedIterations = 0;  ///< iterations logged again after a restart (the later kept)
    int64_t nonUtf8Lines = 0;
    int64_t unreadableIterationLines = 0;  ///< "iteration N/M |" lines without an elapsed time
    int64_t otherLines = 0;          ///< anything else (NCCL, warnings, prints): not Megatron's metrics
    int64_t nanIterations = 0;
    int64_t skippedIterations = 0;
};

/// The parser's memory between chunks (the store keeps it as JSON beside the byte offset).
struct LogState {
    LogFacts facts;
    LogCounts counts;
    int64_t lastIteration = -1;  ///< the iteration of the last line read
    int64_t maxIteration = -1;   ///< the highest iteration read (a restart goes back below it)
    int64_t trainIters = 0;      ///< train_iters as the last iteration line states it (0: none yet)
    std::string summarySection;  ///< inside Bridge's configuration summary: its current "[section]"
    bool inArguments = false;    ///< inside Megatron-LM's "---- arguments ----" dump
};

std::string toJson(const LogState& state);
/// An empty or unreadable text gives the empty state.
LogState logStateFromJson(std::string_view json);

struct LogChunk {
    std::vector<IterationRecord> iterations;  ///< in log order
    std::vector<MemoryReport> memory;
    std::vector<EventRecord> events;          ///< restarts, NaN/skipped iterations, errors, checkpoints
    int64_t consumedBytes = 0;                ///< complete lines read (all bytes when atEnd)
    bool tornTail = false;                    ///< atEnd and the last line had no newline
};

/// Reads the complete lines of `bytes` (the log from the state's offset on), updating `state`.
/// With `atEnd` (a finished log), a last line without its newline is read too when it is a whole
/// record, else counted as torn; `consumedBytes` then covers everything.
LogChunk parseLogChunk(std::string_view bytes, LogState& state, bool atEnd, int64_t firstLine = 1);

/// A human line of what the counts say ("412 iteration lines, 8 memory reports, ...").
std::string describeCounts(const LogCounts& counts);

/// The store's step rows of a chunk: token slots (GBS × seq, padding included) per step as
/// `effective_tokens`, tokens/s/GPU from them, TFLOP/s/GPU as logged, MFU only with a peak.
struct StepContext {
    int worldSize = 0;      ///< 0: unknown (no tokens/s/GPU)
    int seqLength = 0;      ///< 0: unknown (no token counts)
    int globalBatchSize = 0;  ///< used when a line has no "global batch size"
    double peakTflops = 0.0;  ///< 0: no MFU
};
StepRecord toStepRecord(const IterationRecord& it, const StepContext& context);

}  // namespace wb::core::bridge
