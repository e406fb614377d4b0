// Fuzz target: the store's ingest of metrics.jsonl bytes (core/run_store.h), what every follower
// calls with whatever a run directory holds. One store on a temporary file, renewed every few
// thousand inputs so it stays small.
// Properties: ingest never fails on any bytes at the stored offset (bad lines are counted, not
// errors); the offset moves exactly past the complete lines; the run's stored offset, step count
// and malformed count are what the ingests reported; the bytes again at the old offset are
// refused (Busy) and change nothing; the stored steps read back.
#include "core/run_store.h"
#include "tests/fuzz/fuzz_check.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unistd.h>

namespace {

struct Fixture {
    std::string path;
    std::unique_ptr<wb::core::RunStore> store;
    std::string id;
    int64_t steps = 0;
    int64_t malformed = 0;
    int inputs = 0;

    void renew()
    {
        store.reset();
        for (const char* suffix : {"", "-wal", "-shm"})
            std::filesystem::remove(path + suffix);
        auto opened = wb::core::RunStore::open(path);
        wb::fuzz::check(static_cast<bool>(opened), "cannot open the fuzz store", opened ? "" : opened.error().message);
        store = std::move(*opened);
        wb::core::NewRun run;
        run.name = "fuzz";
        run.target = "local";
        run.configJson = "{}";
        auto created = store->createRun(run);
        wb::fuzz::check(static_cast<bool>(created), "cannot create the fuzz run");
        id = *created;
        steps = malformed = 0;
        inputs = 0;
    }

    Fixture()
    {
        const char* dir = std::getenv("TMPDIR");
        path = std::string(dir && *dir ? dir : "/tmp") + "/wb-fuzz-store-" + std::to_string(getpid()) + ".sqlite";
        renew();
    }
    ~Fixture()
    {
        store.reset();
        for (const char* suffix : {"", "-wal", "-shm"})
            std::filesystem::remove(path + suffix);
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace wb::core;
    static Fixture f;
    if (++f.inputs > 5000)
        f.renew();
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);

    auto before = f.store->run(f.id);
    wb::fuzz::check(static_cast<bool>(before), "the fuzz run is gone");
    const int64_t offset = before->streamOffset;

    auto ingested = f.store->ingest(f.id, offset, bytes);
    wb::fuzz::check(static_cast<bool>(ingested), "ingest failed on bytes at the stored offset",
                    ingested ? "" : ingested.error().message);
    const size_t lastNewline = bytes.rfind('\n');
    const int64_t complete = lastNewline == std::string_view::npos ? 0 : static_cast<int64_t>(lastNewline + 1);
    wb::fuzz::check(ingested->newOffset == offset + complete, "the offset did not move exactly past the complete lines");
    f.steps += ingested->stepsAdded;
    f.malformed += ingested->malformedLines;

    auto after = f.store->run(f.id);
    wb::fuzz::check(static_cast<bool>(after), "the fuzz run cannot be read after ingest");
    wb::fuzz::check(after->streamOffset == ingested->newOffset, "the stored offset is not the one ingest returned");
    wb::fuzz::check(after->malformedLines == f.malformed, "the stored malformed count is not the sum of the ingests'");
    wb::fuzz::check(after->steps <= f.steps, "more steps stored than ingests reported");

    if (complete > 0) {
        auto repeated = f.store->ingest(f.id, offset, bytes);
        wb::fuzz::check(!repeated && repeated.error().code == ErrorCode::Busy,
                        "the same bytes at an old offset were not refused as Busy");
        auto unchanged = f.store->run(f.id);
        wb::fuzz::check(static_cast<bool>(unchanged) && unchanged->streamOffset == after->streamOffset &&
                            unchanged->steps == after->steps,
                        "a refused ingest changed the run");
    }
    auto stored = f.store->steps(f.id);
    wb::fuzz::check(static_cast<bool>(stored) && static_cast<int64_t>(stored->size()) == after->steps,
                    "the stored steps do not read back");
    return 0;
}
