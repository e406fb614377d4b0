// The metrics stream, schema v1 (DESIGN.md §3.2): one JSON object per line in DIR/metrics.jsonl,
// written by rank 0 of moe-train, read by the store and the watchers. Records, their JSON form,
// and an incremental line reader that tolerates a torn last line. Any thread (no shared state).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace wb::core {

inline constexpr int kMetricsSchemaVersion = 1;

/// First line of a stream: what produced it and the constants needed to read the steps.
struct MetaRecord {
    std::string runId;
    std::string configHash;
    std::string name;
    int worldSize = 1;
    std::string layout;               ///< e.g. "tp1 pp1 cp1 ep1 etp1 dp1"
    std::string device;               ///< e.g. "cpu" or "NVIDIA H200"
    std::string dataSource;           ///< "real" | "mock" — every comparison must see this
    double peakTflops = 0.0;          ///< peak dense bf16 TFLOP/s per GPU used for MFU (0 = n/a)
    double modelFlopsPerSample = 0.0; ///< nominal FLOPs of one sample (fwd+bwd), for reference
    int seqLength = 0;
    int microBatchSize = 0;
    int globalBatchSize = 0;
    std::map<std::string, std::string> versions;  ///< "moe-train", "libtorch", "cuda", "nccl"
    /// What the steps' token counts are: "" = effective tokens (text + image, no padding, as
    /// moe-train counts them); "slots" = GBS × seq, padding included (an imported Megatron log,
    /// which counts nothing finer). Written only when not "".
    std::string tokenCounting;
    /// moe-train's environment switches set for the run (kernel paths, experimental overlaps,
    /// collective tuning: docs/runtime.md "Environment switches"), name → value. Not in the config,
    /// so two runs that differ only here would look alike. Written only when not empty.
    std::map<std::string, std::string> runtimeSwitches;
};

/// `runtimeSwitches` as one line, "WB_OVERLAP_SMS=24, WB_ROW_KERNELS=1" ("" = none): what moe-train's
/// info event says and what the compare view shows.
std::string switchesText(const std::map<std::string, std::string>& switches);

/// One optimizer step, values already reduced over ranks (max for times/memory, sum for tokens).
struct StepRecord {
    int64_t step = 0;
    double time = 0.0;        ///< unix seconds at the end of the step
    double stepMs = 0.0;
    double dataMs = 0.0;      ///< time the loop waited for the loader
    double visionMs = 0.0;
    double projectorMs = 0.0;
    double decoderMs = 0.0;   ///< decoder forward incl. loss
    double backwardMs = 0.0;
    double optimizerMs = 0.0;
    int64_t images = 0;
    int64_t imageTokens = 0;  ///< decoder tokens that come from images (after merge)
    int64_t textTokens = 0;
    int64_t padTokens = 0;
    int64_t effectiveTokens = 0;  ///< imageTokens + textTokens (padding excluded)
    int64_t skippedImages = 0;    ///< missing/corrupt images skipped during this step
    double loss = 0.0;
    double auxLoss = 0.0;
    double gradNorm = 0.0;
    double lr = 0.0;
    double memAllocGib = 0.0;
    double memReservedGib = 0.0;
    double memPeakGib = 0.0;
    double tokensPerSPerGpu = 0.0;  ///< effective tokens / s / GPU
    double tflopsPerGpu = 0.0;
    double mfu = 0.0;               ///< 0..1
};

/// Every StepRecord field but `step`, with its metrics.jsonl key: the one list the stream writer,
/// its readers and the CSV export all use (doubles, then counts).
struct StepDoubleField {
    const char* key;
    double StepRecord::*member;
};
struct StepIntField {
    const char* key;
    int64_t StepRecord::*member;
};

inline constexpr StepDoubleField kStepDoubleFields[] = {
    {"time", &StepRecord::time},
    {"step_ms", &StepRecord::stepMs},
    {"data_ms", &StepRecord::dataMs},
    {"vision_ms", &StepRecord::visionMs},
    {"projector_ms", &StepRecord::projectorMs},
    {"decoder_ms", &StepRecord::decoderMs},
    {"backward_ms", &StepRecord::backwardMs},
    {"optimizer_ms", &StepRecord::optimizerMs},
    {"loss", &StepRecord::loss},
    {"aux_loss", &StepRecord::auxLoss},
    {"grad_norm", &StepRecord::gradNorm},
    {"lr", &StepRecord::lr},
    {"mem_alloc_gib", &StepRecord::memAllocGib},
    {"mem_reserved_gib", &StepRecord::memReservedGib},
    {"mem_peak_gib", &StepRecord::memPeakGib},
    {"tokens_per_s_per_gpu", &StepRecord::tokensPerSPerGpu},
    {"tflops_per_gpu", &StepRecord::tflopsPerGpu},
    {"mfu", &StepRecord::mfu},
};

inline constexpr StepIntField kStepIntFields[] = {
    {"images", &StepRecord::images},
    {"image_tokens", &StepRecord::imageTokens},
    {"text_tokens", &StepRecord::textTokens},
    {"pad_tokens", &StepRecord::padTokens},
    {"effective_tokens", &StepRecord::effectiveTokens},
    {"skipped_images", &StepRecord::skippedImages},
};

struct EventRecord {
    double time = 0.0;
    std::string level;  ///< info | warning | error
    std::string msg;
    std::optional<int64_t> step;
};

struct EndRecord {
    double time = 0.0;
    std::string status;  ///< finished | failed | oom | comm_error | stopped | bad_config
    int exitCode = 0;
    std::optional<int64_t> step;  ///< last completed step
};

/// One GPU's system metrics at a sample (NVML, sampled off the training thread): what W&B, MLflow
/// and Aim show beside the loss, so a throttling clock or a hot GPU is seen beside a slow step.
/// NaN / -1: the device did not report it.
struct GpuSample {
    int index = 0;                ///< NVML device index on the sampling node
    double utilPct = NAN;         ///< kernel-busy share of the last sample period, %
    double memUsedGib = NAN;
    double memTotalGib = NAN;
    double powerW = NAN;
    double tempC = NAN;
    double smClockMhz = NAN;
};

/// {"v":1,"type":"gpu","time":..,"step":..,"gpus":[{"index":0,"util_pct":..,...}]}: the node's
/// GPUs at one sample; `step` is the last step completed when it was written.
struct GpuRecord {
    double time = 0.0;
    std::optional<int64_t> step;
    std::vector<GpuSample> gpus;
};

using MetricsRecord = std::variant<MetaRecord, StepRecord, EventRecord, EndRecord, GpuRecord>;

/// One sample over the node's GPUs, as the chart and compare show it: mean utilization and
/// power, the hottest temperature, the slowest SM clock (a throttling GPU shows). NaN where no GPU
/// reported that sensor.
struct GpuSummary {
    double utilPct = NAN, powerW = NAN, tempC = NAN, smClockMhz = NAN;
};
GpuSummary summarizeGpus(const GpuRecord& record);

/// Serializes one record as a single line (no trailing newline). Non-finite numbers become null.
std::string toJsonLine(const MetricsRecord& record);

/// Parses one line. nullopt if it is not valid JSON, not an object, has an unknown "type", or a
/// "v" other than 1. Unknown extra fields are ignored (forward compatible).
std::optional<MetricsRecord> parseMetricsLine(std::string_view line);

/// Feeds bytes in arbitrary chunks; yields the records of every complete ('\n'-terminated) line.
/// A torn last line is held back until its newline arrives, so `consumedBytes()` is always a safe
/// offset to resume from. Blank lines are skipped; unparsable lines are counted, not fatal.
class MetricsLineReader {
public:
    struct Chunk {
        std::vector<MetricsRecord> records;
        int64_t consumedBytes = 0;  ///< bytes of complete lines in this feed (incl. held-back prefix)
        int64_t malformedLines = 0;
    };

    Chunk feed(std::string_view bytes);

    int64_t consumedBytes() const { return m_consumed; }   ///< total over all feeds
    int64_t malformedLines() const { return m_malformed; }
    int64_t pendingBytes() const { return static_cast<int64_t>(m_pending.size()); }

private:
    std::string m_pending;  // bytes after the last '\n' seen
    int64_t m_consumed = 0;
    int64_t m_malformed = 0;
};

/// Maps an exit code of moe-train (DESIGN.md §3.1) to its status word.
std::string statusForExitCode(int exitCode);

}  // namespace wb::core
