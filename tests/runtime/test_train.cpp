// End-to-end training on CPU (label slow). Two cases, chosen by argv[1]:
//   learn : builds a ~200-image sample set with moe-sample-set, trains sample-tiny with
//           moe-train, and checks that the loss falls (mean of the last 20 steps < 0.7 × the
//           first 20), status.json says finished, exit 0, and the metrics stream is complete.
//   signal: SIGTERM mid-run → exit 5, status "stopped", a checkpoint exists; --resume continues.
//   resume: a run stopped by SIGTERM at step k and resumed gives bit-identical losses (and grad
//           norms, LRs) to an uninterrupted run of the same config (CPU, fp32, 1 thread), with
//           gradient accumulation (2 micro-batches per step) so a stop can land mid-step;
//           `resume host-ahead` the same under WB_HOST_AHEAD=1, equal to a run without it.
//   golden: the first 20 losses of sample-mock against tests/runtime/golden/sample-mock-losses.json
//           within the relative tolerance stated (and derived) there; `golden --regenerate`
//           rewrites the losses in that file from a fresh run.
//   oom   : under an address-space limit (setrlimit RLIMIT_AS in the child, i.e. `ulimit -v`) a
//           config whose attention mask cannot fit exits 3, status "oom", with a message naming the
//           consumers (parameters, gradients, optimizer state, activations) and ranking the knobs.
#include "check.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>

#include <sys/resource.h>
#include <unistd.h>

using namespace wb;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json sampleConfig(const char* name)
{
    std::ifstream in(std::string(WB_SOURCE_DIR) + "/resources/configs/" + name);
    return json::parse(in);
}

std::vector<json> readMetrics(const fs::path& runDir)
{
    std::vector<json> records;
    std::ifstream in(runDir / "metrics.jsonl");
    std::string line;
    while (std::getline(in, line))
        records.push_back(json::parse(line, nullptr, false));
    return records;
}

json readStatus(const fs::path& runDir)
{
    return json::parse(test::readFile(runDir / "status.json"), nullptr, false);
}

void testLearns(const fs::path& dir, int steps)
{
    const fs::path set = dir / "set";
    const int rcSet = test::runProcess({MOE_SAMPLE_SET_PATH, "--from", "/usr/share/openclipart/png", "--out",
                                        set.string(), "--count", "200", "--jpeg-every", "5"},
                                       (dir / "set.log").string(), 120);
    WB_CHECK_MSG(rcSet == 0, test::readFile(dir / "set.log"));
    json config = sampleConfig("sample-tiny.json");
    config["data"]["manifest"] = (set / "manifest.jsonl").string();
    config["train"]["train_iters"] = steps;
    std::ofstream(dir / "run.json") << config.dump(2);

    const fs::path runDir = dir / "run";
    const auto start = std::chrono::steady_clock::now();
    const int rc = test::runProcess({MOE_TRAIN_PATH, "--config", (dir / "run.json").string(), "--run-dir",
                                     runDir.string()}, (dir / "stdout.log").string(), 600);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    WB_CHECK_MSG(rc == 0, "rc " << rc << "\n" << test::readFile(dir / "stdout.log"));

    std::vector<double> losses, stepMs;
    bool meta = false, end = false;
    int64_t images = 0, skipped = 0;
    for (const json& r : readMetrics(runDir)) {
        WB_CHECK(r.is_object());
        const std::string type = r.value("type", "");
        meta = meta || type == "meta";
        if (type == "meta")
            WB_CHECK(r.value("data_source", "") == "real" && r.value("run_id", "") == "run");
        if (type == "step") {
            losses.push_back(r.value("loss", 0.0));
            stepMs.push_back(r.value("step_ms", 0.0));
            images += r.value("images", int64_t{0});
            skipped += r.value("skipped_images", int64_t{0});
            WB_CHECK(r.value("effective_tokens", int64_t{0}) == r.value("image_tokens", int64_t{0}) + r.value("text_tokens", int64_t{0}));
            WB_CHECK(r.value("tflops_per_gpu", 0.0) > 0.0 && r.value("tokens_per_s_per_gpu", 0.0) > 0.0);
        }
        if (type == "end")
            end = r.value("status", "") == "finished" && r.value("exit_code", -1) == 0;
    }
    WB_CHECK(meta && end);
    WB_CHECK_MSG(static_cast<int>(losses.size()) == steps, losses.size() << " step records");
    WB_CHECK(images > 0 && skipped == 0);
    if (losses.size() >= 40) {
        double first = 0, last = 0;
        for (size_t i = 0; i < 20; ++i) {
            first += losses[i] / 20;
            last += losses[losses.size() - 20 + i] / 20;
        }
        std::vector<double> sorted(stepMs.begin() + 5, stepMs.end());
        std::sort(sorted.begin(), sorted.end());
        std::cout << "loss first-20 mean " << first << ", last-20 mean " << last << " (ratio " << last / first
                  << "); median step_ms " << sorted[sorted.size() / 2] << "; " << steps << " steps in "
                  << seconds << " s" << std::endl;
        WB_CHECK_MSG(last < 0.7 * first, "loss did not fall enough: " << first << " → " << last);
    }
    const json status = readStatus(runDir);
    WB_CHECK(status.value("status", "") == "finished" && status.value("exit_code", -1) == 0 &&
             status.value("step", 0) == steps);
    WB_CHECK(fs::exists(runDir / "pid"));
}

void testSignal(const fs::path& dir)
{
    json config = sampleConfig("sample-mock.json");
    config["data"]["manifest"] = "";  // mock needs no files: synthetic captions
    config["train"]["train_iters"] = 100000;
    config["train"]["lr_warmup_iters"] = 2;  // the resume below runs only a few steps
    std::ofstream(dir / "run.json") << config.dump(2);
    const fs::path runDir = dir / "run";
    const std::string log = (dir / "stdout.log").string();
    const pid_t pid = test::spawnProcess({MOE_TRAIN_PATH, "--config", (dir / "run.json").string(), "--run-dir", runDir.string()}, log);
    // Wait until a few steps are in the metrics stream, then ask it to stop.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
        const std::string metrics = test::readFile(runDir / "metrics.jsonl");
        if (metrics.find("\"step\":3,") != std::string::npos)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::kill(pid, SIGTERM);
    const int rc = test::waitProcess(pid, 120);
    WB_CHECK_MSG(rc == 5, "rc " << rc << "\n" << test::readFile(log));
    const json status = readStatus(runDir);
    WB_CHECK(status.value("status", "") == "stopped" && status.value("exit_code", -1) == 5);
    const int64_t stoppedAt = status.value("step", int64_t{0});
    WB_CHECK(stoppedAt >= 3);
    WB_CHECK(fs::exists(runDir / "ckpt" / "latest.pt"));
    const auto records = readMetrics(runDir);
    WB_CHECK(!records.empty() && records.back().value("type", "") == "end" && records.back().value("status", "") == "stopped");

    // --resume picks the checkpoint up and continues from the saved step.
    config["train"]["train_iters"] = stoppedAt + 2;
    std::ofstream(dir / "run.json") << config.dump(2);
    const int rcResume = test::runProcess({MOE_TRAIN_PATH, "--config", (dir / "run.json").string(), "--run-dir",
                                           runDir.string(), "--resume"}, log, 300);
    WB_CHECK_MSG(rcResume == 0, "resume rc " << rcResume << "\n" << test::readFile(log));
    const std::string metrics = test::readFile(runDir / "metrics.jsonl");
    WB_CHECK(metrics.find("resumed from") != std::string::npos);
    WB_CHECK(readStatus(runDir).value("step", int64_t{0}) == stoppedAt + 2);
}

std::vector<json> stepRecords(const fs::path& runDir)
{
    std::vector<json> steps;
    for (const json& r : readMetrics(runDir))
        if (r.is_object() && r.value("type", "") == "step")
            steps.push_back(r);
    return steps;
}

// `bf16Moments`: the same with the Adam moments stored in bf16 (they must round-trip exactly), and
// the stopped run resumed once more with fp32 moments: converted with a warning event.
// `hostAhead`: every run with WB_HOST_AHEAD=1 (the step's record reported once its optimizer phase
// is known, after the next step's wait; a stop reports the pending one first), and the
// uninterrupted run bit-identical to one without it, with one record per step, in order, each with
// its optimizer phase.
void testResumeEqualsUninterrupted(const fs::path& dir, bool bf16Moments, bool hostAhead = false)
{
    json config = sampleConfig("sample-mock.json");
    config["data"]["manifest"] = "";
    if (bf16Moments)
        config["train"]["exp_avg_dtype"] = config["train"]["exp_avg_sq_dtype"] = "bf16";
    config["train"]["train_iters"] = 14;
    config["train"]["lr_warmup_iters"] = 3;
    config["train"]["global_batch_size"] = 8;  // MBS 4: two micro-batches per step
    std::ofstream(dir / "run.json") << config.dump(2);
    const std::string cfg = (dir / "run.json").string();

    fs::path plain;
    if (hostAhead) {
        plain = dir / "plain";
        const int rc = test::runProcess({MOE_TRAIN_PATH, "--config", cfg, "--run-dir", plain.string()},
                                        (dir / "plain.log").string(), 300);
        WB_CHECK_MSG(rc == 0, test::readFile(dir / "plain.log"));
        ::setenv("WB_HOST_AHEAD", "1", 1);  // the runs below, the stopped one and its resume included
    }
    const fs::path whole = dir / "whole";
    const int rcWhole = test::runProcess({MOE_TRAIN_PATH, "--config", cfg, "--run-dir", whole.string()},
                                         (dir / "whole.log").string(), 300);
    WB_CHECK_MSG(rcWhole == 0, test::readFile(dir / "whole.log"));
    if (hostAhead) {
        const std::string events = test::readFile(whole / "metrics.jsonl");
        WB_CHECK_MSG(events.find("the host queues the next step") != std::string::npos, events);
        WB_CHECK_MSG(events.find("runtime switches from the environment: WB_HOST_AHEAD=1") != std::string::npos,
                     events);
        WB_CHECK_MSG(events.find("\"runtime_switches\":{\"WB_HOST_AHEAD\":\"1\"}") != std::string::npos, events);
        WB_CHECK_MSG(test::readFile(plain / "metrics.jsonl").find("runtime_switches") == std::string::npos,
                     "a run without switches writes none");
        const auto ahead = stepRecords(whole), reference = stepRecords(plain);
        WB_CHECK_MSG(ahead.size() == 14 && reference.size() == 14, ahead.size() << " and " << reference.size());
        for (size_t i = 0; i < ahead.size() && i < reference.size(); ++i) {
            WB_CHECK_MSG(ahead[i].value("step", 0) == static_cast<int>(i) + 1,
                         "record " << i << ": " << ahead[i].dump());
            WB_CHECK_MSG(ahead[i].value("optimizer_ms", 0.0) > 0.0, ahead[i].dump());
            for (const char* field : {"loss", "aux_loss", "grad_norm", "lr"})
                WB_CHECK_MSG(ahead[i].value(field, 0.0) == reference[i].value(field, 1.0),
                             "host ahead, step " << i + 1 << " " << field);
        }
    }

    const fs::path parts = dir / "parts";
    const std::string log = (dir / "parts.log").string();
    const pid_t pid = test::spawnProcess({MOE_TRAIN_PATH, "--config", cfg, "--run-dir", parts.string()}, log);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline &&
           test::readFile(parts / "metrics.jsonl").find("\"step\":3,") == std::string::npos)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ::kill(pid, SIGTERM);
    const int rcStop = test::waitProcess(pid, 120);
    WB_CHECK_MSG(rcStop == 5, "rc " << rcStop << "\n" << test::readFile(log));
    const int64_t stoppedAt = readStatus(parts).value("step", int64_t{0});
    WB_CHECK_MSG(stoppedAt >= 3 && stoppedAt < 14, "stopped at " << stoppedAt);
    if (bf16Moments) {
        const fs::path other = dir / "fp32-moments";
        fs::copy(parts, other, fs::copy_options::recursive);
        json fp32 = config;
        fp32["train"]["exp_avg_dtype"] = fp32["train"]["exp_avg_sq_dtype"] = "fp32";
        fp32["train"]["train_iters"] = stoppedAt + 1;
        std::ofstream(dir / "fp32.json") << fp32.dump(2);
        const int rc = test::runProcess({MOE_TRAIN_PATH, "--config", (dir / "fp32.json").string(), "--run-dir",
                                         other.string(), "--resume"},
                                        (dir / "fp32.log").string(), 300);
        WB_CHECK_MSG(rc == 0, test::readFile(dir / "fp32.log"));
        const std::string events = test::readFile(other / "metrics.jsonl");
        WB_CHECK_MSG(events.find("\"warning\"") != std::string::npos &&
                         events.find("exp_avg bf16 → fp32") != std::string::npos,
                     events);
    }
    const int rcResume = test::runProcess({MOE_TRAIN_PATH, "--config", cfg, "--run-dir", parts.string(), "--resume"},
                                          (dir / "resume.log").string(), 300);
    WB_CHECK_MSG(rcResume == 0, test::readFile(dir / "resume.log"));

    const auto a = stepRecords(whole), b = stepRecords(parts);
    WB_CHECK_MSG(a.size() == 14 && b.size() == 14, a.size() << " and " << b.size() << " step records");
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        WB_CHECK(a[i].value("step", 0) == b[i].value("step", -1));
        // Exact: the same doubles, printed the same way.
        for (const char* field : {"loss", "aux_loss", "grad_norm", "lr"})
            WB_CHECK_MSG(a[i].value(field, 0.0) == b[i].value(field, 1.0),
                         "step " << i + 1 << " " << field << ": " << a[i].value(field, 0.0) << " vs " << b[i].value(field, 1.0)
                                 << " (stopped at " << stoppedAt << ")");
        WB_CHECK(a[i].value("images", 0) == b[i].value("images", -1));
    }
    std::cout << "stopped at step " << stoppedAt << ", resumed to 14: all 14 losses bit-identical to the uninterrupted run"
              << std::endl;
}

// Applies "a.b.c": value overrides to a config.
void applyOverrides(json& config, const json& overrides)
{
    for (const auto& [path, value] : overrides.items()) {
        json* at = &config;
        std::stringstream parts(path);
        std::string key;
        while (std::getline(parts, key, '.'))
            at = &(*at)[key];
        *at = value;
    }
}

void testGoldenLosses(const fs::path& dir, bool regenerate)
{
    const fs::path goldenPath = fs::path(WB_SOURCE_DIR) / "tests/runtime/golden/sample-mock-losses.json";
    json golden = json::parse(test::readFile(goldenPath), nullptr, false);
    WB_CHECK_MSG(golden.is_object(), "cannot read " << goldenPath);
    if (!golden.is_object())
        return;
    json config = json::parse(test::readFile(fs::path(WB_SOURCE_DIR) / golden.value("config", "")));
    applyOverrides(config, golden["overrides"]);
    std::ofstream(dir / "run.json") << config.dump(2);
    const fs::path runDir = dir / "run";
    const int rc = test::runProcess({MOE_TRAIN_PATH, "--config", (dir / "run.json").string(), "--run-dir", runDir.string()},
                                    (dir / "stdout.log").string(), 300);
    WB_CHECK_MSG(rc == 0, test::readFile(dir / "stdout.log"));
    std::vector<double> losses, aux;
    for (const json& r : stepRecords(runDir)) {
        losses.push_back(r.value("loss", 0.0));
        aux.push_back(r.value("aux_loss", 0.0));
    }
    if (regenerate) {
        golden["losses"] = losses;
        golden["aux_losses"] = aux;
        std::ofstream(goldenPath) << golden.dump(2) << "\n";
        std::cout << "wrote " << losses.size() << " losses to " << goldenPath << std::endl;
        return;
    }
    const auto expected = golden["losses"].get<std::vector<double>>();
    const auto expectedAux = golden["aux_losses"].get<std::vector<double>>();
    const double tolerance = golden.value("relative_tolerance", 0.0);
    WB_CHECK_MSG(losses.size() == expected.size() && aux.size() == expectedAux.size(),
                 losses.size() << " losses, golden has " << expected.size());
    double worst = 0.0;
    for (size_t i = 0; i < losses.size() && i < expected.size(); ++i) {
        const double rel = std::fabs(losses[i] - expected[i]) / std::fabs(expected[i]);
        const double relAux = std::fabs(aux[i] - expectedAux[i]) / std::fabs(expectedAux[i]);
        worst = std::max({worst, rel, relAux});
        WB_CHECK_MSG(rel <= tolerance && relAux <= tolerance,
                     "step " << i + 1 << ": loss " << losses[i] << " vs golden " << expected[i] << ", aux " << aux[i]
                             << " vs " << expectedAux[i] << " (relative tolerance " << tolerance
                             << "; if the change is intended: test_runtime_train golden --regenerate)");
    }
    std::cout << losses.size() << " losses within " << worst << " relative of the golden file (tolerance " << tolerance
              << ")" << std::endl;
}

// Runs moe-train on `config` in a child limited to 3 GiB of address space; returns the exit code.
int runUnderAddressLimit(const fs::path& dir, const json& config, const fs::path& runDir, const std::string& log)
{
    std::ofstream(dir / "run.json") << config.dump(2);
    const std::vector<std::string> args{MOE_TRAIN_PATH, "--config", (dir / "run.json").string(), "--run-dir", runDir.string()};
    const pid_t pid = ::fork();
    if (pid == 0) {
        const rlimit limit{3ull << 30, 3ull << 30};
        ::setrlimit(RLIMIT_AS, &limit);
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        std::vector<char*> argv;
        for (const auto& a : args)
            argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    return test::waitProcess(pid, 120);
}

// A loader thread that runs out of host memory ends the run with exit 3 and a message naming the
// data knobs, not with std::terminate: mock noise images of 16384² pixels (768 MiB each, more once
// patchified) on two decoder threads cannot fit the 3 GiB address space.
void testLoaderOutOfMemory(const fs::path& dir)
{
    json config = sampleConfig("sample-mock.json");
    config["data"]["manifest"] = "";
    config["data"]["mock_image_size"] = 16384;
    config["data"]["num_workers"] = 2;
    config["train"]["seq_length"] = 300000;
    config["train"]["train_iters"] = 2;
    config["train"]["lr_warmup_iters"] = 1;
    const fs::path runDir = dir / "run-loader";
    const std::string log = (dir / "loader.log").string();
    const int rc = runUnderAddressLimit(dir, config, runDir, log);
    WB_CHECK_MSG(rc == 3, "rc " << rc << " (134 = abort: the exception escaped the loader thread)\n" << test::readFile(log));
    const json status = readStatus(runDir);
    WB_CHECK(status.value("status", "") == "oom" && status.value("exit_code", -1) == 3);
    const std::string message = status.value("message", "");
    for (const char* part : {"data loader", "out of host memory", "data.max_pixels", "data.num_workers"})
        WB_CHECK_MSG(message.find(part) != std::string::npos, "'" << part << "' missing in: " << message);
    std::cout << message << std::endl;
}

void testOutOfMemory(const fs::path& dir)
{
    // Text-only mock rows of 32768 tokens: the decoder's B×T×T document mask alone is 4 GiB, far
    // above the 3 GiB address space (moe-train itself maps ~1.1 GiB), while every other buffer is
    // small, so the failing allocation is LibTorch's and not a loader thread's.
    json config = sampleConfig("sample-mock.json");
    config["data"]["manifest"] = "";
    config["data"]["mock_image_size"] = 0;
    config["train"]["seq_length"] = 32768;
    config["train"]["train_iters"] = 3;
    config["train"]["lr_warmup_iters"] = 1;
    const fs::path runDir = dir / "run";
    const std::string log = (dir / "stdout.log").string();
    const int rc = runUnderAddressLimit(dir, config, runDir, log);
    WB_CHECK_MSG(rc == 3, "rc " << rc << "\n" << test::readFile(log));
    const json status = readStatus(runDir);
    WB_CHECK(status.value("status", "") == "oom" && status.value("exit_code", -1) == 3);
    const std::string message = status.value("message", "");
    for (const char* part : {"out of memory on cpu", "parameters ", "gradients ", "optimizer state ", "activations ~",
                             "the failed request 4.00 GiB", "1. activation recompute", "2. a smaller micro-batch",
                             "FSDP", "freeze_vision_model"})
        WB_CHECK_MSG(message.find(part) != std::string::npos, "'" << part << "' missing in: " << message);
    const auto records = readMetrics(runDir);
    WB_CHECK(!records.empty() && records.back().value("type", "") == "end" && records.back().value("exit_code", 0) == 3);
    std::cout << message << std::endl;
}

// A disk too small for the checkpoint: moe-train stops before writing anything (no partial file),
// exit 1 with a message giving the need, the free space and the fixes. The run's ckpt/ folder is
// a 1 MiB tmpfs in a private mount namespace (root only; skipped elsewhere).
bool testCheckpointDiskFull(const fs::path& dir)
{
    if (::geteuid() != 0 || std::system("unshare -m true >/dev/null 2>&1") != 0) {
        std::cerr << "needs root and mount namespaces (unshare -m) for a small tmpfs; skipping\n";
        return false;
    }
    json config = sampleConfig("sample-mock.json");
    config["data"]["manifest"] = "";
    config["train"]["train_iters"] = 3;
    config["train"]["lr_warmup_iters"] = 1;
    config["train"]["checkpoint_interval"] = 1;
    const fs::path cfg = dir / "disk-full.json", runDir = dir / "run-disk-full";
    std::ofstream(cfg) << config.dump(1);
    fs::create_directories(runDir / "ckpt");
    // Inside the namespace: the small disk on RUN/ckpt, moe-train, then what ckpt/ holds.
    const std::string script = "mount -t tmpfs -o size=1m wbtest-full \"$1/ckpt\" || exit 77; shift; run=$1; shift; "
                               "\"$@\"; rc=$?; ls -A \"$run/ckpt\" > \"$run/ckpt-listing.txt\"; exit $rc";
    const std::string log = (dir / "disk-full.log").string();
    const int rc = test::runProcess({"/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script, "sh",
                                     runDir.string(), runDir.string(), MOE_TRAIN_PATH, "--config", cfg.string(),
                                     "--run-dir", runDir.string()},
                                    log, 120);
    if (rc == 77) {
        std::cerr << "cannot mount a tmpfs here; skipping\n" << test::readFile(log);
        return false;
    }
    WB_CHECK_MSG(rc == 1, "rc " << rc << "\n" << test::readFile(log));
    const json status = readStatus(runDir);
    const std::string message = status.value("message", "");
    for (const char* part : {"not enough disk space for the checkpoint", "are free", "--run-dir", "checkpoint_interval 0"})
        WB_CHECK_MSG(message.find(part) != std::string::npos, "'" << part << "' missing in: " << message);
    WB_CHECK_MSG(status.value("exit_code", -1) == 1 && status.value("step", int64_t{0}) == 1, status.dump());
    const std::string listing = test::readFile(runDir / "ckpt-listing.txt");
    WB_CHECK_MSG(listing.empty(), "left in ckpt/: " << listing);
    std::cout << message << std::endl;
    return true;
}

}  // namespace

int main(int argc, char** argv)
{
    const std::string which = argc > 1 ? argv[1] : "learn";
    const fs::path dir = test::makeTempDir("wb-runtime-train");
    if (which == "signal") {
        testSignal(dir);
    } else if (which == "resume") {
        const std::string variant = argc > 2 ? argv[2] : "";
        testResumeEqualsUninterrupted(dir, variant == "bf16-moments", variant == "host-ahead");
    } else if (which == "oom") {
#if defined(__SANITIZE_ADDRESS__)
        std::cerr << "an address-space limit cannot be combined with AddressSanitizer; skipping\n";
        return 77;
#endif
        testOutOfMemory(dir);
        testLoaderOutOfMemory(dir);
    } else if (which == "disk-full") {
        if (!testCheckpointDiskFull(dir)) {
            fs::remove_all(dir);
            return 77;
        }
    } else if (which == "golden") {
        testGoldenLosses(dir, argc > 2 && std::string(argv[2]) == "--regenerate");
    } else {
        if (!fs::is_directory("/usr/share/openclipart/png")) {
            std::cerr << "openclipart-png is not installed (apt-get install openclipart-png); skipping\n";
            return 77;
        }
        testLearns(dir, argc > 2 ? std::atoi(argv[2]) : 300);
    }
    if (test::failureCount() == 0)
        fs::remove_all(dir);
    else
        std::cerr << "kept " << dir << " for inspection\n";
    return test::checkExitCode(("test_runtime_train " + which).c_str());
}
