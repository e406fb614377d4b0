// Catalog: the built-in files load, numbers match megatron-bridge.md §9, unknown names list the
// known ones, user files override and bad user files report every problem.
#include "core/planner/catalog.h"

#include <QtTest/QtTest>

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace wb::core::planner;

namespace {
Catalog builtin()
{
    auto c = loadCatalog(builtinCatalogDir(WB_SOURCE_DIR));
    if (!c)
        qFatal("%s", c.error().toString().c_str());
    return *c;
}
}  // namespace

class TestPlannerCatalog : public QObject {
    Q_OBJECT
private slots:
    void builtinModels_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("layers");
        QTest::addColumn<int>("hidden");
        QTest::addColumn<int>("heads");
        QTest::addColumn<int>("experts");
        QTest::addColumn<int>("ffn");
        QTest::addColumn<int>("visionLayers");
        QTest::newRow("30b") << "qwen3-vl-30b-a3b" << 48 << 2048 << 32 << 128 << 768 << 27;
        QTest::newRow("235b") << "qwen3-vl-235b-a22b" << 94 << 4096 << 64 << 128 << 1536 << 27;
        QTest::newRow("tiny") << "sample-tiny" << 2 << 128 << 4 << 8 << 128 << 2;
        QTest::newRow("slice") << "qwen3-vl-30b-a3b-slice" << 6 << 2048 << 32 << 128 << 768 << 4;
        QTest::newRow("3.5") << "qwen35-vl-35b-a3b" << 40 << 2048 << 16 << 256 << 512 << 27;
    }
    void builtinModels()
    {
        QFETCH(QString, name);
        auto m = builtin().model(name.toStdString());
        QVERIFY2(m.ok(), m.ok() ? "" : m.error().message.c_str());
        const auto& d = m->model.decoder;
        QFETCH(int, layers);
        QFETCH(int, hidden);
        QFETCH(int, heads);
        QFETCH(int, experts);
        QFETCH(int, ffn);
        QFETCH(int, visionLayers);
        QCOMPARE(d.numLayers, layers);
        QCOMPARE(d.hiddenSize, hidden);
        QCOMPARE(d.numAttentionHeads, heads);
        QCOMPARE(d.numMoeExperts, experts);
        QCOMPARE(d.moeFfnHiddenSize, ffn);
        QCOMPARE(m->model.vision.numLayers, visionLayers);
        QVERIFY(!m->notes.empty());
    }

    void qwenDetails()
    {
        auto m = builtin().model("Qwen3-VL-30B-A3B");  // case-insensitive
        QVERIFY(m.ok());
        QCOMPARE(m->model.vision.hiddenSize, 1152);
        QCOMPARE(m->model.vision.ffnHiddenSize, 4304);
        QCOMPARE(m->model.vision.deepstackLayers, (std::vector<int>{8, 16, 24}));
        QCOMPARE(m->model.decoder.numQueryGroups, 4);
        QCOMPARE(m->model.decoder.vocabSize, 151936);
        QCOMPARE(m->model.decoder.mropeSection, (std::vector<int>{24, 20, 20}));
    }

    void parameterCounts()
    {
        // sample-tiny by hand: decoder dense 2×50496 + final norm 128 = 101120; experts 2×8×3×128×128
        // = 786432; embedding and output 512×128 each; vision 49216 (patch) + 147456 (positions) +
        // 2×49984 (blocks) = 296640; merger 99200.
        auto tiny = builtin().model("sample-tiny");
        QCOMPARE(countParameters(tiny->model).total(), 1414464.0);
        // Qwen3-VL-30B-A3B ≈ 31.1 B total, ≈ 3 B active; 235B-A22B ≈ 236 B total, ≈ 22 B active.
        const auto c30 = countParameters(builtin().model("qwen3-vl-30b-a3b")->model);
        QVERIFY2(c30.total() > 30.5e9 && c30.total() < 31.6e9, qPrintable(QString::number(c30.total())));
        const auto m235 = builtin().model("qwen3-vl-235b-a22b")->model;
        const auto c235 = countParameters(m235);
        QVERIFY2(c235.total() > 234e9 && c235.total() < 238e9, qPrintable(QString::number(c235.total())));
        QVERIFY2(c235.active(m235.decoder) > 21e9 && c235.active(m235.decoder) < 24e9, qPrintable(QString::number(c235.active(m235.decoder))));
        // Qwen3.5-35B-A3B: 35.11 B without the MTP layer (the model card's 35 B), 35.95 B with it
        // (its 256 experts 0.81 B + attention/norms/projection 0.03 B).
        const auto m35 = builtin().model("qwen35-vl-35b-a3b")->model;
        const auto c35 = countParameters(m35);
        QVERIFY2(c35.total() > 35.9e9 && c35.total() < 36.0e9, qPrintable(QString::number(c35.total())));
        QVERIFY(m35.decoder.hybridAttention() && m35.decoder.attentionOutputGate && m35.decoder.mtpNumLayers == 1);
        QCOMPARE(m35.decoder.linearAttentionLayers(m35.decoder.numLayers), 30);
        QCOMPARE(m35.decoder.moeSharedExpertFfnHiddenSize, 512);
        QCOMPARE(m35.decoder.vocabSize, 248320);
        QVERIFY(m35.vision.deepstackLayers.empty());
    }

    void hardware_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<double>("peak");
        QTest::addColumn<int>("domain");
        QTest::newRow("gb200") << "gb200" << 2500.0 << 72;
        QTest::newRow("gb300") << "gb300" << 2500.0 << 72;
        QTest::newRow("b200") << "b200" << 2250.0 << 8;
        QTest::newRow("h100") << "h100" << 989.0 << 8;
        QTest::newRow("h200") << "h200" << 989.0 << 8;
    }
    void hardware()
    {
        QFETCH(QString, name);
        QFETCH(double, peak);
        QFETCH(int, domain);
        auto h = builtin().hardware(name.toStdString());
        QVERIFY(h.ok());
        QCOMPARE(h->peakDenseBf16Tflops, peak);
        QCOMPARE(h->nvlinkDomainSize, domain);
        QVERIFY(h->hbmGib > 70 && h->networkGbPerS > 0 && h->nvlinkGbPerS > 0);
    }

    void unknownNamesListKnownOnes()
    {
        auto m = builtin().model("qwen4");
        QVERIFY(!m.ok());
        QVERIFY(m.error().message.find("qwen3-vl-235b-a22b") != std::string::npos);
        auto h = builtin().hardware("tpu");
        QVERIFY(!h.ok());
        QVERIFY(h.error().message.find("gb200") != std::string::npos);
        QVERIFY(h.error().message.find("h100") != std::string::npos);
    }

    void userDirectoryOverridesAndAdds()
    {
        QTemporaryDir dir;
        std::ofstream(dir.filePath("mine.json").toStdString())
            << R"({"hardware": [{"name": "H100", "sm": "9.0", "peak_dense_bf16_tflops": 900, "hbm_gib": 79.6, "hbm_tb_s": 3.35,
                   "nvlink_domain_size": 8, "gpus_per_node": 8, "nvlink_gb_s": 450, "network_gb_s": 25}],
                 "models": [{"name": "my-tiny", "model": {"decoder": {"num_layers": 4}}}]})";
        auto c = loadCatalog(builtinCatalogDir(WB_SOURCE_DIR), dir.path().toStdString());
        QVERIFY2(c.ok(), c.ok() ? "" : c.error().toString().c_str());
        QCOMPARE(c->hardware("h100")->peakDenseBf16Tflops, 900.0);
        QCOMPARE(c->hardware("h100")->networkGbPerS, 25.0);
        QCOMPARE(c->model("my-tiny")->model.decoder.numLayers, 4);
        QCOMPARE(int(c->hardwareNames().size()), 5);
    }

    void badEntriesReportEveryProblem()
    {
        Catalog c;
        auto r = c.addJson(R"({"models": [{"name": "x", "model": {"decoder": {"num_layerz": 4, "hidden_size": "big"}}}],
                              "hardware": [{"name": "y", "sm": "9.0"}]})", "user.json");
        QVERIFY(!r.ok());
        const std::string& msg = r.error().message;
        QVERIFY2(msg.find("num_layerz") != std::string::npos, msg.c_str());
        QVERIFY2(msg.find("did you mean \"num_layers\"") != std::string::npos, msg.c_str());
        QVERIFY2(msg.find("hidden_size") != std::string::npos, msg.c_str());
        QVERIFY2(msg.find("peak_dense_bf16_tflops") != std::string::npos, msg.c_str());
        QVERIFY(c.models().empty());  // nothing half-loaded
        QVERIFY(!c.addJson("[1,2]", "x.json").ok());
        QVERIFY(!c.addFile("/nonexistent/catalog.json").ok());
    }

    // moe-train's measured rates: the built-in H200 profile, a user file replacing it, and an
    // entry without its source or with a rate out of range refused whole.
    void runtimeProfiles()
    {
        Catalog c = *loadCatalog(builtinCatalogDir(WB_SOURCE_DIR));
        const RuntimeRates h200 = c.runtimeRates("moe-train", "H200");
        QVERIFY(h200.castGbPerS > 0 && h200.optimizerGbPerS > 0 && h200.reduceGbPerS > 0 && h200.stepGapMs > 0);
        QVERIFY2(h200.source.find("Kineto") != std::string::npos, h200.source.c_str());
        QVERIFY(c.runtimeRates("moe-train", "b200").source.empty());  // not measured there: assumed
        QVERIFY(c.addJson(R"({"runtime_profiles": [{"runtime": "moe-train", "hardware": "h200", "cast_gb_s": 3000,
                              "optimizer_gb_s": 4000, "reduce_gb_s": 3600, "step_gap_ms": 2, "source": "mine"}]})",
                          "user.json")
                    .ok());
        QCOMPARE(c.runtimeRates("moe-train", "h200").castGbPerS, 3000.0);
        QCOMPARE(c.runtimeProfiles().size(), size_t(1));
        auto bad = c.addJson(R"({"runtime_profiles": [{"runtime": "moe-train", "hardware": "b200", "cast_gb_s": 0,
                                 "optimizer_gb_s": 4000, "reduce_gb_s": 3600, "step_gap_ms": 2, "source": "x"},
                                {"runtime": "moe-train", "hardware": "gb200"}]})",
                             "bad.json");
        QVERIFY(!bad.ok());
        QVERIFY2(bad.error().message.find("\"cast_gb_s\" must be a number") != std::string::npos, bad.error().message.c_str());
        QVERIFY2(bad.error().message.find("needs \"runtime\", \"hardware\" and \"source\"") != std::string::npos,
                 bad.error().message.c_str());
        QVERIFY(c.runtimeRates("moe-train", "b200").source.empty());  // nothing half-loaded
        // The collectives are optional, but a measured rate names where it was measured.
        QCOMPARE(c.runtimeRates("moe-train", "h200").allreduceGbPerS, 0.0);  // the user's entry has none
        auto noSource = c.addJson(R"({"runtime_profiles": [{"runtime": "moe-train", "hardware": "b200", "cast_gb_s": 3000,
                                      "optimizer_gb_s": 4000, "reduce_gb_s": 3600, "step_gap_ms": 2, "source": "x",
                                      "allreduce_gb_s": 300}]})",
                                  "collectives.json");
        QVERIFY(!noSource.ok());
        QVERIFY2(noSource.error().message.find("\"collectives_source\"") != std::string::npos, noSource.error().message.c_str());
        Catalog builtin = *loadCatalog(builtinCatalogDir(WB_SOURCE_DIR));
        const RuntimeRates measured = builtin.runtimeRates("moe-train", "h200");
        QVERIFY(measured.allreduceGbPerS > 0 && measured.shardGbPerS > 0 && measured.alltoallGbPerS > 0 && measured.epSyncMs > 0);
        QVERIFY2(measured.collectivesSource.find("dp-sync") != std::string::npos, measured.collectivesSource.c_str());
    }

    // The measured flash-attention kernels: found by FA2's head-dimension bucket and the mask;
    // a kernel without its blocks or with a negative rate, or kernels without a source, refused.
    void attentionKernels()
    {
        Catalog c = *loadCatalog(builtinCatalogDir(WB_SOURCE_DIR));
        const RuntimeRates h200 = c.runtimeRates("moe-train", "h200");
        QVERIFY2(h200.attentionSource.find("attention_kernels.py") != std::string::npos, h200.attentionSource.c_str());
        const AttentionKernelRate* decoder = h200.attentionKernel(128, true);
        QVERIFY(decoder);
        QCOMPARE(decoder->forward.blockM, 128);
        QCOMPARE(decoder->backward.blockN, 128);
        QVERIFY(decoder->backward.nsPerTile > decoder->forward.nsPerTile);  // the backward does 2.5× the MMAs
        QVERIFY(!h200.attentionKernel(128, false));                          // the mask matters
        QVERIFY(h200.attentionKernel(80, false) && h200.attentionKernel(80, false)->headDim == 72);  // FA2's d 96 kernel
        QVERIFY(!h200.attentionKernel(64, false) && !h200.attentionKernel(160, true));
        const char* profile = R"({"runtime_profiles": [{"runtime": "moe-train", "hardware": "b200", "cast_gb_s": 3000,
            "optimizer_gb_s": 4000, "reduce_gb_s": 3600, "step_gap_ms": 2, "source": "x", %s}]})";
        auto load = [&](const char* attention) {
            char text[1024];
            std::snprintf(text, sizeof text, profile, attention);
            Catalog fresh = *loadCatalog(builtinCatalogDir(WB_SOURCE_DIR));
            return fresh.addJson(text, "attention.json");
        };
        const char* good = R"("head_dim": 128, "causal": true, "fwd": {"block": [128, 64], "ns_per_tile": 10,
            "ns_per_cta": 0, "ns_per_token_head": 0.5}, "bwd": {"block": [64, 128], "ns_per_tile": 34, "ns_per_cta": 57,
            "ns_per_token_head": 0.8})";
        char text[512];
        std::snprintf(text, sizeof text, R"("attention": [{%s}], "attention_source": "mine")", good);
        QVERIFY(load(text).ok());
        std::snprintf(text, sizeof text, R"("attention": [{%s}])", good);
        auto noSource = load(text);
        QVERIFY(!noSource.ok());
        QVERIFY2(noSource.error().message.find("\"attention_source\"") != std::string::npos, noSource.error().message.c_str());
        auto noBlock = load(R"("attention": [{"head_dim": 128, "causal": true, "fwd": {"ns_per_tile": 10, "ns_per_cta": 0,
            "ns_per_token_head": 0}, "bwd": {"block": [64, 128], "ns_per_tile": -1, "ns_per_cta": 0, "ns_per_token_head": 0}}],
            "attention_source": "x")");
        QVERIFY(!noBlock.ok());
        QVERIFY2(noBlock.error().message.find("attention[0]: \"fwd\" needs \"block\"") != std::string::npos,
                 noBlock.error().message.c_str());
        QVERIFY2(noBlock.error().message.find("\"bwd\" needs") != std::string::npos, noBlock.error().message.c_str());
        auto noDim = load(R"("attention": [{"causal": true}], "attention_source": "x")");
        QVERIFY(!noDim.ok());
        QVERIFY2(noDim.error().message.find("needs \"head_dim\"") != std::string::npos, noDim.error().message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestPlannerCatalog)
#include "test_catalog.moc"
