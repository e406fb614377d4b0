// RunStore: the SQLite file where every run lives (runs, configs, step metrics, events).
// WAL journal, versioned schema with migrations; refuses (without touching it) a file from a
// newer schema or one locked by another writer. Ingests metrics.jsonl incrementally from a stored
// byte offset in one transaction per chunk, so re-reading never duplicates or skips a step.
// Threading: one RunStore = one SQLite connection, used from one thread at a time. Open one per
// thread (WAL allows concurrent readers with one writer).
#pragma once

#include "core/metrics_schema.h"
#include "core/result.h"
#include "core/run_prediction.h"
#include "core/run_state.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;

namespace wb::core {

inline constexpr int kStoreSchemaVersion = 5;

/// Which trainer wrote a run: the bundled runtime (its metrics.jsonl) or a Megatron-Bridge job
/// whose log was imported or followed (docs/bridge-import.md).
inline constexpr const char* kRunKindMoeTrain = "moe-train";
inline constexpr const char* kRunKindBridge = "megatron-bridge";

struct NewRun {
    std::string id;          ///< empty = generate (e.g. "20261129-153012-a1b2")
    std::string name;
    std::string target;      ///< "local", "ssh:host", ...
    std::string runDir;
    std::string configJson;  ///< canonical RunConfig JSON
    std::string configHash;
    std::string kind;        ///< kRunKind*; empty = moe-train
    std::string sourcePath;  ///< the file whose bytes stream_offset counts, when not runDir/metrics.jsonl
};

struct RunSummary {
    std::string id;
    std::string name;
    std::string target;
    std::string runDir;
    /// Stored as runStateName()'s word (the schema is text); a word the store does not know reads
    /// as Unknown.
    RunState status = RunState::Pending;
    int exitCode = -1;
    double createdAt = 0.0;   ///< unix seconds
    int64_t steps = 0;        ///< step rows stored
    std::optional<double> lastLoss;
    int64_t streamOffset = 0; ///< bytes of metrics.jsonl ingested
    int64_t malformedLines = 0;
    std::string configHash;
    std::string dataSource;   ///< from the meta line, once seen
    std::string kind = kRunKindMoeTrain;
    std::string sourcePath;   ///< a Bridge run's log (its stream_offset counts that file's bytes)
    double syncedAt = 0.0;    ///< unix seconds of the last successful look at its target; 0 = never
};

/// Records read from another trainer's file (a Megatron-Bridge log, core/bridge/): what ingest()
/// stores for metrics.jsonl, from a reader that parsed the bytes itself.
struct ParsedChunk {
    int64_t offset = 0;     ///< where the bytes start: must be the stored offset
    int64_t newOffset = 0;  ///< past the last complete line read
    std::vector<StepRecord> steps;
    /// A memory report of a step (NaN = not in it): fills that step's memory columns, keeping the
    /// max over the reports (one per rank).
    struct Memory {
        int64_t step = 0;
        double allocGib, reservedGib, peakGib;
    };
    std::vector<Memory> memory;
    std::vector<EventRecord> events;
    std::optional<MetaRecord> meta;
    std::string sourceState;  ///< the reader's state after these bytes (kept for the next chunk)
    int64_t malformedLines = 0;
};

struct IngestResult {
    int64_t newOffset = 0;
    int64_t stepsAdded = 0;
    int64_t eventsAdded = 0;
    int64_t gpuSamplesAdded = 0;  ///< "gpu" records stored
    int64_t malformedLines = 0;
    bool sawMeta = false;
    std::optional<EndRecord> end;
    /// ingest() only (ingestParsed's caller holds its records already): the records of the bytes
    /// it consumed, [offset, newOffset), in stream order per kind — what a follower reports, so it
    /// never parses the bytes a second time. A step line whose step is already stored is here too,
    /// though its row keeps the first values (`stepsAdded` counts rows actually added).
    std::vector<StepRecord> steps;
    std::vector<EventRecord> events;
    std::optional<MetaRecord> meta;  ///< the last meta line, if any
    std::vector<GpuRecord> gpu;
};

/// One stored step column (every StepRecord field but `step`), for column-subset reads.
enum class StepField : uint8_t {
    Time, StepMs, DataMs, VisionMs, ProjectorMs, DecoderMs, BackwardMs, OptimizerMs,
    Images, ImageTokens, TextTokens, PadTokens, EffectiveTokens, SkippedImages,
    Loss, AuxLoss, GradNorm, Lr, MemAllocGib, MemReservedGib, MemPeakGib,
    TokensPerSPerGpu, TflopsPerGpu, Mfu,
};
inline constexpr size_t kStepFieldCount = 24;
/// The metrics.jsonl key (= the store's column name) of a field: "step_ms", "effective_tokens".
const char* stepFieldKey(StepField field);

/// Some columns of a run's steps, structure-of-arrays: `step[i]` and `values[k][i]` for
/// `fields[k]`. Counts (tokens, images) are read as doubles (exact below 2^53); a NULL (a NaN
/// loss) is NaN.
struct StepColumns {
    std::vector<int64_t> step;
    std::vector<StepField> fields;
    std::vector<std::vector<double>> values;  ///< one per field, each step.size() long

    size_t size() const { return step.size(); }
    /// The column of `field`, or nullptr when it was not read.
    const std::vector<double>* column(StepField field) const;
};

class RunStore {
public:
    /// Opens or creates the store; migrates an older schema. Errors: Incompatible (newer schema),
    /// Busy (locked by another process for longer than the timeout), IoError, Corrupt.
    static Result<std::unique_ptr<RunStore>> open(const std::string& path);
    ~RunStore();
    RunStore(const RunStore&) = delete;
    RunStore& operator=(const RunStore&) = delete;

    Result<std::string> createRun(const NewRun& run);  ///< returns the id
    /// SQLite's quick_check over the whole file (every table and index, a few ms per MB): Corrupt,
    /// naming the first problems and how to recover, when a page is damaged. Launch runs it before
    /// it records a run, so a new run is never written into a damaged store (issue 20 item 10).
    Result<void> checkIntegrity();
    Result<std::vector<RunSummary>> listRuns();        ///< newest first
    Result<RunSummary> run(const std::string& id);
    /// Exact id, or a unique prefix of one (as users type them). NotFound / InvalidArgument.
    Result<std::string> resolveRunId(const std::string& idOrPrefix);
    Result<std::string> configJson(const std::string& id);
    Result<MetaRecord> meta(const std::string& id);    ///< NotFound until the meta line arrived

    Result<void> setStatus(const std::string& id, RunState state, int exitCode);
    Result<void> setRunDir(const std::string& id, const std::string& runDir);
    /// Records that the run's target was just read successfully (a follower's poll): `runs` and
    /// `show` say how old the store's view of a run nobody follows is. NotFound: no such run.
    Result<void> markSynced(const std::string& id, double unixSeconds);
    /// A new display name (any text; shown escaped). NotFound: no such run.
    Result<void> renameRun(const std::string& id, const std::string& name);
    /// Removes the run and everything stored for it (config, meta, steps, events, prediction) in one
    /// transaction. Its run directory on the target is not touched. NotFound: no such run.
    Result<void> deleteRun(const std::string& id);

    /// `bytes` must start at the stored offset (`run(id).streamOffset`); otherwise InvalidArgument
    /// and nothing changes. Complete lines are stored, the offset advances past them, all in one
    /// transaction; a torn tail is left for the next call. Returns the records of those lines.
    Result<IngestResult> ingest(const std::string& id, int64_t offset, std::string_view bytes);
    /// A line too long to ingest (RunFollower: no newline within a read of its size): the offset
    /// moves from `offset` (which must be the stored one: Busy when another follower moved it,
    /// InvalidArgument when ahead) to `newOffset`, past the line, and it counts as one malformed
    /// line.
    Result<void> skipLine(const std::string& id, int64_t offset, int64_t newOffset);
    /// Stores a parsed chunk like ingest() (same offset rule, one transaction), except that a step
    /// already stored is replaced (a restarted job logged it again: the later values count).
    Result<IngestResult> ingestParsed(const std::string& id, const ParsedChunk& chunk);
    /// The reader state stored by the last ingestParsed ("" before the first).
    Result<std::string> sourceState(const std::string& id);
    /// A finished run from another trainer's files, all in one transaction: the run (`run.kind`),
    /// its config, the chunk, the prediction and the final status. Nothing is stored on failure.
    Result<std::string> importRun(const NewRun& run, const ParsedChunk& chunk,
                                  const std::optional<RunPrediction>& prediction,
                                  RunState finalState, int exitCode);

    /// Every column of the steps after `afterStep`, by step (the CSV export; a few runs).
    Result<std::vector<StepRecord>> steps(const std::string& id, int64_t afterStep = -1);
    /// The run's highest stored step number; -1 when it has none (one index lookup).
    Result<int64_t> lastStep(const std::string& id);
    /// Only `fields` of the steps after `afterStep`, by step, as columns: what compare and charts
    /// read for many runs (SQLite's row decoding is most of the load; a column not asked for
    /// costs nothing). One cached prepared statement per field set. InvalidArgument: a field
    /// named twice.
    Result<StepColumns> stepColumns(const std::string& id, std::span<const StepField> fields,
                                    int64_t afterStep = -1);

    /// Keeps the planner's prediction for a run (replaces an earlier one). NotFound: no such run.
    Result<void> setPrediction(const std::string& id, const RunPrediction& prediction);
    /// The stored prediction; std::nullopt when the run was not launched from a plan.
    Result<std::optional<RunPrediction>> prediction(const std::string& id);
    Result<std::vector<EventRecord>> events(const std::string& id);
    /// The run's GPU system samples (metrics.jsonl "gpu" records), oldest first, one record per
    /// sample time with every GPU of it.
    Result<std::vector<GpuRecord>> gpuRecords(const std::string& id);

    const std::string& path() const { return m_path; }

private:
    struct Impl;  // the connection and its cached prepared statements (run_store.cpp)
    RunStore(std::unique_ptr<Impl> impl, std::string path);
    std::unique_ptr<Impl> m_impl;
    std::string m_path;
};

/// A new run id ("20261129-153012-a1b2": local time and 16 random bits), as createRun makes one
/// when NewRun::id is empty; for a run whose directory must be known before it is recorded.
std::string newRunId();

}  // namespace wb::core
