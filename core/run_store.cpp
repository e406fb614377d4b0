// RunStore over the SQLite C API. One connection per RunStore; see run_store.h for threading.
//
// Invariants worth knowing before editing:
// - open() reads `PRAGMA user_version` before anything that writes (not even the journal-mode
//   switch), so a store from a newer workbench, a non-SQLite file or a locked file is left
//   byte-identical.
// - runs.stream_offset always sits on a line boundary of metrics.jsonl and only moves in the same
//   transaction that stores the lines before it; that is what makes re-reading idempotent.
//   steps' PRIMARY KEY(run_id, step) + INSERT OR IGNORE is the second guard.
#include "core/run_store.h"

#include "core/log.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <utility>

#include <nlohmann/json.hpp>

namespace wb::core {

namespace {

constexpr int kBusyTimeoutMs = 2000;

struct DbCloser {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbHandle = std::unique_ptr<sqlite3, DbCloser>;

struct StmtFinalizer {
    void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};

ErrorCode codeForSqlite(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return ErrorCode::Busy;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT: return ErrorCode::Corrupt;
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_FULL:
    case SQLITE_PERM: return ErrorCode::IoError;
    default: return ErrorCode::Failed;
    }
}

// Turns a failed SQLite call into a user-facing error. Busy and "not a database" are the two a
// user can act on, so they get their own words.
Error sqliteError(sqlite3* db, int rc, const std::string& path, std::string_view what)
{
    const ErrorCode code = codeForSqlite(rc);
    std::string detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    if (code == ErrorCode::Busy)
        return makeError(code,
                         "the run store is locked by another process (another moe-workbench or "
                         "moe-workbench-cli is writing to it); wait for it to finish and retry, "
                         "or use another store file with --db",
                         path);
    if (code == ErrorCode::Corrupt)
        return makeError(code,
                         "this file is not a usable run store (" + detail +
                             "); point --db at a run store or at a new file",
                         path);
    return makeError(code, std::string(what) + " failed: " + detail, path);
}

double nowUnix()
{
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string generateRunIdText()
{
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    std::array<char, 32> stamp{};
    std::strftime(stamp.data(), stamp.size(), "%Y%m%d-%H%M%S", &local);
    static thread_local std::mt19937 rng{std::random_device{}()};
    std::array<char, 8> hex{};
    std::snprintf(hex.data(), hex.size(), "%04x", static_cast<unsigned>(rng() & 0xffffu));
    return std::string(stamp.data()) + "-" + hex.data();
}

// A prepared statement, reset on every use so it can be cached.
class Statement {
public:
    explicit Statement(sqlite3_stmt* stmt) : m_stmt(stmt) {}

    Statement& reset()
    {
        sqlite3_reset(m_stmt.get());
        sqlite3_clear_bindings(m_stmt.get());
        return *this;
    }
    Statement& bind(int index, int64_t value)
    {
        sqlite3_bind_int64(m_stmt.get(), index, value);
        return *this;
    }
    Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
    Statement& bind(int index, double value)
    {
        // NaN/inf (a diverged loss) are stored as NULL and read back as NaN.
        if (std::isfinite(value))
            sqlite3_bind_double(m_stmt.get(), index, value);
        else
            sqlite3_bind_null(m_stmt.get(), index);
        return *this;
    }
    Statement& bind(int index, std::string_view value)
    {
        sqlite3_bind_text(m_stmt.get(), index, value.data(), static_cast<int>(value.size()),
                          SQLITE_TRANSIENT);
        return *this;
    }
    Statement& bind(int index, const std::optional<int64_t>& value)
    {
        if (value)
            return bind(index, *value);
        sqlite3_bind_null(m_stmt.get(), index);
        return *this;
    }

    /// SQLITE_ROW, SQLITE_DONE, or an error code.
    int step() { return sqlite3_step(m_stmt.get()); }

    bool isNull(int col) const { return sqlite3_column_type(m_stmt.get(), col) == SQLITE_NULL; }
    int64_t int64(int col) const { return sqlite3_column_int64(m_stmt.get(), col); }
    /// real() with one SQLite call per value instead of two in the common case: a NULL reads as
    /// 0.0, so the type is asked only for a 0.0 (a NULL does not convert, so the type stays valid).
    /// Step rows are mostly this: 23 REAL columns × 100k rows per run.
    double realFast(int col) const
    {
        const double value = sqlite3_column_double(m_stmt.get(), col);
        if (value == 0.0 && sqlite3_column_type(m_stmt.get(), col) == SQLITE_NULL)
            return std::numeric_limits<double>::quiet_NaN();
        return value;
    }
    double real(int col) const
    {
        return isNull(col) ? std::numeric_limits<double>::quiet_NaN()
                           : sqlite3_column_double(m_stmt.get(), col);
    }
    std::string text(int col) const
    {
        const auto* p = sqlite3_column_text(m_stmt.get(), col);
        return p ? std::string(reinterpret_cast<const char*>(p),
                               static_cast<size_t>(sqlite3_column_bytes(m_stmt.get(), col)))
                 : std::string();
    }

private:
    std::unique_ptr<sqlite3_stmt, StmtFinalizer> m_stmt;
};

// A cached statement borrowed for one use; reset when the borrower is done, so no statement is
// left mid-result holding a read transaction (in WAL that pins an old snapshot: this connection
// would stop seeing other writers, and journal_mode/BEGIN would fail).
class StatementLease {
public:
    explicit StatementLease(Statement* stmt) : m_stmt(stmt) {}
    ~StatementLease()
    {
        if (m_stmt)
            m_stmt->reset();
    }
    StatementLease(StatementLease&& other) noexcept : m_stmt(std::exchange(other.m_stmt, nullptr)) {}
    StatementLease& operator=(StatementLease&&) = delete;
    Statement* operator->() const { return m_stmt; }
    Statement& operator*() const { return *m_stmt; }

private:
    Statement* m_stmt;
};

// The connection and its statement cache. Declared here (not as RunStore::Impl itself) so the
// helpers below, outside the class, can use it.
struct StoreDb {
    DbHandle db;
    std::string path;
    // Prepared once, reused: ingest of 100k+ rows/s depends on not re-preparing per row.
    // Keyed by the SQL text's address (all SQL here is string literals).
    std::map<const char*, std::unique_ptr<Statement>> statements;

    Result<StatementLease> prepare(const char* sql)
    {
        auto it = statements.find(sql);
        if (it != statements.end())
            return StatementLease(&it->second->reset());
        sqlite3_stmt* raw = nullptr;
        const int rc = sqlite3_prepare_v3(db.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
        if (rc != SQLITE_OK)
            return sqliteError(db.get(), rc, path, "preparing a query");
        auto stmt = std::make_unique<Statement>(raw);
        Statement* out = stmt.get();
        statements.emplace(sql, std::move(stmt));
        return StatementLease(out);
    }

    // Statements built at run time (a column subset of steps), keyed by their text: few distinct
    // ones per connection (one per field set a caller uses).
    std::map<std::string, std::unique_ptr<Statement>, std::less<>> builtStatements;
    bool mappedReads = false;  // PRAGMA mmap_size set (first bulk step read)
    int txDepth = 0;           // open Transactions; inner ones join the outer (importRun)

    Result<StatementLease> prepareBuilt(const std::string& sql)
    {
        auto it = builtStatements.find(sql);
        if (it != builtStatements.end())
            return StatementLease(&it->second->reset());
        sqlite3_stmt* raw = nullptr;
        const int rc = sqlite3_prepare_v3(db.get(), sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
        if (rc != SQLITE_OK)
            return sqliteError(db.get(), rc, path, "preparing a query");
        auto stmt = std::make_unique<Statement>(raw);
        Statement* out = stmt.get();
        builtStatements.emplace(sql, std::move(stmt));
        return StatementLease(out);
    }

    Result<void> exec(const char* sql, std::string_view what)
    {
        char* err = nullptr;
        const int rc = sqlite3_exec(db.get(), sql, nullptr, nullptr, &err);
        sqlite3_free(err);
        if (rc != SQLITE_OK)
            return sqliteError(db.get(), rc, path, what);
        return {};
    }

    Result<void> stepDone(Statement& stmt, std::string_view what)
    {
        const int rc = stmt.step();
        if (rc != SQLITE_DONE && rc != SQLITE_ROW)
            return sqliteError(db.get(), rc, path, what);
        return {};
    }

    Error lastError(int rc, std::string_view what) { return sqliteError(db.get(), rc, path, what); }
};

// Rolls back unless commit() succeeded, so every early return leaves the store unchanged.
class Transaction {
public:
    explicit Transaction(StoreDb* impl) : m_impl(impl) {}
    ~Transaction()
    {
        if (!m_open)
            return;
        --m_impl->txDepth;
        // An inner transaction that fails hands its error up; the outer one rolls everything back.
        if (!m_nested)
            sqlite3_exec(m_impl->db.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;

    Result<void> begin()
    {
        if (m_impl->txDepth > 0) {  // inside another: its work becomes part of the outer one
            m_nested = m_open = true;
            ++m_impl->txDepth;
            return {};
        }
        // IMMEDIATE takes the write lock up front, so a concurrent writer shows up as Busy here
        // (after the busy timeout) instead of as a failed COMMIT after the work is done.
        auto r = m_impl->exec("BEGIN IMMEDIATE", "starting a transaction");
        m_open = r.ok();
        if (m_open)
            ++m_impl->txDepth;
        return r;
    }
    Result<void> commit()
    {
        if (m_nested) {
            m_open = false;
            --m_impl->txDepth;
            return {};
        }
        auto r = m_impl->exec("COMMIT", "committing");
        if (r.ok()) {
            m_open = false;
            --m_impl->txDepth;
        }
        return r;
    }

private:
    StoreDb* m_impl;
    bool m_open = false;
    bool m_nested = false;
};

// Schema migrations: entry i takes user_version i to i + 1. Append, never edit a shipped entry.
constexpr std::array<const char*, kStoreSchemaVersion> kMigrations = {
    // v0 -> v1
    R"sql(
CREATE TABLE runs(
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL DEFAULT '',
  target TEXT NOT NULL DEFAULT '',
  run_dir TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL DEFAULT 'pending',
  exit_code INTEGER NOT NULL DEFAULT -1,
  created_at REAL NOT NULL,
  stream_offset INTEGER NOT NULL DEFAULT 0,
  malformed_lines INTEGER NOT NULL DEFAULT 0,
  config_hash TEXT NOT NULL DEFAULT '',
  data_source TEXT NOT NULL DEFAULT '');
CREATE INDEX runs_by_created ON runs(created_at);
CREATE TABLE configs(run_id TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE, json TEXT NOT NULL);
CREATE TABLE meta(run_id TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE, json TEXT NOT NULL);
CREATE TABLE steps(
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  time REAL, step_ms REAL, data_ms REAL, vision_ms REAL, projector_ms REAL, decoder_ms REAL,
  backward_ms REAL, optimizer_ms REAL,
  images INTEGER, image_tokens INTEGER, text_tokens INTEGER, pad_tokens INTEGER,
  effective_tokens INTEGER, skipped_images INTEGER,
  loss REAL, aux_loss REAL, grad_norm REAL, lr REAL,
  mem_alloc_gib REAL, mem_reserved_gib REAL, mem_peak_gib REAL,
  tokens_per_s_per_gpu REAL, tflops_per_gpu REAL, mfu REAL,
  PRIMARY KEY(run_id, step)) WITHOUT ROWID;
CREATE TABLE events(
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  time REAL, level TEXT NOT NULL, msg TEXT NOT NULL, step INTEGER,
  PRIMARY KEY(run_id, seq)) WITHOUT ROWID;
)sql",
    // v1 -> v2: the planner's prediction for runs launched from a plan (core/run_prediction.h).
    R"sql(
CREATE TABLE predictions(
  run_id TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  source TEXT NOT NULL, hardware TEXT NOT NULL, gpus INTEGER NOT NULL,
  calibration TEXT NOT NULL DEFAULT '',
  step_ms REAL, tokens_per_s_per_gpu REAL, tflops_per_gpu REAL, mfu REAL, memory_gib REAL,
  detail TEXT NOT NULL DEFAULT '');
)sql",
    // v2 -> v3: runs read from another trainer's files (a Megatron-Bridge log): which trainer,
    // the file followed (stream_offset counts its bytes) and the reader's state between chunks.
    R"sql(
ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'moe-train';
ALTER TABLE runs ADD COLUMN source_path TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN source_state TEXT NOT NULL DEFAULT '';
)sql",
    // v3 -> v4: when a follower last read the run's target (issue 18: a run nobody follows says
    // how old its view is instead of looking frozen).
    R"sql(
ALTER TABLE runs ADD COLUMN synced_at REAL NOT NULL DEFAULT 0;
)sql",
    // v4 -> v5: GPU system metrics (metrics.jsonl "gpu" records: NVML samples of the node's GPUs).
    R"sql(
CREATE TABLE gpu_samples(
  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  time REAL NOT NULL, gpu INTEGER NOT NULL, step INTEGER,
  util_pct REAL, mem_used_gib REAL, mem_total_gib REAL, power_w REAL, temp_c REAL, sm_clock_mhz REAL,
  PRIMARY KEY(run_id, time, gpu)) WITHOUT ROWID;
)sql",
};

constexpr const char* kStepColumns =
    "step, time, step_ms, data_ms, vision_ms, projector_ms, decoder_ms, backward_ms, optimizer_ms, "
    "images, image_tokens, text_tokens, pad_tokens, effective_tokens, skipped_images, loss, "
    "aux_loss, grad_norm, lr, mem_alloc_gib, mem_reserved_gib, mem_peak_gib, tokens_per_s_per_gpu, "
    "tflops_per_gpu, mfu";

constexpr const char* kInsertStep =
    "INSERT OR IGNORE INTO steps(run_id, step, time, step_ms, data_ms, vision_ms, projector_ms, "
    "decoder_ms, backward_ms, optimizer_ms, images, image_tokens, text_tokens, pad_tokens, "
    "effective_tokens, skipped_images, loss, aux_loss, grad_norm, lr, mem_alloc_gib, "
    "mem_reserved_gib, mem_peak_gib, tokens_per_s_per_gpu, tflops_per_gpu, mfu) VALUES "
    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
    "?21, ?22, ?23, ?24, ?25, ?26)";

void bindStep(Statement& s, const std::string& runId, const StepRecord& r)
{
    s.bind(1, std::string_view(runId)).bind(2, r.step).bind(3, r.time).bind(4, r.stepMs)
        .bind(5, r.dataMs).bind(6, r.visionMs).bind(7, r.projectorMs).bind(8, r.decoderMs)
        .bind(9, r.backwardMs).bind(10, r.optimizerMs).bind(11, r.images).bind(12, r.imageTokens)
        .bind(13, r.textTokens).bind(14, r.padTokens).bind(15, r.effectiveTokens)
        .bind(16, r.skippedImages).bind(17, r.loss).bind(18, r.auxLoss).bind(19, r.gradNorm)
        .bind(20, r.lr).bind(21, r.memAllocGib).bind(22, r.memReservedGib).bind(23, r.memPeakGib)
        .bind(24, r.tokensPerSPerGpu).bind(25, r.tflopsPerGpu).bind(26, r.mfu);
}

// Fills the record in place (no temporary per row: steps() of 20 runs × 100k rows is mostly this).
void readStep(const Statement& s, StepRecord& r)
{
    r.step = s.int64(0);
    r.time = s.realFast(1);
    r.stepMs = s.realFast(2);
    r.dataMs = s.realFast(3);
    r.visionMs = s.realFast(4);
    r.projectorMs = s.realFast(5);
    r.decoderMs = s.realFast(6);
    r.backwardMs = s.realFast(7);
    r.optimizerMs = s.realFast(8);
    r.images = s.int64(9);
    r.imageTokens = s.int64(10);
    r.textTokens = s.int64(11);
    r.padTokens = s.int64(12);
    r.effectiveTokens = s.int64(13);
    r.skippedImages = s.int64(14);
    r.loss = s.realFast(15);
    r.auxLoss = s.realFast(16);
    r.gradNorm = s.realFast(17);
    r.lr = s.realFast(18);
    r.memAllocGib = s.realFast(19);
    r.memReservedGib = s.realFast(20);
    r.memPeakGib = s.realFast(21);
    r.tokensPerSPerGpu = s.realFast(22);
    r.tflopsPerGpu = s.realFast(23);
    r.mfu = s.realFast(24);
}

constexpr const char* kSummaryQuery =
    "SELECT r.id, r.name, r.target, r.run_dir, r.status, r.exit_code, r.created_at, "
    "r.stream_offset, r.malformed_lines, r.config_hash, r.data_source, "
    "(SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id), "
    "(SELECT s.loss FROM steps s WHERE s.run_id = r.id ORDER BY s.step DESC LIMIT 1), "
    "r.kind, r.source_path, r.synced_at "
    "FROM runs r";

RunSummary readSummary(const Statement& s)
{
    RunSummary r;
    r.id = s.text(0);
    r.name = s.text(1);
    r.target = s.text(2);
    r.runDir = s.text(3);
    r.status = runStateFromName(s.text(4));
    r.exitCode = static_cast<int>(s.int64(5));
    r.createdAt = s.real(6);
    r.streamOffset = s.int64(7);
    r.malformedLines = s.int64(8);
    r.configHash = s.text(9);
    r.dataSource = s.text(10);
    r.steps = s.int64(11);
    if (!s.isNull(12))
        r.lastLoss = s.real(12);
    r.kind = s.text(13);
    r.sourcePath = s.text(14);
    r.syncedAt = s.real(15);
    return r;
}

// Reads the schema version without writing anything. Also the first statement that touches the
// file, so "not a database" and "locked" surface here.
Result<int> readUserVersion(StoreDb& impl)
{
    auto stmt = impl.prepare("PRAGMA user_version");
    if (!stmt)
        return stmt.error();
    const int rc = (*stmt)->step();
    if (rc != SQLITE_ROW)
        return impl.lastError(rc, "reading the schema version");
    return static_cast<int>((*stmt)->int64(0));
}

Result<void> migrate(StoreDb& impl, int fromVersion)
{
    Transaction tx(&impl);
    if (auto r = tx.begin(); !r)
        return r;
    // Re-read under the write lock: another process may have migrated meanwhile.
    auto current = readUserVersion(impl);
    if (!current)
        return current.error();
    for (int v = *current; v < kStoreSchemaVersion; ++v) {
        if (auto r = impl.exec(kMigrations[static_cast<size_t>(v)], "migrating the store schema"); !r)
            return r;
    }
    if (*current < kStoreSchemaVersion) {
        const std::string pragma = "PRAGMA user_version = " + std::to_string(kStoreSchemaVersion);
        if (auto r = impl.exec(pragma.c_str(), "setting the schema version"); !r)
            return r;
        wb::log::get("core")->info("run store {}: schema v{} -> v{}", impl.path, fromVersion,
                                   kStoreSchemaVersion);
    }
    return tx.commit();
}

}  // namespace

// RunStore::Impl is defined in this file only, so a base in the anonymous namespace is safe; GCC
// warns because the enclosing class has external linkage.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsubobject-linkage"
#endif
struct RunStore::Impl : StoreDb {};
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// ---- open -------------------------------------------------------------------------------------

RunStore::RunStore(std::unique_ptr<Impl> impl, std::string path)
    : m_impl(std::move(impl)), m_path(std::move(path))
{
}

RunStore::~RunStore()
{
    // Statements must be finalized before the connection closes.
    if (m_impl)
        m_impl->statements.clear();
}

namespace {

// An error when this process may not write the store file (or, for a file to be created or
// without its WAL files, the folder); nullopt when it may. access() asks the kernel with the real
// ids, so it is right for root (who may write a 0444 file) and for a read-only mount (EROFS).
std::optional<Error> unwritableStore(const std::string& path)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path file(path);
    const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
    const auto fix = [&](const std::string& what) {
        return "run this as the owner of " + what + ", make it writable (chmod u+w), or pass --db with a store you can write";
    };
    for (const std::string& part : {path, path + "-wal", path + "-shm"})
        if (fs::exists(part, ec) && ::access(part.c_str(), W_OK) != 0) {
            const int err = errno;
            return makeError(ErrorCode::IoError,
                             "the run store cannot be written by this user: " + std::string(std::strerror(err)) +
                                 " (errno " + std::to_string(err) + "); every command updates it. Fix: " + fix("the file"),
                             part);
        }
    const bool walFilesExist = fs::exists(path + "-wal", ec) && fs::exists(path + "-shm", ec);
    if (!walFilesExist && fs::exists(folder, ec) && ::access(folder.c_str(), W_OK) != 0) {
        const int err = errno;
        return makeError(ErrorCode::IoError,
                         "the folder of the run store cannot be written by this user: " + std::string(std::strerror(err)) +
                             " (errno " + std::to_string(err) + "); SQLite keeps its journal (" +
                             file.filename().string() + "-wal, -shm) beside the store. Fix: " + fix("the folder"),
                         folder.string());
    }
    return std::nullopt;
}

}  // namespace

Result<std::unique_ptr<RunStore>> RunStore::open(const std::string& path)
{
    std::error_code ec;
    const auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty() && !std::filesystem::exists(parent, ec)) {
        std::filesystem::create_directories(parent, ec);
        if (ec)
            return makeError(ErrorCode::IoError,
                             "cannot create the folder for the run store: " + ec.message(),
                             parent.string());
    }

    // Every command writes the store (a run caught up, a status set), and SQLite in WAL mode also
    // needs the folder for its -wal and -shm files. Refuse a store this user cannot write at once,
    // before SQLite opens it read-only and a follower retries its writes forever (issue 20 item 5).
    if (auto denied = unwritableStore(path))
        return *denied;

    auto impl = std::make_unique<Impl>();
    impl->path = path;
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &raw,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                       SQLITE_OPEN_NOMUTEX,
                                   nullptr);
    impl->db.reset(raw);  // sqlite3_open_v2 hands out a handle even on failure
    if (rc != SQLITE_OK)
        return sqliteError(impl->db.get(), rc, path, "opening the run store");
    sqlite3_extended_result_codes(impl->db.get(), 1);
    sqlite3_busy_timeout(impl->db.get(), kBusyTimeoutMs);

    // Nothing above wrote to the file. Check the version before anything that could.
    auto version = readUserVersion(*impl);
    if (!version)
        return version.error();
    if (*version < 0)
        return makeError(ErrorCode::Incompatible,
                         "this SQLite file has user_version " + std::to_string(*version) +
                             ", which no run store has: it is not a run store and was left untouched. Pass "
                             "--db with a run store or a new file name",
                         path);
    if (*version == 0) {
        // A new store starts as an empty database; one with tables of its own is another
        // program's file, and creating ours in it would change it (issue 20 item 10).
        auto tables = impl->prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                                    "AND name NOT LIKE 'sqlite_%' ORDER BY name LIMIT 4");
        if (!tables)
            return tables.error();
        std::string names;
        int count = 0;
        while ((*tables)->step() == SQLITE_ROW)
            if (count++ < 3)
                names += (count > 1 ? ", " : "") + (*tables)->text(0);
        if (count > 0)
            return makeError(ErrorCode::Incompatible,
                             "this is an SQLite database, but not a run store (it has " +
                                 std::string(count > 1 ? "tables " : "table ") + names + (count > 3 ? ", ..." : "") +
                                 " and no run store schema); it was left untouched. Pass --db with a run store or "
                                 "a new file name",
                             path);
    }
    if (*version > kStoreSchemaVersion)
        return makeError(ErrorCode::Incompatible,
                         "this run store has schema version " + std::to_string(*version) +
                             ", but this workbench understands up to version " +
                             std::to_string(kStoreSchemaVersion) +
                             "; it was left untouched. Upgrade the workbench, or use another "
                             "store file with --db",
                         path);

    if (auto r = impl->exec("PRAGMA foreign_keys = ON", "enabling foreign keys"); !r)
        return r.error();
    // WAL: readers (the GUI, `runs`) never block the writer that ingests a live run.
    if (auto r = impl->exec("PRAGMA journal_mode = WAL", "switching to WAL"); !r)
        return r.error();
    if (auto r = impl->exec("PRAGMA synchronous = NORMAL", "setting synchronous"); !r)
        return r.error();
    if (auto r = migrate(*impl, *version); !r)
        return r.error();
    return std::unique_ptr<RunStore>(new RunStore(std::move(impl), path));
}

// ---- runs ---------------------------------------------------------------------------------------

Result<void> RunStore::checkIntegrity()
{
    auto check = m_impl->prepare("PRAGMA quick_check(4)");
    if (!check)
        return check.error();
    std::string problems;
    int rc = SQLITE_OK;
    while ((rc = (*check)->step()) == SQLITE_ROW) {
        std::string line = (*check)->text(0);
        if (line == "ok")
            continue;
        for (char& c : line)  // "*** in database main ***\nPage 9: ..." on one line
            if (c == '\n')
                c = ' ';
        problems += (problems.empty() ? "" : "; ") + line;
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        // Damage deep enough that the check itself cannot read a page.
        if (problems.empty())
            problems = sqlite3_errmsg(m_impl->db.get());
    }
    if (problems.empty())
        return {};
    return makeError(ErrorCode::Corrupt,
                     "the run store is damaged (SQLite quick_check: " + problems +
                         "); nothing was written to it. Fix: keep a copy of the file, then recover what it holds "
                         "with `sqlite3 " + m_path + " .recover | sqlite3 " + m_path + ".recovered` and pass --db " +
                         m_path + ".recovered, or start a new store with --db",
                     m_path);
}

Result<std::string> RunStore::createRun(const NewRun& run)
{
    Transaction tx(m_impl.get());
    if (auto r = tx.begin(); !r)
        return r.error();
    auto insertRun = m_impl->prepare(
        "INSERT INTO runs(id, name, target, run_dir, status, created_at, config_hash, kind, source_path) "
        "VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?6, ?7, ?8)");
    if (!insertRun)
        return insertRun.error();
    std::string id = run.id;
    // A generated id collides only if two runs start in the same second with the same 16 random
    // bits; retry a few times rather than fail.
    for (int attempt = 0;; ++attempt) {
        if (run.id.empty())
            id = newRunId();
        Statement& s = (*insertRun)->reset();
        s.bind(1, std::string_view(id)).bind(2, std::string_view(run.name))
            .bind(3, std::string_view(run.target)).bind(4, std::string_view(run.runDir))
            .bind(5, nowUnix()).bind(6, std::string_view(run.configHash))
            .bind(7, std::string_view(run.kind.empty() ? kRunKindMoeTrain : run.kind))
            .bind(8, std::string_view(run.sourcePath));
        const int rc = s.step();
        if (rc == SQLITE_DONE)
            break;
        if ((rc & 0xff) == SQLITE_CONSTRAINT) {
            if (!run.id.empty())
                return makeError(ErrorCode::InvalidArgument,
                                 "a run with this id already exists; choose another id", id);
            if (attempt < 8)
                continue;
        }
        return m_impl->lastError(rc, "creating the run");
    }
    auto insertConfig = m_impl->prepare("INSERT INTO configs(run_id, json) VALUES (?1, ?2)");
    if (!insertConfig)
        return insertConfig.error();
    (*insertConfig)->bind(1, std::string_view(id)).bind(2, std::string_view(run.configJson));
    if (auto r = m_impl->stepDone(**insertConfig, "storing the run config"); !r)
        return r.error();
    if (auto r = tx.commit(); !r)
        return r.error();
    return id;
}

Result<std::vector<RunSummary>> RunStore::listRuns()
{
    static const std::string sql =
        std::string(kSummaryQuery) + " ORDER BY r.created_at DESC, r.id DESC";
    auto stmt = m_impl->prepare(sql.c_str());
    if (!stmt)
        return stmt.error();
    std::vector<RunSummary> out;
    int rc;
    while ((rc = (*stmt)->step()) == SQLITE_ROW)
        out.push_back(readSummary(**stmt));
    if (rc != SQLITE_DONE)
        return m_impl->lastError(rc, "listing runs");
    return out;
}

Result<RunSummary> RunStore::run(const std::string& id)
{
    static const std::string sql = std::string(kSummaryQuery) + " WHERE r.id = ?1";
    auto stmt = m_impl->prepare(sql.c_str());
    if (!stmt)
        return stmt.error();
    (*stmt)->bind(1, std::string_view(id));
    const int rc = (*stmt)->step();
    if (rc == SQLITE_ROW)
        return readSummary(**stmt);
    if (rc == SQLITE_DONE)
        return makeError(ErrorCode::NotFound, "no such run in the store; `runs` lists them", id);
    return m_impl->lastError(rc, "reading the run");
}

Result<std::string> RunStore::resolveRunId(const std::string& idOrPrefix)
{
    if (idOrPrefix.empty())
        return makeError(ErrorCode::InvalidArgument, "empty run id; `runs` lists the ids");
    // substr() rather than LIKE: ids may contain '_' or '%' only by accident, but then LIKE lies.
    auto stmt = m_impl->prepare(
        "SELECT id FROM runs WHERE id = ?1 UNION ALL "
        "SELECT id FROM runs WHERE substr(id, 1, length(?1)) = ?1 AND id <> ?1 LIMIT 3");
    if (!stmt)
        return stmt.error();
    (*stmt)->bind(1, std::string_view(idOrPrefix));
    std::vector<std::string> hits;
    int rc;
    while ((rc = (*stmt)->step()) == SQLITE_ROW)
        hits.push_back((*stmt)->text(0));
    if (rc != SQLITE_DONE)
        return m_impl->lastError(rc, "looking up the run");
    if (hits.empty())
        return makeError(ErrorCode::NotFound, "no run has this id or id prefix; `runs` lists them",
                         idOrPrefix);
    if (hits.front() == idOrPrefix || hits.size() == 1)
        return hits.front();
    return makeError(ErrorCode::InvalidArgument,
                     "this prefix matches several runs (" + hits[0] + ", " + hits[1] +
                         (hits.size() > 2 ? ", ..." : "") + "); type more of the id",
                     idOrPrefix);
}

Result<std::string> RunStore::configJson(const std::string& id)
{
    auto stmt = m_impl->prepare("SELECT json FROM configs WHERE run_id = ?1");
    if (!stmt)
        return stmt.error();
    (*stmt)->bind(1, std::string_view(id));
    const int rc = (*stmt)->step();
    if (rc == SQLITE_ROW)
        return (*stmt)->text(0);
    if (rc == SQLITE_DONE)
        return makeError(ErrorCode::NotFound, "no config stored for this run", id);
    return m_impl->lastError(rc, "reading the config");
}

Result<MetaRecord> RunStore::meta(const std::string& id)
{
    auto stmt = m_impl->prepare("SELECT json FROM meta WHERE run_id = ?1");
    if (!stmt)
        return stmt.error();
    (*stmt)->bind(1, std::string_view(id));
    const int rc = (*stmt)->step();
    if (rc == SQLITE_DONE)
        return makeError(ErrorCode::NotFound, "the run has not reported its meta line yet", id);
    if (rc != SQLITE_ROW)
        return m_impl->lastError(rc, "reading the meta record");
    auto record = parseMetricsLine((*stmt)->text(0));
    if (!record || !std::holds_alternative<MetaRecord>(*record))
        return makeError(ErrorCode::Corrupt, "the stored meta record cannot be parsed", id);
    return std::get<MetaRecord>(std::move(*record));
}

Result<void> RunStore::setPrediction(const std::string& id, const RunPrediction& p)
{
    auto exists = run(id);
    if (!exists)
        return exists.error();
    auto stmt = m_impl->prepare(
        "INSERT OR REPLACE INTO predictions(run_id, source, hardware, gpus, calibration, step_ms, "
        "tokens_per_s_per_gpu, tflops_per_gpu, mfu, memory_gib, detail) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    if (!stmt)
        return stmt.error();
    (*stmt)->bind(1, std::string_view(id)).bind(2, std::string_view(p.source))
        .bind(3, std::string_view(p.hardware)).bind(4, int64_t{p.gpus})
        .bind(5, std::string_view(p.calibration)).bind(6, p.stepMs).bind(7, p.tokensPerSPerGpu)
        .bind(8, p.tflopsPerGpu).bind(9, p.mfu).bind(10, p.memoryGib)
        .bind(11, std::string_view(p.detailJson));
    return m_impl->stepDone(**stmt, "storing the run's prediction");
}

Result<std::optional<RunPrediction>> RunStore::prediction(const std::string& id)
{
    auto stmt = m_impl->prepare(
        "SELECT source, hardware, gpus, calibration, step_ms, tokens_per_s_per_gpu, "
        "tflops_per_gpu, mfu, memory_gib, detail FROM predictions WHERE run_id = ?1");
    if (!stmt)
        return stmt.error();
    (*stmt)->bind(1, std::string_view(id));
    const int rc = (*stmt)->step();
    if (rc == SQLITE_DONE)
        return std::optional<RunPrediction>{};
    if (rc != SQLITE_ROW)
        return m_impl->lastError(rc, "reading the run's prediction");
    Statement& s = **stmt;
    RunPrediction p;
    p.source = s.text(0);
    p.hardware = s.text(1);
    p.gpus = static_cast<int>(s.int64(2));
    p.calibration = s.text(3);
    p.stepMs = s.real(4);
    p.tokensPerSPerGpu = s.real(5);
    p.tflopsPerGpu = s.real(6);
    p.mfu = s.real(7);
    p.memoryGib = s.real(8);
    p.detailJson = s.text(9);
    return std::optional<RunPrediction>(std::move(p));
}

namespace {

// One UPDATE of one run's row (?1 = the id, the rest bound by `bind`); NotFound when no row has
// the id. `what` names the step in an SQLite error.
template <class Bind>
Result<void> updateRun(StoreDb& db, const char* sql, const std::string& id, const char* what, Bind bind)
{
    auto stmt = db.prepare(sql);
    if (!stmt)
        return stmt.error();
    (*stmt)->bind(1, std::string_view(id));
    bind(**stmt);
    if (auto r = db.stepDone(**stmt, what); !r)
        return r;
    if (sqlite3_changes(db.db.get()) == 0)
        return makeError(ErrorCode::NotFound, "no such run in the store; `runs` lists them", id);
    return {};
}

}  // namespace

Result<void> RunStore::setStatus(const std::string& id, RunState state, int exitCode)
{
    // The column keeps the words of every earlier version: a store stays readable both ways.
    return updateRun(*m_impl, "UPDATE runs SET status = ?2, exit_code = ?3 WHERE id = ?1", id, "updating the run status",
                     [&](Statement& s) { s.bind(2, std::string_view(runStateName(state))).bind(3, exitCode); });
}

Result<void> RunStore::setRunDir(const std::string& id, const std::string& runDir)
{
    return updateRun(*m_impl, "UPDATE runs SET run_dir = ?2 WHERE id = ?1", id, "updating the run directory",
                     [&](Statement& s) { s.bind(2, std::string_view(runDir)); });
}

Result<void> RunStore::markSynced(const std::string& id, double unixSeconds)
{
    return updateRun(*m_impl, "UPDATE runs SET synced_at = ?2 WHERE id = ?1", id, "recording when the run was synced",
                     [&](Statement& s) { s.bind(2, unixSeconds); });
}

Result<void> RunStore::renameRun(const std::string& id, const std::string& name)
{
    return updateRun(*m_impl, "UPDATE runs SET name = ?2 WHERE id = ?1", id, "renaming the run",
                     [&](Statement& s) { s.bind(2, std::string_view(name)); });
}

Result<void> RunStore::deleteRun(const std::string& id)
{
    // ON DELETE CASCADE (foreign keys are on for every connection) removes the config, meta,
    // steps, events and prediction with the row, in the statement's own transaction.
    auto stmt = m_impl->prepare("DELETE FROM runs WHERE id = ?1");
    if (!stmt)
        return stmt.error();
    (*stmt)->bind(1, std::string_view(id));
    if (auto r = m_impl->stepDone(**stmt, "deleting the run"); !r)
        return r;
    if (sqlite3_changes(m_impl->db.get()) == 0)
        return makeError(ErrorCode::NotFound, "no such run in the store; `runs` lists them", id);
    return {};
}

Result<int64_t> RunStore::lastStep(const std::string& id)
{
    auto stmt = m_impl->prepare("SELECT COALESCE(MAX(step), -1) FROM steps WHERE run_id = ?1");
    if (!stmt)
        return stmt.error();
    (*stmt)->bind(1, std::string_view(id));
    const int rc = (*stmt)->step();
    if (rc != SQLITE_ROW)
        return m_impl->lastError(rc, "reading the last step");
    return (*stmt)->int64(0);
}

// ---- ingest -------------------------------------------------------------------------------------

namespace {

// Under the write lock: the bytes must start where the store stopped. Behind: another follower of
// the run (a second watch, cancel's catch-up) stored these bytes first — Busy, read again from the
// stored offset. Ahead: bytes would be skipped — a bug.
Result<void> checkStreamOffset(StoreDb& db, const std::string& id, int64_t offset)
{
    auto current = db.prepare("SELECT stream_offset FROM runs WHERE id = ?1");
    if (!current)
        return current.error();
    (*current)->bind(1, std::string_view(id));
    const int rc = (*current)->step();
    if (rc == SQLITE_DONE)
        return makeError(ErrorCode::NotFound, "no such run in the store", id);
    if (rc != SQLITE_ROW)
        return db.lastError(rc, "reading the stream offset");
    const int64_t stored = (*current)->int64(0);
    (*current)->reset();
    if (stored != offset)
        return makeError(offset < stored ? ErrorCode::Busy : ErrorCode::InvalidArgument,
                         "metrics bytes start at offset " + std::to_string(offset) +
                             " but the store has ingested up to " + std::to_string(stored) +
                             "; read again from the stored offset",
                         id);
    return {};
}

// Events are numbered per run in arrival order; `nextSeq` is looked up once per transaction.
Result<void> storeEvent(StoreDb& db, const std::string& id, const EventRecord& event, std::optional<int64_t>& nextSeq)
{
    if (!nextSeq) {
        auto maxSeq = db.prepare("SELECT COALESCE(MAX(seq), -1) + 1 FROM events WHERE run_id = ?1");
        if (!maxSeq)
            return maxSeq.error();
        (*maxSeq)->bind(1, std::string_view(id));
        if (const int rc = (*maxSeq)->step(); rc != SQLITE_ROW)
            return db.lastError(rc, "numbering events");
        nextSeq = (*maxSeq)->int64(0);
    }
    auto insertEvent =
        db.prepare("INSERT INTO events(run_id, seq, time, level, msg, step) VALUES (?1,?2,?3,?4,?5,?6)");
    if (!insertEvent)
        return insertEvent.error();
    (*insertEvent)->bind(1, std::string_view(id)).bind(2, (*nextSeq)++)
        .bind(3, event.time).bind(4, std::string_view(event.level))
        .bind(5, std::string_view(event.msg)).bind(6, event.step);
    return db.stepDone(**insertEvent, "storing an event");
}

// One row per GPU of the sample; a sample stored again (the same time) replaces its rows.
Result<int64_t> storeGpuRecord(StoreDb& db, const std::string& id, const GpuRecord& record)
{
    auto insert = db.prepare(
        "INSERT OR REPLACE INTO gpu_samples(run_id, time, gpu, step, util_pct, mem_used_gib, mem_total_gib, power_w, "
        "temp_c, sm_clock_mhz) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)");
    if (!insert)
        return insert.error();
    for (const GpuSample& g : record.gpus) {
        Statement& st = (*insert)->reset();
        st.bind(1, std::string_view(id)).bind(2, record.time).bind(3, g.index).bind(4, record.step)
            .bind(5, g.utilPct).bind(6, g.memUsedGib).bind(7, g.memTotalGib).bind(8, g.powerW).bind(9, g.tempC)
            .bind(10, g.smClockMhz);
        if (auto r = db.stepDone(st, "storing a GPU sample"); !r)
            return r.error();
    }
    return static_cast<int64_t>(record.gpus.empty() ? 0 : 1);
}

Result<void> storeMeta(StoreDb& db, const std::string& id, const MetaRecord& meta)
{
    auto upsert = db.prepare(
        "INSERT INTO meta(run_id, json) VALUES (?1, ?2) "
        "ON CONFLICT(run_id) DO UPDATE SET json = excluded.json");
    if (!upsert)
        return upsert.error();
    const std::string json = toJsonLine(meta);
    (*upsert)->bind(1, std::string_view(id)).bind(2, std::string_view(json));
    if (auto r = db.stepDone(**upsert, "storing the meta record"); !r)
        return r.error();
    auto source = db.prepare("UPDATE runs SET data_source = ?2 WHERE id = ?1");
    if (!source)
        return source.error();
    (*source)->bind(1, std::string_view(id)).bind(2, std::string_view(meta.dataSource));
    return db.stepDone(**source, "storing the data source");
}

Result<void> advanceStreamOffset(StoreDb& db, const std::string& id, int64_t newOffset, int64_t malformedLines)
{
    auto advance = db.prepare(
        "UPDATE runs SET stream_offset = ?2, malformed_lines = malformed_lines + ?3 WHERE id = ?1");
    if (!advance)
        return advance.error();
    (*advance)->bind(1, std::string_view(id)).bind(2, newOffset).bind(3, malformedLines);
    return db.stepDone(**advance, "advancing the stream offset");
}

constexpr const char* kReplaceStep =
    "INSERT OR REPLACE INTO steps(run_id, step, time, step_ms, data_ms, vision_ms, projector_ms, "
    "decoder_ms, backward_ms, optimizer_ms, images, image_tokens, text_tokens, pad_tokens, "
    "effective_tokens, skipped_images, loss, aux_loss, grad_norm, lr, mem_alloc_gib, "
    "mem_reserved_gib, mem_peak_gib, tokens_per_s_per_gpu, tflops_per_gpu, mfu) VALUES "
    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
    "?21, ?22, ?23, ?24, ?25, ?26)";

// A memory report raises a step's columns to the report's values (NaN binds as NULL: unchanged).
constexpr const char* kStepMemory =
    "UPDATE steps SET "
    "mem_alloc_gib = CASE WHEN ?3 IS NULL THEN mem_alloc_gib WHEN mem_alloc_gib IS NULL THEN ?3 ELSE MAX(mem_alloc_gib, ?3) END, "
    "mem_reserved_gib = CASE WHEN ?4 IS NULL THEN mem_reserved_gib WHEN mem_reserved_gib IS NULL THEN ?4 ELSE MAX(mem_reserved_gib, ?4) END, "
    "mem_peak_gib = CASE WHEN ?5 IS NULL THEN mem_peak_gib WHEN mem_peak_gib IS NULL THEN ?5 ELSE MAX(mem_peak_gib, ?5) END "
    "WHERE run_id = ?1 AND step = ?2";

// Everything of a parsed chunk but the offset check (ingestParsed and importRun).
Result<IngestResult> storeParsedChunk(StoreDb& db, const std::string& id, const ParsedChunk& chunk)
{
    IngestResult result;
    result.newOffset = chunk.newOffset;
    result.malformedLines = chunk.malformedLines;
    auto insertStep = db.prepare(kReplaceStep);
    if (!insertStep)
        return insertStep.error();
    for (const StepRecord& step : chunk.steps) {
        Statement& st = (*insertStep)->reset();
        bindStep(st, id, step);
        if (auto r = db.stepDone(st, "storing a step"); !r)
            return r.error();
        ++result.stepsAdded;
    }
    auto memory = db.prepare(kStepMemory);
    if (!memory)
        return memory.error();
    for (const ParsedChunk::Memory& m : chunk.memory) {
        Statement& st = (*memory)->reset();
        st.bind(1, std::string_view(id)).bind(2, m.step).bind(3, m.allocGib).bind(4, m.reservedGib)
            .bind(5, m.peakGib);
        if (auto r = db.stepDone(st, "storing a memory report"); !r)
            return r.error();
    }
    std::optional<int64_t> nextSeq;
    for (const EventRecord& event : chunk.events) {
        if (auto r = storeEvent(db, id, event, nextSeq); !r)
            return r.error();
        ++result.eventsAdded;
    }
    if (chunk.meta) {
        if (auto r = storeMeta(db, id, *chunk.meta); !r)
            return r.error();
        result.sawMeta = true;
    }
    auto state = db.prepare("UPDATE runs SET source_state = ?2 WHERE id = ?1");
    if (!state)
        return state.error();
    (*state)->bind(1, std::string_view(id)).bind(2, std::string_view(chunk.sourceState));
    if (auto r = db.stepDone(**state, "storing the log reader's state"); !r)
        return r.error();
    if (auto r = advanceStreamOffset(db, id, chunk.newOffset, chunk.malformedLines); !r)
        return r.error();
    return result;
}

}  // namespace

Result<IngestResult> RunStore::ingest(const std::string& id, int64_t offset, std::string_view bytes)
{
    Transaction tx(m_impl.get());
    if (auto r = tx.begin(); !r)
        return r.error();
    // The offset check happens under the write lock, so two followers of one run cannot both
    // store the same chunk.
    if (auto r = checkStreamOffset(*m_impl, id, offset); !r)
        return r.error();

    MetricsLineReader reader;
    MetricsLineReader::Chunk chunk = reader.feed(bytes);

    IngestResult result;
    result.malformedLines = chunk.malformedLines;
    result.newOffset = offset + chunk.consumedBytes;

    auto insertStep = m_impl->prepare(kInsertStep);
    if (!insertStep)
        return insertStep.error();
    std::optional<int64_t> nextSeq;

    // Each record moves into the result once stored: the caller gets what these bytes held
    // without a second parse (RunFollower reports them).
    for (MetricsRecord& record : chunk.records) {
        if (auto* step = std::get_if<StepRecord>(&record)) {
            Statement& s = (*insertStep)->reset();
            bindStep(s, id, *step);
            if (auto r = m_impl->stepDone(s, "storing a step"); !r)
                return r.error();
            result.stepsAdded += sqlite3_changes(m_impl->db.get());
            result.steps.push_back(std::move(*step));
        } else if (auto* event = std::get_if<EventRecord>(&record)) {
            if (auto r = storeEvent(*m_impl, id, *event, nextSeq); !r)
                return r.error();
            ++result.eventsAdded;
            result.events.push_back(std::move(*event));
        } else if (auto* meta = std::get_if<MetaRecord>(&record)) {
            if (auto r = storeMeta(*m_impl, id, *meta); !r)
                return r.error();
            result.sawMeta = true;
            result.meta = std::move(*meta);
        } else if (const auto* end = std::get_if<EndRecord>(&record)) {
            result.end = *end;
        } else if (auto* gpu = std::get_if<GpuRecord>(&record)) {
            auto stored = storeGpuRecord(*m_impl, id, *gpu);
            if (!stored)
                return stored.error();
            result.gpuSamplesAdded += *stored;
            result.gpu.push_back(std::move(*gpu));
        }
    }

    if (auto r = advanceStreamOffset(*m_impl, id, result.newOffset, result.malformedLines); !r)
        return r.error();
    if (auto r = tx.commit(); !r)
        return r.error();
    return result;
}

Result<IngestResult> RunStore::ingestParsed(const std::string& id, const ParsedChunk& chunk)
{
    if (chunk.newOffset < chunk.offset)
        return makeError(ErrorCode::InvalidArgument, "a parsed chunk must not end before it starts", id);
    Transaction tx(m_impl.get());
    if (auto r = tx.begin(); !r)
        return r.error();
    if (auto r = checkStreamOffset(*m_impl, id, chunk.offset); !r)
        return r.error();
    auto result = storeParsedChunk(*m_impl, id, chunk);
    if (!result)
        return result.error();
    if (auto r = tx.commit(); !r)
        return r.error();
    return result;
}

Result<std::string> RunStore::sourceState(const std::string& id)
{
    auto stmt = m_impl->prepare("SELECT source_state FROM runs WHERE id = ?1");
    if (!stmt)
        return stmt.error();
    (*stmt)->bind(1, std::string_view(id));
    const int rc = (*stmt)->step();
    if (rc == SQLITE_DONE)
        return makeError(ErrorCode::NotFound, "no such run in the store; `runs` lists them", id);
    if (rc != SQLITE_ROW)
        return m_impl->lastError(rc, "reading the log reader's state");
    return (*stmt)->text(0);
}

Result<std::string> RunStore::importRun(const NewRun& run, const ParsedChunk& chunk,
                                        const std::optional<RunPrediction>& prediction,
                                        RunState finalState, int exitCode)
{
    Transaction tx(m_impl.get());
    if (auto r = tx.begin(); !r)
        return r.error();
    auto id = createRun(run);  // joins this transaction
    if (!id)
        return id.error();
    if (chunk.offset != 0)
        return makeError(ErrorCode::InvalidArgument, "an imported file is read from its first byte", *id);
    if (auto r = storeParsedChunk(*m_impl, *id, chunk); !r)
        return r.error();
    if (prediction)
        if (auto r = setPrediction(*id, *prediction); !r)
            return r.error();
    if (auto r = setStatus(*id, finalState, exitCode); !r)
        return r.error();
    if (auto r = tx.commit(); !r)
        return r.error();
    return *id;
}

Result<void> RunStore::skipLine(const std::string& id, int64_t offset, int64_t newOffset)
{
    if (newOffset <= offset)
        return makeError(ErrorCode::InvalidArgument, "a skipped line must end after it starts", id);
    Transaction tx(m_impl.get());
    if (auto r = tx.begin(); !r)
        return r.error();
    auto advance = m_impl->prepare("UPDATE runs SET stream_offset = ?3, malformed_lines = malformed_lines + 1 "
                                   "WHERE id = ?1 AND stream_offset = ?2");
    if (!advance)
        return advance.error();
    (*advance)->bind(1, std::string_view(id)).bind(2, offset).bind(3, newOffset);
    if (auto r = m_impl->stepDone(**advance, "skipping an over-long metrics line"); !r)
        return r.error();
    if (sqlite3_changes(m_impl->db.get()) != 1) {
        auto run = this->run(id);
        if (!run)
            return run.error();
        return makeError(offset < run->streamOffset ? ErrorCode::Busy : ErrorCode::InvalidArgument,
                         "the line to skip starts at offset " + std::to_string(offset) +
                             " but the store has ingested up to " + std::to_string(run->streamOffset),
                         id);
    }
    return tx.commit();
}

Result<std::vector<StepRecord>> RunStore::steps(const std::string& id, int64_t afterStep)
{
    static const std::string sql = std::string("SELECT ") + kStepColumns +
                                   " FROM steps WHERE run_id = ?1 AND step > ?2 ORDER BY step";
    // Sized first: growing a vector of 100k records page-faults every reallocation, which cost
    // more than the COUNT (an index range scan, nothing decoded). Only a hint: a row ingested in
    // between by another connection is still read.
    std::vector<StepRecord> out;
    {
        auto count = m_impl->prepare("SELECT COUNT(*) FROM steps WHERE run_id = ?1 AND step > ?2");
        if (!count)
            return count.error();
        (*count)->bind(1, std::string_view(id)).bind(2, afterStep);
        if ((*count)->step() == SQLITE_ROW)
            out.reserve(static_cast<size_t>(std::max<int64_t>((*count)->int64(0), 0)));
    }
    auto stmt = m_impl->prepare(sql.c_str());
    if (!stmt)
        return stmt.error();
    (*stmt)->bind(1, std::string_view(id)).bind(2, afterStep);
    int rc;
    while ((rc = (*stmt)->step()) == SQLITE_ROW)
        readStep(**stmt, out.emplace_back());
    if (rc != SQLITE_DONE)
        return m_impl->lastError(rc, "reading steps");
    return out;
}

const char* stepFieldKey(StepField field)
{
    // Enum order; the names are the steps table's columns and the metrics.jsonl keys.
    static constexpr std::array<const char*, kStepFieldCount> kKeys = {
        "time", "step_ms", "data_ms", "vision_ms", "projector_ms", "decoder_ms", "backward_ms",
        "optimizer_ms", "images", "image_tokens", "text_tokens", "pad_tokens", "effective_tokens",
        "skipped_images", "loss", "aux_loss", "grad_norm", "lr", "mem_alloc_gib", "mem_reserved_gib",
        "mem_peak_gib", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu"};
    const auto index = static_cast<size_t>(field);
    return index < kKeys.size() ? kKeys[index] : "?";
}

const std::vector<double>* StepColumns::column(StepField field) const
{
    for (size_t k = 0; k < fields.size(); ++k)
        if (fields[k] == field)
            return &values[k];
    return nullptr;
}

Result<StepColumns> RunStore::stepColumns(const std::string& id, std::span<const StepField> fields,
                                          int64_t afterStep)
{
    std::string sql = "SELECT step";
    for (size_t k = 0; k < fields.size(); ++k) {
        if (std::find(fields.begin(), fields.begin() + static_cast<std::ptrdiff_t>(k), fields[k]) !=
            fields.begin() + static_cast<std::ptrdiff_t>(k))
            return makeError(ErrorCode::InvalidArgument, "a step field is asked for twice",
                             stepFieldKey(fields[k]));
        if (static_cast<size_t>(fields[k]) >= kStepFieldCount)
            return makeError(ErrorCode::InvalidArgument, "not a step field");
        sql += ", ";
        sql += stepFieldKey(fields[k]);
    }
    sql += " FROM steps WHERE run_id = ?1 AND step > ?2 ORDER BY step";

    if (!m_impl->mappedReads) {
        // Bulk reads page the whole steps table through: memory-mapped, SQLite reads pages in
        // place instead of copying each one out of the kernel (that copy was ~5 % of loading 20
        // runs). Only this connection; a failure just leaves ordinary reads.
        m_impl->mappedReads = true;
        (void)m_impl->exec("PRAGMA mmap_size = 1073741824", "enabling memory-mapped reads");
    }
    StepColumns out;
    out.fields.assign(fields.begin(), fields.end());
    out.values.resize(fields.size());
    {   // Sized first, as in steps(): a hint only (rows ingested in between are still read).
        auto count = m_impl->prepare("SELECT COUNT(*) FROM steps WHERE run_id = ?1 AND step > ?2");
        if (!count)
            return count.error();
        (*count)->bind(1, std::string_view(id)).bind(2, afterStep);
        if ((*count)->step() == SQLITE_ROW) {
            const auto n = static_cast<size_t>(std::max<int64_t>((*count)->int64(0), 0));
            out.step.reserve(n);
            for (auto& v : out.values)
                v.reserve(n);
        }
    }
    auto stmt = m_impl->prepareBuilt(sql);
    if (!stmt)
        return stmt.error();
    (*stmt)->bind(1, std::string_view(id)).bind(2, afterStep);
    const int columns = static_cast<int>(fields.size());
    int rc;
    while ((rc = (*stmt)->step()) == SQLITE_ROW) {
        out.step.push_back((*stmt)->int64(0));
        for (int k = 0; k < columns; ++k)
            out.values[static_cast<size_t>(k)].push_back((*stmt)->realFast(k + 1));
    }
    if (rc != SQLITE_DONE)
        return m_impl->lastError(rc, "reading steps");
    return out;
}

Result<std::vector<GpuRecord>> RunStore::gpuRecords(const std::string& id)
{
    auto stmt = m_impl->prepare(
        "SELECT time, gpu, step, util_pct, mem_used_gib, mem_total_gib, power_w, temp_c, sm_clock_mhz "
        "FROM gpu_samples WHERE run_id = ?1 ORDER BY time, gpu");
    if (!stmt)
        return stmt.error();
    (*stmt)->bind(1, std::string_view(id));
    std::vector<GpuRecord> out;
    int rc;
    const auto real = [&](int column) {
        return (*stmt)->isNull(column) ? std::numeric_limits<double>::quiet_NaN() : (*stmt)->real(column);
    };
    while ((rc = (*stmt)->step()) == SQLITE_ROW) {
        const double time = (*stmt)->real(0);
        if (out.empty() || out.back().time != time) {
            out.push_back(GpuRecord{time, {}, {}});
            if (!(*stmt)->isNull(2))
                out.back().step = (*stmt)->int64(2);
        }
        out.back().gpus.push_back({static_cast<int>((*stmt)->int64(1)), real(3), real(4), real(5), real(6), real(7), real(8)});
    }
    if (rc != SQLITE_DONE)
        return m_impl->lastError(rc, "reading the GPU samples");
    return out;
}

Result<std::vector<EventRecord>> RunStore::events(const std::string& id)
{
    auto stmt = m_impl->prepare(
        "SELECT time, level, msg, step FROM events WHERE run_id = ?1 ORDER BY seq");
    if (!stmt)
        return stmt.error();
    (*stmt)->bind(1, std::string_view(id));
    std::vector<EventRecord> out;
    int rc;
    while ((rc = (*stmt)->step()) == SQLITE_ROW) {
        EventRecord e;
        e.time = (*stmt)->real(0);
        e.level = (*stmt)->text(1);
        e.msg = (*stmt)->text(2);
        if (!(*stmt)->isNull(3))
            e.step = (*stmt)->int64(3);
        out.push_back(std::move(e));
    }
    if (rc != SQLITE_DONE)
        return m_impl->lastError(rc, "reading events");
    return out;
}

std::string newRunId() { return generateRunIdText(); }

}  // namespace wb::core
