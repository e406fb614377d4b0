// RunConfig: parse, validate (every problem with its path and fix), canonical JSON round trip.
#include "core/run_config.h"
#include "core/edit_distance.h"

#include <QtTest/QtTest>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

using namespace wb::core;

namespace {

// A valid config: the repository's sample config with the defaults for everything else.
nlohmann::json goodConfig()
{
    return nlohmann::json::parse(R"({
      "name": "t",
      "model": {"vision": {"num_layers": 2, "hidden_size": 64, "num_attention_heads": 4},
                "decoder": {"num_layers": 2, "hidden_size": 128, "num_attention_heads": 4,
                            "num_query_groups": 2, "kv_channels": 32, "num_moe_experts": 8,
                            "moe_router_topk": 2, "vocab_size": 512}},
      "train": {"train_iters": 100, "micro_batch_size": 4, "global_batch_size": 8, "seq_length": 256},
      "data": {"source": "real", "manifest": "manifest.jsonl", "max_pixels": 16384}
    })");
}

std::string withPatch(const char* patch)
{
    nlohmann::json j = goodConfig();
    j.merge_patch(nlohmann::json::parse(patch));
    return j.dump();
}

bool hasProblem(const RunConfigParse& p, const QByteArray& path, const QByteArray& text)
{
    for (const ConfigProblem& problem : p.problems)
        if (problem.path == path.toStdString() && problem.toString().find(text.toStdString()) != std::string::npos)
            return true;
    return false;
}

}  // namespace

class TestRunConfig : public QObject {
    Q_OBJECT
private slots:
    void goodConfigParses()
    {
        RunConfigParse p = parseRunConfig(goodConfig().dump());
        QVERIFY2(p.ok(), formatProblems(p.problems).c_str());
        QCOMPARE(p.config.train.globalBatchSize, 8);
        QCOMPARE(p.config.model.decoder.numMoeExperts, 8);
        QCOMPARE(p.config.data.manifest, std::string("manifest.jsonl"));
        QVERIFY(p.config.parallel.overlapGradReduce);  // Megatron's ddp.overlap_grad_reduce, on by default here
        RunConfigParse off = parseRunConfig(withPatch(R"({"parallel": {"overlap_grad_reduce": false}})"));
        QVERIFY2(off.ok() && !off.config.parallel.overlapGradReduce, formatProblems(off.problems).c_str());
    }

    // train.overlap_optimizer: true, false or "auto" (the default), written back as it was given.
    void overlapOptimizerToggle()
    {
        QVERIFY(parseRunConfig(goodConfig().dump()).config.train.overlapOptimizer == Toggle::Auto);
        const std::pair<const char*, Toggle> cases[] = {{R"({"train": {"overlap_optimizer": true}})", Toggle::On},
                                                        {R"({"train": {"overlap_optimizer": false}})", Toggle::Off},
                                                        {R"({"train": {"overlap_optimizer": "auto"}})", Toggle::Auto}};
        for (const auto& [patch, expected] : cases) {
            const RunConfigParse p = parseRunConfig(withPatch(patch));
            QVERIFY2(p.ok(), formatProblems(p.problems).c_str());
            QVERIFY(p.config.train.overlapOptimizer == expected);
            const RunConfigParse again = parseRunConfig(runConfigToJson(p.config));
            QVERIFY2(again.ok(), formatProblems(again.problems).c_str());
            QVERIFY(again.config.train.overlapOptimizer == expected);
        }
        QVERIFY(runConfigToJson(parseRunConfig(goodConfig().dump()).config).find(R"("overlap_optimizer": "auto")") !=
                std::string::npos);
    }

    // The "auto" rule: the first step's reserved memory plus the gradients within 90 % of the card.
    void overlapOptimizerFitsTheCard()
    {
        constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
        // One H200 at MBS 4 (2026-12-07): 88.4 GiB reserved, 9.1 GiB of gradients, 140.4 GiB.
        QVERIFY(overlapOptimizerFits(88.4 * GiB, 9.1 * GiB, 140.4 * GiB));
        // One H100 at MBS 2, where the overlap was slower: ≈ 75 GiB reserved of 79.6.
        QVERIFY(!overlapOptimizerFits(75.0 * GiB, 9.1 * GiB, 79.6 * GiB));
        QVERIFY(overlapOptimizerFits(80.0 * GiB, 10.0 * GiB, 100.0 * GiB));  // exactly 90 %
        QVERIFY(!overlapOptimizerFits(80.0 * GiB, 10.1 * GiB, 100.0 * GiB));
        QVERIFY(!overlapOptimizerFits(0.0, 0.0, 0.0));  // no device memory known (a CPU)
    }

    void badConfigs_data()
    {
        QTest::addColumn<QByteArray>("patch");
        QTest::addColumn<QByteArray>("path");
        QTest::addColumn<QByteArray>("expected");
        // unknown keys, with a suggestion when it is a near miss
        QTest::newRow("unknown key, typo") << QByteArray(R"({"train": {"micro_batch": 4}})")
                                           << QByteArray("train.micro_batch") << QByteArray("did you mean \"micro_batch_size\"");
        QTest::newRow("unknown section") << QByteArray(R"({"trainer": {}})") << QByteArray("trainer")
                                         << QByteArray("unknown key");
        // wrong types
        QTest::newRow("string for int") << QByteArray(R"({"train": {"micro_batch_size": "4"}})")
                                        << QByteArray("train.micro_batch_size") << QByteArray("without quotes");
        QTest::newRow("float for int") << QByteArray(R"({"train": {"seq_length": 256.5}})")
                                       << QByteArray("train.seq_length") << QByteArray("expected an integer");
        QTest::newRow("int for bool") << QByteArray(R"({"model": {"freeze_vision_model": 1}})")
                                      << QByteArray("model.freeze_vision_model") << QByteArray("true or false");
        QTest::newRow("toggle neither bool nor auto")
            << QByteArray(R"({"train": {"overlap_optimizer": "yes"}})") << QByteArray("train.overlap_optimizer")
            << QByteArray("expected true, false or \"auto\", got \"yes\"");
        QTest::newRow("toggle as a number")
            << QByteArray(R"({"train": {"overlap_optimizer": 1}})") << QByteArray("train.overlap_optimizer")
            << QByteArray("true, false or \"auto\"");
        QTest::newRow("section not object") << QByteArray(R"({"data": 3})") << QByteArray("data")
                                            << QByteArray("expected an object");
        QTest::newRow("bad enum") << QByteArray(R"({"train": {"precision": "fp8"}})") << QByteArray("train.precision")
                                  << QByteArray("\"fp32\", \"bf16\"");
        // Megatron spells the moment dtypes torch.bfloat16; ours are the short names
        QTest::newRow("bad exp_avg dtype") << QByteArray(R"({"train": {"exp_avg_dtype": "torch.bfloat16"}})")
                                           << QByteArray("train.exp_avg_dtype") << QByteArray("\"fp32\", \"bf16\"");
        QTest::newRow("bad exp_avg_sq dtype") << QByteArray(R"({"train": {"exp_avg_sq_dtype": "fp16"}})")
                                              << QByteArray("train.exp_avg_sq_dtype") << QByteArray("\"fp32\", \"bf16\"");
        QTest::newRow("moment dtype not a string") << QByteArray(R"({"train": {"exp_avg_dtype": 16}})")
                                                   << QByteArray("train.exp_avg_dtype") << QByteArray("string");
        QTest::newRow("bad list item") << QByteArray(R"({"recompute": {"granularity": "selective", "modules": ["attn"]}})")
                                       << QByteArray("recompute.modules") << QByteArray("core_attn");
        // out of range
        QTest::newRow("zero mbs") << QByteArray(R"({"train": {"micro_batch_size": 0}})")
                                  << QByteArray("train.micro_batch_size") << QByteArray("out of range");
        QTest::newRow("negative lr") << QByteArray(R"({"train": {"lr": -1}})") << QByteArray("train.lr")
                                     << QByteArray("out of range");
        // inconsistent sizes
        QTest::newRow("gbs not multiple") << QByteArray(R"({"train": {"global_batch_size": 10}})")
                                          << QByteArray("train.global_batch_size") << QByteArray("8 or 12");
        QTest::newRow("topk > experts") << QByteArray(R"({"model": {"decoder": {"moe_router_topk": 9}}})")
                                        << QByteArray("model.decoder.moe_router_topk") << QByteArray("larger than num_moe_experts");
        QTest::newRow("heads vs groups") << QByteArray(R"({"model": {"decoder": {"num_query_groups": 3}}})")
                                         << QByteArray("model.decoder.num_query_groups") << QByteArray("not divisible");
        QTest::newRow("ep divides experts") << QByteArray(R"({"parallel": {"expert_model_parallel_size": 3}})")
                                            << QByteArray("parallel.expert_model_parallel_size") << QByteArray("does not divide");
        QTest::newRow("seq too short") << QByteArray(R"({"train": {"seq_length": 32}})") << QByteArray("train.seq_length")
                                       << QByteArray("cannot hold one sample");
        QTest::newRow("real without manifest") << QByteArray(R"({"data": {"manifest": ""}})") << QByteArray("data.manifest")
                                               << QByteArray("needs a manifest");
        QTest::newRow("mrope sum") << QByteArray(R"({"model": {"decoder": {"mrope_section": [4, 4, 4]}}})")
                                   << QByteArray("model.decoder.mrope_section") << QByteArray("summing to the rotary dims / 2 = 16");
        QTest::newRow("deepstack beyond vision") << QByteArray(R"({"model": {"vision": {"deepstack_layers": [5]}}})")
                                                 << QByteArray("model.vision.deepstack_layers") << QByteArray("below vision num_layers");
        // framework rules (megatron-bridge.md §6)
        QTest::newRow("graph mlp scope") << QByteArray(R"({"runtime": {"device": "cuda"}, "cuda_graph": {"impl": "local", "scope": ["mlp"]}})")
                                         << QByteArray("cuda_graph.scope") << QByteArray("every decoder layer here is MoE");
        QTest::newRow("preprocess needs router") << QByteArray(R"({"runtime": {"device": "cuda"}, "cuda_graph": {"impl": "local", "scope": ["moe_preprocess"]}})")
                                                 << QByteArray("cuda_graph.scope") << QByteArray("requires \"moe_router\"");
        QTest::newRow("full recompute + graphs") << QByteArray(R"({"runtime": {"device": "cuda"}, "recompute": {"granularity": "full", "recompute_num_layers": 1}, "cuda_graph": {"impl": "local", "scope": ["moe_router"]}})")
                                                 << QByteArray("cuda_graph.impl") << QByteArray("full_iteration");
        QTest::newRow("flex backend alone") << QByteArray(R"({"parallel": {"moe_flex_dispatcher_backend": "hybridep"}})")
                                            << QByteArray("parallel.moe_flex_dispatcher_backend") << QByteArray("does nothing");
        QTest::newRow("sp without tp") << QByteArray(R"({"parallel": {"sequence_parallel": true}})")
                                       << QByteArray("parallel.sequence_parallel") << QByteArray("tensor_model_parallel_size > 1");
        QTest::newRow("overlap not a boolean") << QByteArray(R"({"parallel": {"overlap_grad_reduce": "yes"}})")
                                               << QByteArray("parallel.overlap_grad_reduce") << QByteArray("true or false");
        QTest::newRow("uneven pp split") << QByteArray(R"({"parallel": {"pipeline_model_parallel_size": 3}})")
                                         << QByteArray("parallel.pipeline_model_parallel_size") << QByteArray("do not split evenly");
    }
    void badConfigs()
    {
        QFETCH(QByteArray, patch);
        QFETCH(QByteArray, path);
        QFETCH(QByteArray, expected);
        RunConfigParse p = parseRunConfig(withPatch(patch.constData()));
        QVERIFY(!p.ok());
        QVERIFY2(hasProblem(p, path, expected), formatProblems(p.problems).c_str());
        for (const ConfigProblem& problem : p.problems)
            QVERIFY2(!problem.fix.empty(), problem.toString().c_str());  // every problem says what to do
    }

    void everyProblemIsListed()
    {
        RunConfigParse p = parseRunConfig(withPatch(R"({"train": {"micro_batch_size": "x", "lr": -1, "typo": 1},
                                                       "model": {"decoder": {"moe_router_topk": 99}}})"));
        QCOMPARE(int(p.problems.size()), 4);
    }

    void syntaxErrorNamesPosition()
    {
        RunConfigParse p = parseRunConfig("{\"train\": {\"seq_length\": 8,}}");
        QCOMPARE(int(p.problems.size()), 1);
        QVERIFY2(p.problems[0].message.find("line 1") != std::string::npos, p.problems[0].message.c_str());
    }

    // Issue 20 item 1: a number beyond double range is the library's out_of_range 406, not a
    // parse_error; it must be one clear problem (never an uncaught exception) and leave the
    // config marked unreadable so that no check runs on its defaults.
    void numberBeyondDoubleRangeIsAProblem()
    {
        for (const char* text : {"{\"train\": {\"lr\": 1e999}}", "{\"train\": {\"lr\": -1e400}}", "[1e999]"}) {
            RunConfigParse p = parseRunConfig(text);
            QCOMPARE(int(p.problems.size()), 1);
            QVERIFY2(p.problems[0].message.find("beyond the range of a double") != std::string::npos &&
                         p.problems[0].fix.find("finite") != std::string::npos,
                     p.problems[0].message.c_str());
            QVERIFY(!p.readable);
        }
        QVERIFY(parseRunConfig(withPatch(R"({"train": {"lr": 1e-300}})")).readable);
    }

    // A name or path of megabytes would make the run's meta line megabytes (issue 20 item 4).
    void longTextIsAProblem()
    {
        const std::string longName(5 * 1000 * 1000, 'n');
        RunConfigParse p = parseRunConfig(withPatch(("{\"name\": \"" + longName + "\"}").c_str()));
        QCOMPARE(int(p.problems.size()), 1);
        QCOMPARE(p.problems[0].path, std::string("name"));
        QVERIFY2(p.problems[0].message.find("5000000 bytes long, more than the 4096") != std::string::npos,
                 p.problems[0].message.c_str());
        QVERIFY(parseRunConfig(withPatch(("{\"name\": \"" + std::string(4096, 'n') + "\"}").c_str())).problems.empty());
    }


    // "Did you mean" compares unknown keys with the known ones only up to the distance it
    // suggests at (tests/fuzz found a file of long unknown keys quadratic in each key's length).
    void suggestionsAreBoundedEditDistances()
    {
        QCOMPARE(boundedEditDistance("micro_batch_size", "micro_batch_size", 4), size_t(0));
        QCOMPARE(boundedEditDistance("micro_batch", "micro_batch_size", 6), size_t(5));
        QCOMPARE(boundedEditDistance("micro_bacth_size", "micro_batch_size", 4), size_t(2));
        QCOMPARE(boundedEditDistance("kitten", "sitting", 10), size_t(3));
        QCOMPARE(boundedEditDistance("", "abc", 10), size_t(3));
        QCOMPARE(boundedEditDistance("abcdefgh", "stuvwxyz", 4), size_t(4));   // capped
        QCOMPARE(boundedEditDistance(std::string(100000, 'k'), "seq_length", 4), size_t(4));
        // A long unknown key is still reported (with the list of valid keys instead of a guess).
        const std::string key(200000, 'k');
        RunConfigParse p = parseRunConfig(withPatch(("{\"train\": {\"" + key + "\": 1}}").c_str()));
        QCOMPARE(int(p.problems.size()), 1);
        QCOMPARE(p.problems[0].message, std::string("unknown key"));
    }
    void canonicalRoundTrip()
    {
        RunConfigParse p = parseRunConfig(withPatch(R"({"recompute": {"granularity": "selective", "modules": ["core_attn", "moe_act"]},
                                                       "model": {"vision": {"deepstack_layers": [0, 1]}}})"));
        QVERIFY2(p.ok(), formatProblems(p.problems).c_str());
        const std::string canonical = runConfigToJson(p.config);
        RunConfigParse again = parseRunConfig(canonical);
        QVERIFY2(again.ok(), formatProblems(again.problems).c_str());
        QCOMPARE(runConfigToJson(again.config), canonical);
        QCOMPARE(runConfigHash(again.config), runConfigHash(p.config));
        QCOMPARE(again.config.recompute.modules.size(), size_t(2));
        p.config.train.seed += 1;
        QVERIFY(runConfigHash(p.config) != runConfigHash(again.config));
    }

    // bf16 moments are independent of the compute precision (as in Megatron): fp32 compute with
    // bf16 moments is a valid config, and the fields survive the canonical form.
    void bf16MomentsWithFp32Compute()
    {
        RunConfigParse p = parseRunConfig(withPatch(R"({"train": {"precision": "fp32", "exp_avg_dtype": "bf16",
                                                                  "exp_avg_sq_dtype": "bf16"}})"));
        QVERIFY2(p.ok(), formatProblems(p.problems).c_str());
        QCOMPARE(p.config.train.expAvgDtype, std::string("bf16"));
        QCOMPARE(p.config.train.expAvgSqDtype, std::string("bf16"));
        RunConfigParse again = parseRunConfig(runConfigToJson(p.config));
        QVERIFY2(again.ok(), formatProblems(again.problems).c_str());
        QCOMPARE(again.config.train.expAvgSqDtype, std::string("bf16"));
        RunConfigParse plain = parseRunConfig(withPatch("{}"));
        QCOMPARE(plain.config.train.expAvgDtype, std::string("fp32"));
        QVERIFY(runConfigHash(plain.config) != runConfigHash(p.config));
    }

    void layoutChecks()
    {
        RunConfigParse p = parseRunConfig(withPatch(R"({"parallel": {"tensor_model_parallel_size": 2}})"));
        QVERIFY2(p.ok(), formatProblems(p.problems).c_str());
        QCOMPARE(dataParallelSize(p.config, 8), 4);
        QVERIFY(validateLayout(p.config, 3).size() == 1);      // not a multiple of TP
        auto problems = validateLayout(p.config, 8);           // GBS 8 vs MBS 4 × DP 4 = 16
        QCOMPARE(int(problems.size()), 1);
        QCOMPARE(problems[0].path, std::string("train.global_batch_size"));
        QVERIFY(validateLayout(p.config, 4).empty());
    }

    void loadResolvesManifestRelativeToFile()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("run.json")).toStdString();
        std::ofstream(path) << goodConfig().dump();
        Result<RunConfig> loaded = loadRunConfig(path);
        QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().toString().c_str());
        QCOMPARE(loaded->data.manifest, (std::filesystem::path(dir.path().toStdString()) / "manifest.jsonl").string());

        Result<RunConfig> missing = loadRunConfig(dir.filePath(QStringLiteral("nope.json")).toStdString());
        QVERIFY(!missing.ok());
        QCOMPARE(missing.error().code, ErrorCode::NotFound);
    }

    void shippedConfigsAreValid_data()
    {
        QTest::addColumn<QString>("file");
        const QDir dir(QStringLiteral(WB_SOURCE_DIR "/resources/configs"));
        const QStringList files = dir.entryList({QStringLiteral("*.json")});
        for (const QString& f : files)
            QTest::newRow(f.toUtf8().constData()) << dir.filePath(f);
        if (files.isEmpty())
            QTest::newRow("none") << QString();
    }
    void shippedConfigsAreValid()
    {
        QFETCH(QString, file);
        if (file.isEmpty())
            QSKIP("no configs in resources/configs yet");
        Result<RunConfig> loaded = loadRunConfig(file.toStdString());
        QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().toString().c_str());
    }

    // A text-only model (vision num_layers 0: Qwen3-30B-A3B) takes no images: real data or mock
    // images are refused with the field and the fix; text-only mock data is fine.
    void textOnlyModelTakesNoImages()
    {
        RunConfig c;
        c.model.vision.numLayers = 0;
        c.data.source = "real";
        c.data.manifest = "manifest.jsonl";
        auto named = [](const std::vector<ConfigProblem>& problems) {
            for (const ConfigProblem& p : problems)
                if (p.path == "model.vision.num_layers")
                    return p.message + " — fix: " + p.fix;
            return std::string();
        };
        const std::string real = named(validateRunConfig(c));
        QVERIFY2(real.find("data.source \"real\" gives it images") != std::string::npos, real.c_str());
        QVERIFY2(real.find("data.mock_image_size 0") != std::string::npos, real.c_str());
        c.data.source = "mock";
        c.data.mockImageSize = 64;
        QVERIFY(named(validateRunConfig(c)).find("mock_image_size 64 gives it images") != std::string::npos);
        c.data.mockImageSize = 0;
        QVERIFY(named(validateRunConfig(c)).empty());
    }
};

QTEST_GUILESS_MAIN(TestRunConfig)
#include "test_run_config.moc"
