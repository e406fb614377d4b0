// moe-train's command line as a user meets it: --validate on a good and a bad config (exit 0 /
// exit 2 with every problem listed), --version, --self-check JSON, a usage error, a run whose
// metrics file cannot be written (exit 1, status failed).
#include "check.h"

#include <nlohmann/json.hpp>

#include <chrono>

using namespace wb;
namespace fs = std::filesystem;
using nlohmann::json;

static json sampleConfig()
{
    std::ifstream in(std::string(WB_SOURCE_DIR) + "/resources/configs/sample-tiny.json");
    return json::parse(in);
}

int main()
{
    const fs::path dir = test::makeTempDir("wb-runtime-cli");
    const std::string moeTrain = MOE_TRAIN_PATH;
    const std::string log = (dir / "out.log").string();

    // The shipped configs name a relative manifest that launchers point at the user's sample set;
    // here it points at a manifest that exists, of an image that decodes (--validate decodes a
    // sample of the manifest's images).
    const std::string icon = std::string(WB_SOURCE_DIR) + "/resources/icons/moe-workbench.png";
    std::ofstream(dir / "manifest.jsonl") << json{{"image", icon}, {"caption", "a"}}.dump() << "\n";
    std::ofstream(dir / "missing-images.jsonl") << "{\"image\": \"a.png\", \"caption\": \"a\"}\n";
    for (const char* name : {"sample-tiny.json", "sample-mock.json"}) {
        std::ifstream in(std::string(WB_SOURCE_DIR) + "/resources/configs/" + name);
        json config = json::parse(in);
        config["data"]["manifest"] = (dir / "manifest.jsonl").string();
        const std::string path = (dir / name).string();
        std::ofstream(path) << config.dump(2);
        const int rc = test::runProcess({moeTrain, "--validate", path}, log, 60);
        WB_CHECK_MSG(rc == 0, name << " rc " << rc << ": " << test::readFile(log));
    }
    {
        json missing = sampleConfig();
        missing["data"]["manifest"] = (dir / "no-such-manifest.jsonl").string();
        std::ofstream(dir / "missing-manifest.json") << missing.dump(2);
        WB_CHECK(test::runProcess({moeTrain, "--validate", (dir / "missing-manifest.json").string()}, log, 60) == 2);
        const std::string text = test::readFile(log);
        WB_CHECK_MSG(text.find("data.manifest") != std::string::npos && text.find("moe-sample-set") != std::string::npos,
                     "missing-manifest message: " << text);
    }

    json bad = sampleConfig();
    bad["model"]["decoder"]["vocab_size"] = 100;                   // runtime: byte tokenizer needs 260
    bad["parallel"]["context_parallel_size"] = 2;                  // runtime: no CP on CUDA
    bad["runtime"]["device"] = "cuda";                             // runtime: no CUDA here
    bad["train"]["micro_batch_size"] = 3;                          // core: GBS 2 not divisible by 3
    bad["train"]["no_such_key"] = 1;                               // core: unknown key
    std::ofstream(dir / "bad.json") << bad.dump(2);
    const int rc = test::runProcess({moeTrain, "--validate", (dir / "bad.json").string()}, log, 60);
    const std::string out = test::readFile(log);
    WB_CHECK_MSG(rc == 2, "rc " << rc);
    for (const char* expected : {"model.decoder.vocab_size", "260", "parallel.context_parallel_size",
                                 "on the CPU (Gloo) only", "runtime.device", "train.global_batch_size", "no_such_key"})
        WB_CHECK_MSG(out.find(expected) != std::string::npos, "missing \"" << expected << "\" in:\n" << out);

    // The planner-only hybrid fields (Qwen3.5 / 3.6): moe-train refuses each, naming Megatron-Bridge.
    json hybrid = sampleConfig();
    hybrid["model"]["decoder"]["linear_attention_freq"] = 2;
    hybrid["model"]["decoder"]["moe_shared_expert_intermediate_size"] = 64;
    hybrid["model"]["decoder"]["mtp_num_layers"] = 1;
    std::ofstream(dir / "hybrid.json") << hybrid.dump(2);
    WB_CHECK(test::runProcess({moeTrain, "--validate", (dir / "hybrid.json").string()}, log, 60) == 2);
    const std::string hybridOut = test::readFile(log);
    for (const char* expected : {"model.decoder.linear_attention_freq", "gated DeltaNet", "model.decoder.moe_shared_expert_intermediate_size",
                                 "model.decoder.mtp_num_layers", "--for megatron-bridge"})
        WB_CHECK_MSG(hybridOut.find(expected) != std::string::npos, "missing \"" << expected << "\" in:\n" << hybridOut);

    std::ofstream(dir / "broken.json") << "{ not json";
    WB_CHECK(test::runProcess({moeTrain, "--validate", (dir / "broken.json").string()}, log, 60) == 2);
    WB_CHECK(test::runProcess({moeTrain, "--validate", (dir / "absent.json").string()}, log, 60) == 2);
    // A number beyond double range: exit 2 with one problem saying so (issue 20 item 1; it was
    // exit 1 with the JSON library's raw text), not the defaults' problems of an unread config.
    // Not a regular file (issue 20 item 7): a directory and /dev/zero are exit 2 naming what they are.
    WB_CHECK(test::runProcess({moeTrain, "--validate", dir.string()}, log, 60) == 2);
    WB_CHECK_MSG(test::readFile(log).find("is a directory") != std::string::npos, test::readFile(log));
    WB_CHECK(test::runProcess({moeTrain, "--validate", "/dev/zero"}, log, 60) == 2);
    WB_CHECK_MSG(test::readFile(log).find("is a device") != std::string::npos, test::readFile(log));
    std::ofstream(dir / "overflow.json") << "{\"train\": {\"lr\": 1e999}}";
    WB_CHECK(test::runProcess({moeTrain, "--validate", (dir / "overflow.json").string()}, log, 60) == 2);
    const std::string overflow = test::readFile(log);
    WB_CHECK_MSG(overflow.find("1 problem(s)") != std::string::npos &&
                     overflow.find("beyond the range of a double") != std::string::npos,
                 overflow);

    WB_CHECK(test::runProcess({moeTrain, "--version"}, log, 60) == 0);
    WB_CHECK(test::readFile(log).find("moe-train") != std::string::npos);
    WB_CHECK(test::runProcess({moeTrain, "--self-check"}, log, 60) == 0);
    const json self = json::parse(test::readFile(log), nullptr, false);
    WB_CHECK(self.is_object() && self.contains("libtorch") && self.contains("cuda_available") &&
             self.contains("intra_op_threads"));
#if defined(__GLIBC__)
    // The heap keeps freed autograd buffers (host_allocator.h), unless the environment chose.
    WB_CHECK_MSG(self.value("host_allocator", "") == "mmap threshold 32 MiB, trim threshold 256 MiB, top pad 64 MiB",
                 self.dump());
    WB_CHECK(test::runProcess({"/usr/bin/env", "MALLOC_TOP_PAD_=1048576", moeTrain, "--self-check"}, log, 60) == 0);
    const json chosen = json::parse(test::readFile(log), nullptr, false);
    WB_CHECK_MSG(chosen.value("host_allocator", "") == "mmap threshold 32 MiB, trim threshold 256 MiB", chosen.dump());
#endif
    WB_CHECK(test::runProcess({moeTrain, "--bogus"}, log, 60) == 2);

    // Training with a bad config exits 2 and leaves status.json saying bad_config.
    const fs::path runDir = dir / "run";
    WB_CHECK(test::runProcess({moeTrain, "--config", (dir / "bad.json").string(), "--run-dir", runDir.string()}, log, 60) == 2);
    const json status = json::parse(test::readFile(runDir / "status.json"), nullptr, false);
    WB_CHECK(status.is_object() && status.value("status", "") == "bad_config" && status.value("exit_code", 0) == 2);

    // A manifest path that is a folder said "does not exist" (issue 20 item 13): it says what it is.
    {
        json folder = sampleConfig();
        folder["data"]["manifest"] = dir.string();
        std::ofstream(dir / "folder.json") << folder.dump(2);
        const int rc = test::runProcess({moeTrain, "--validate", (dir / "folder.json").string()}, log, 60);
        const std::string out = test::readFile(log);
        WB_CHECK_MSG(rc == 2 && out.find("is a folder, not a manifest file") != std::string::npos &&
                         out.find("manifest.jsonl inside it") != std::string::npos,
                     out);
    }

    // A malformed manifest line passed --validate and failed only at step 0 (item 13).
    {
        std::ofstream(dir / "broken-manifest.jsonl") << "{\"image\": \"a.png\", \"caption\": \"a\"}\nnot json\n";
        json broken = sampleConfig();
        broken["data"]["manifest"] = (dir / "broken-manifest.jsonl").string();
        std::ofstream(dir / "broken-manifest.json") << broken.dump(2);
        const int rc = test::runProcess({moeTrain, "--validate", (dir / "broken-manifest.json").string()}, log, 60);
        const std::string out = test::readFile(log);
        WB_CHECK_MSG(rc == 2 && out.find("data.manifest: line 2 is not {\"image\": path, \"caption\": text}") != std::string::npos,
                     out);
    }

    // A manifest where no image decodes: --validate says so (item 13: it passed and the run
    // failed at step 0), from a bounded sample of the manifest's images; one image of ten that
    // loads is enough to pass (the loader skips and counts the rest).
    {
        std::ofstream many(dir / "mostly-missing.jsonl");
        for (int i = 0; i < 12; ++i)
            many << json{{"image", "missing-" + std::to_string(i) + ".png"}, {"caption", "c"}}.dump() << "\n";
        many.close();
        json none = sampleConfig();
        none["data"]["manifest"] = (dir / "mostly-missing.jsonl").string();
        std::ofstream(dir / "mostly-missing.json") << none.dump(2);
        int rc = test::runProcess({moeTrain, "--validate", (dir / "mostly-missing.json").string()}, log, 60);
        std::string out = test::readFile(log);
        WB_CHECK_MSG(rc == 2 && out.find("none of 8 images sampled evenly from the manifest's 12 lines loads") != std::string::npos &&
                         out.find("missing-0.png") != std::string::npos && out.find("moe-sample-set") != std::string::npos,
                     out);
        std::ofstream(dir / "mostly-missing.jsonl", std::ios::app) << json{{"image", icon}, {"caption", "c"}}.dump() << "\n";
        rc = test::runProcess({moeTrain, "--validate", (dir / "mostly-missing.json").string()}, log, 60);
        WB_CHECK_MSG(rc == 0, "one image of 13 loads (the last, which the sample includes): rc " << rc << " " << test::readFile(log));
    }

    // A manifest where no image decodes (issue 20 item 3: the run waited at step 0 forever): exit 2
    // naming the cause and the fix, status.json bad_config, quickly — now from the check before
    // the first step (the loader's own stop stays for images that vanish during the run).
    {
        json none = sampleConfig();
        none["data"]["manifest"] = (dir / "missing-images.jsonl").string();  // a.png does not exist
        none["train"]["train_iters"] = 2;
        none["train"]["lr_warmup_iters"] = 1;
        std::ofstream(dir / "none.json") << none.dump(2);
        const fs::path noneDir = dir / "none";
        const auto start = std::chrono::steady_clock::now();
        const int rc = test::runProcess({moeTrain, "--config", (dir / "none.json").string(), "--run-dir", noneDir.string()},
                                        log, 120);
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const std::string out = test::readFile(log);
        WB_CHECK_MSG(rc == 2 && took < 60, "no decodable image: rc " << rc << " after " << took << " s\n" << out);
        WB_CHECK_MSG(out.find("none of 1 images sampled evenly from the manifest's 1 lines loads") != std::string::npos &&
                         out.find("a.png") != std::string::npos && out.find("check the image paths") != std::string::npos,
                     out);
        const json status = json::parse(test::readFile(noneDir / "status.json"), nullptr, false);
        WB_CHECK_MSG(status.is_object() && status.value("exit_code", 0) == 2, status.dump());
    }

    // A disk that is full under the run (issue 20 item 8): metrics.jsonl is /dev/full, so its
    // first line fails with ENOSPC. The run must stop with exit 1 naming the file and the error,
    // and status.json must say failed, never "finished".
    if (fs::exists("/dev/full")) {
        json tiny = sampleConfig();
        tiny["data"]["source"] = "mock";
        tiny["data"]["manifest"] = "";
        tiny["train"]["train_iters"] = 3;
        tiny["train"]["lr_warmup_iters"] = 1;
        std::ofstream(dir / "full.json") << tiny.dump(2);
        const fs::path fullDir = dir / "full";
        fs::create_directories(fullDir);
        fs::create_symlink("/dev/full", fullDir / "metrics.jsonl");
        const int rc = test::runProcess({moeTrain, "--config", (dir / "full.json").string(), "--run-dir", fullDir.string()},
                                        log, 120);
        const std::string out = test::readFile(log);
        WB_CHECK_MSG(rc == 1, "disk full: rc " << rc << "\n" << out);
        WB_CHECK_MSG(out.find("cannot write " + (fullDir / "metrics.jsonl").string() + ": No space left on device (errno 28)") !=
                         std::string::npos,
                     out);
        const json full = json::parse(test::readFile(fullDir / "status.json"), nullptr, false);
        WB_CHECK_MSG(full.is_object() && full.value("status", "") == "failed" && full.value("exit_code", 0) == 1 &&
                         full.value("message", "").find("No space left on device") != std::string::npos,
                     full.dump());
    }

    fs::remove_all(dir);
    return test::checkExitCode("test_runtime_cli");
}
