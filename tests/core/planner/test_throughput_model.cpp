// Throughput model: FLOPs agree with core/model_flops.h, the terms add up, and the model moves
// the right way when a knob changes (bubble, EP off the NVLink domain, mock data, frozen vision).
#include "core/planner/throughput_model.h"

#include "core/planner/memory_model.h"

#include "core/model_flops.h"

#include <QtTest/QtTest>

using namespace wb::core;
using namespace wb::core::planner;

namespace {

Catalog& catalog()
{
    static Catalog c = *loadCatalog(builtinCatalogDir(WB_SOURCE_DIR));
    return c;
}

// Options for predicting moe-train on `hardware` with its catalog profile (empty rates where the
// catalog has none: the assumed fractions).
ThroughputOptions moeTrainOn(const char* hardware)
{
    ThroughputOptions o;
    o.runtime = TrainingRuntime::MoeTrain;
    o.rates = catalog().runtimeRates("moe-train", hardware);
    return o;
}

// The milliseconds of the estimate's term `name` (0 when the estimate has no such term).
double termMs(const ThroughputEstimate& e, const std::string& name)
{
    for (const TimeTerm& t : e.terms)
        if (t.name == name)
            return t.ms;
    return 0.0;
}

// The assumption text of the estimate's term `name` (empty when it has no such term).
std::string explainOf(const ThroughputEstimate& e, const std::string& name)
{
    for (const TimeTerm& t : e.terms)
        if (t.name == name)
            return t.assumption;
    return {};
}

Layout recipe30b()
{
    Layout l;
    l.worldSize = 8, l.ep = 8, l.mbs = 4, l.gbs = 512;
    l.dispatcherType = "flex", l.dispatcherBackend = "hybridep";
    return l;
}

}  // namespace

class TestPlannerThroughput : public QObject {
    Q_OBJECT
private slots:
    // Each term says how sure it is: moe-train on H200 has measured kernels and rates (attention,
    // casts, optimizer, host gap), the vision encoder partly; Megatron's terms are assumed; a
    // calibrated estimate marks its scaled terms; the shares add up to the step.
    void termsSayHowSureTheyAre()
    {
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b-slice")->model;
        const HardwareSpec h200 = *catalog().hardware("h200");
        Layout l;
        l.worldSize = 1, l.mbs = 4, l.gbs = 4;
        l.overlapOptimizer = Toggle::Off;  // the serial step: the whole update is a term of its own
        auto basisOf = [](const ThroughputEstimate& e, const std::string& name) {
            for (const TimeTerm& t : e.terms)
                if (t.name == name)
                    return std::string(termBasisName(t.basis));
            return std::string("absent");
        };
        const ThroughputEstimate ours = estimateThroughput(m, l, {}, h200, moeTrainOn("h200"));
        QCOMPARE(basisOf(ours, "core attention"), std::string("measured"));
        QCOMPARE(basisOf(ours, "optimizer step"), std::string("measured"));
        QCOMPARE(basisOf(ours, "host gap per step"), std::string("measured"));
        QCOMPARE(basisOf(ours, "vision encoder"), std::string("partly measured"));
        QCOMPARE(basisOf(ours, "expert GEMMs"), std::string("assumed"));
        const ThroughputEstimate bridge = estimateThroughput(m, l, {}, h200, {});
        for (const TimeTerm& t : bridge.terms)
            QCOMPARE(std::string(termBasisName(t.basis)), std::string("assumed"));
        QCOMPARE(describeTermBases(bridge.terms), std::string("assumed 100 % of the step"));
        ThroughputOptions calibrated = moeTrainOn("h200");
        calibrated.eff.optimizerTimeFactor = 1.1;
        const ThroughputEstimate scaled = estimateThroughput(m, l, {}, h200, calibrated);
        QCOMPARE(basisOf(scaled, "optimizer step"), std::string("calibrated"));
        QCOMPARE(basisOf(scaled, "core attention"), std::string("measured"));
        const std::string shares = describeTermBases(ours.terms);
        QVERIFY2(shares.find("measured") == 0 && shares.find("assumed") != std::string::npos, shares.c_str());
    }

    // The text-only Qwen3-30B-A3B (no vision tower) sees no images whatever the workload says:
    // its estimates equal those of a workload without images, and against Qwen3-VL-30B-A3B on
    // text-only data it holds no vision parameters (the same decoder, the same step).
    void textOnlyModelTakesNoImages()
    {
        const ModelConfig text = catalog().model("qwen3-30b-a3b")->model;
        const ModelConfig vl = catalog().model("qwen3-vl-30b-a3b")->model;
        const HardwareSpec h100 = *catalog().hardware("h100");
        const Layout l = recipe30b();
        Workload images;  // the default: one 448² image per sample
        Workload none = images;
        none.imagesPerSample = 0;
        const ThroughputEstimate a = estimateThroughput(text, l, images, h100, {});
        const ThroughputEstimate b = estimateThroughput(text, l, none, h100, {});
        QCOMPARE(a.stepMs, b.stepMs);
        QCOMPARE(a.tokensPerSecPerGpu, b.tokensPerSecPerGpu);
        QCOMPARE(termMs(a, "vision encoder"), 0.0);
        QCOMPARE(estimateMemory(text, l, images).total(), estimateMemory(text, l, none).total());
        Workload mock = images;
        mock.mockTextOnly = true;
        const ThroughputEstimate v = estimateThroughput(vl, l, mock, h100, {});
        QVERIFY2(std::abs(v.stepMs - b.stepMs) < 1e-6 * b.stepMs, (std::to_string(v.stepMs) + " vs " + std::to_string(b.stepMs)).c_str());
        QVERIFY(estimateMemory(vl, l, mock).total() > estimateMemory(text, l, none).total());
    }

    // Issue 15 item 5: mock data is what each runtime's mock trains, and the comparison says where
    // the gap goes.
    void mockIsWhatEachRuntimeTrains()
    {
        Workload real;
        real.imagesPerSample = 4;
        real.imageWidth = real.imageHeight = 768;
        const Workload bridge = mockWorkload(real, TrainingRuntime::MegatronBridge);
        QVERIFY(bridge.mock && !bridge.mockTextOnly && bridge.forceBalancedRouting);
        QCOMPARE(bridge.imagesPerSample, 1);
        QCOMPARE(bridge.imageWidth, 256);
        QCOMPARE(bridge.seqLength, real.seqLength);
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        QCOMPARE(bridge.imageTokensPerSample(m.vision), int64_t(64));  // Bridge's 64 visual tokens
        const Workload moeTrain = mockWorkload(real, TrainingRuntime::MoeTrain);
        QVERIFY(moeTrain.mock && moeTrain.mockTextOnly && !moeTrain.forceBalancedRouting);

        // EP 8 over 128 experts: the real data's expert rank waits for its most-loaded rank.
        const HardwareSpec hw = *catalog().hardware("gb200");
        const Layout l = recipe30b();
        QVERIFY(l.ep > 1);
        const MockRealComparison c = compareMockAndReal(m, l, real, hw);
        QVERIFY2(c.mockSpeedup() > 1.05, describeMockRealComparison(c).c_str());
        QVERIFY(c.realRoutingImbalance > 1.05 && c.mockRoutingImbalance == 1.0);
        double realSum = 0, mockSum = 0;
        for (const MockRealTerm& t : c.terms)
            realSum += t.realMs, mockSum += t.mockMs;
        QVERIFY(std::abs(realSum - c.real.stepMs) < 1e-6 * c.real.stepMs);  // every term of both steps
        QVERIFY(std::abs(mockSum - c.mock.stepMs) < 1e-6 * c.mock.stepMs);
        const auto term = [&](const char* name) {
            for (const MockRealTerm& t : c.terms)
                if (t.name == name)
                    return t;
            return MockRealTerm{};
        };
        QVERIFY(term("vision encoder").realMs > term("vision encoder").mockMs);
        QVERIFY(term("expert GEMMs").realMs > term("expert GEMMs").mockMs);
        QVERIFY(describeMockRealComparison(c).find("% of the gap") != std::string::npos);
        // Forced balance on real data too: only the images differ, so the gap shrinks.
        Workload balanced = real;
        balanced.forceBalancedRouting = true;
        QVERIFY(compareMockAndReal(m, l, balanced, hw).mockSpeedup() < c.mockSpeedup());
        // The estimate of the mock is the comparison's mock.
        QCOMPARE(estimateMockThroughput(m, l, real, hw).stepMs, c.mock.stepMs);
    }

    void flopsComeFromModelFlops()
    {
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        const HardwareSpec hw = *catalog().hardware("gb200");
        Workload w;  // one 448×448 image = 784 patches = 196 tokens, seq 4096
        const ThroughputEstimate e = estimateThroughput(m, recipe30b(), w, hw);
        const double perSample = decoderFlops(m.decoder, {4096}) + visionFlops(m.vision, 2048, 784);
        QCOMPARE(e.modelFlopsPerStep, 512 * perSample);
        QCOMPARE(e.visionFlopsPerStep, 512 * visionFlops(m.vision, 2048, 784));
        double sum = 0;
        for (const TimeTerm& t : e.terms) {
            sum += t.ms;
            QVERIFY2(!t.assumption.empty(), t.name.c_str());
        }
        QVERIFY(std::abs(sum - e.stepMs) < 1e-9 * e.stepMs);
        QVERIFY(std::abs(e.tflopsPerGpu - e.modelFlopsPerStep / (e.stepMs / 1e3) / 8 / 1e12) < 1e-6);
        QCOMPARE(e.mfu, e.tflopsPerGpu / 2500.0);
        QCOMPARE(e.effectiveTokensPerStep, 512.0 * 4096);
        QVERIFY(e.mfu > 0.05 && e.mfu < 0.7);
    }

    void knobsMoveTheRightWay_data()
    {
        QTest::addColumn<QString>("change");
        QTest::addColumn<bool>("faster");
        QTest::newRow("mock data is faster") << "mock" << true;
        QTest::newRow("frozen vision is faster") << "freeze" << true;
        QTest::newRow("full recompute is slower") << "full" << false;
        QTest::newRow("PP bubble is slower") << "pp" << false;
        QTest::newRow("EP beyond the NVLink domain is slower") << "h100-ep16" << false;
        QTest::newRow("VPP shrinks the bubble") << "vpp" << true;
        QTest::newRow("ETP makes skinny expert GEMMs") << "etp" << false;
    }
    void knobsMoveTheRightWay()
    {
        QFETCH(QString, change);
        QFETCH(bool, faster);
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        HardwareSpec hw = *catalog().hardware("gb200");
        Layout base = recipe30b();
        Workload w;
        Layout l = base;
        double before = 0, after = 0;
        if (change == "mock") {
            before = estimateThroughput(m, l, w, hw).tokensPerSecPerGpu;
            after = estimateMockThroughput(m, l, w, hw).tokensPerSecPerGpu;
        } else {
            if (change == "h100-ep16") {
                hw = *catalog().hardware("h100");
                base.worldSize = 16, base.ep = 8, base.dispatcherType = "alltoall", base.dispatcherBackend = "";
                l = base;
                l.ep = 16;
            } else if (change == "vpp") {
                base.worldSize = 16, base.pp = 2, base.mbs = 1, base.gbs = 64;
                l = base;
                l.vpp = 4;
            } else if (change == "freeze") {
                l.freezeVision = true;
            } else if (change == "full") {
                l.recomputeGranularity = "full", l.recomputeNumLayers = 1;
            } else if (change == "pp") {
                base.worldSize = 16, base.mbs = 1, base.gbs = 64;
                l = base;
                l.pp = 2;
            } else if (change == "etp") {
                base.worldSize = 64;
                l = base;
                l.etp = 8;
            }
            before = estimateThroughput(m, base, w, hw).tokensPerSecPerGpu;
            after = estimateThroughput(m, l, w, hw).tokensPerSecPerGpu;
        }
        QVERIFY2(faster ? after > before : after < before, qPrintable(QString("%1 → %2").arg(before).arg(after)));
    }

    void droplessImbalanceGrowsWithEp()
    {
        Workload w;
        QCOMPARE(w.expertRankImbalance(1, 128), 1.0);
        const double ep8 = w.expertRankImbalance(8, 128), ep64 = w.expertRankImbalance(64, 128);
        QVERIFY2(ep8 > 1.1 && ep8 < 1.2, std::to_string(ep8).c_str());
        QVERIFY2(ep64 > 1.5 && ep64 < 1.7, std::to_string(ep64).c_str());
        w.forceBalancedRouting = true;
        QCOMPARE(w.expertRankImbalance(64, 128), 1.0);
        w.routingImbalance = 1.25;  // an explicit factor still applies
        QCOMPARE(w.expertRankImbalance(64, 128), 1.25);

        // Forced balance (the published perf rows) is faster than dropless on the same layout.
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        const HardwareSpec hw = *catalog().hardware("gb200");
        Workload dropless, forced;
        forced.forceBalancedRouting = true;
        QVERIFY(estimateThroughput(m, recipe30b(), forced, hw).stepMs < estimateThroughput(m, recipe30b(), dropless, hw).stepMs);
    }

    void dispatcherTrafficFollowsMegatron()
    {
        // Same links, same efficiency: the flex dispatcher sends a token once per distinct
        // destination rank (EP8, top-8 → 5.25 of 8 slots), the alltoall dispatcher once per
        // (token, expert) pair, so flex moves 5.25/8 × 8/7 of alltoall's remote bytes.
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        const HardwareSpec hw = *catalog().hardware("b200");
        Workload w;
        w.forceBalancedRouting = true;
        ThroughputOptions o;
        o.eff.hybridepEfficiency = o.eff.alltoallEfficiency;
        Layout a2a = recipe30b();
        a2a.dispatcherType = "alltoall", a2a.dispatcherBackend = "";
        Layout flex = recipe30b();
        auto epMs = [&](const Layout& l) { return termMs(estimateThroughput(m, l, w, hw, o), "EP all-to-all (exposed)"); };
        const double distinctSlots = 8 * (1 - std::pow(7.0 / 8.0, 8));
        QVERIFY2(std::abs(epMs(flex) / epMs(a2a) - distinctSlots * 7.0 / 8.0 / 7.0) < 1e-9,
                 std::to_string(epMs(flex) / epMs(a2a)).c_str());
        // ETP with the alltoall dispatcher all-gathers the received pairs over the ETP group:
        // ETP2 on one node adds (ETP − 1) × pairs on top of the EP all-to-all.
        Layout etp = a2a;
        etp.worldSize = 16, etp.etp = 2;
        QVERIFY(epMs(etp) > 1.5 * epMs(a2a));
    }

    void dpGradReduceExposedWithoutOverlap()
    {
        // parallel.overlap_grad_reduce false: the whole DP reduction follows backward (exposed 1
        // instead of dpExposed); FSDP ignores the flag (its collectives are its own).
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        const HardwareSpec hw = *catalog().hardware("h200");
        Layout l;
        l.worldSize = 8, l.ep = 8, l.mbs = 1, l.gbs = 64;
        Workload w;
        w.forceBalancedRouting = true;
        ThroughputOptions o;
        auto dpMs = [&](const Layout& x) {
            return termMs(estimateThroughput(m, x, w, hw, o), "DP grad/param collectives (exposed)");
        };
        Layout off = l;
        off.overlapGradReduce = false;
        QVERIFY(dpMs(l) > 0.0);
        QVERIFY2(std::abs(dpMs(off) - dpMs(l) / o.eff.dpExposed) < 1e-9 * dpMs(off), std::to_string(dpMs(off)).c_str());
        l.useMegatronFsdp = off.useMegatronFsdp = true;
        l.fsdpStrategy = off.fsdpStrategy = "optim_grads";
        QCOMPARE(dpMs(off), dpMs(l));
        // The runtime config carries it both ways.
        RunConfig c;
        applyLayout(off, c);
        QVERIFY(!c.parallel.overlapGradReduce && !layoutFromRunConfig(c, 8).overlapGradReduce);
    }

    void epOverlapHidesAtMostTheCompute()
    {
        // EP16 on H100 spans two nodes: the all-to-all is several times the compute, so overlap
        // leaves comm − compute exposed, not just epOverlapExposed of it.
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        const HardwareSpec hw = *catalog().hardware("h100");
        Layout l;
        l.worldSize = 16, l.ep = 16, l.mbs = 1, l.gbs = 64;
        Workload w;
        w.forceBalancedRouting = true;
        const ThroughputEstimate plain = estimateThroughput(m, l, w, hw);
        l.overlapMoeExpertParallelComm = true;
        const ThroughputEstimate overlapped = estimateThroughput(m, l, w, hw);
        const double comm = termMs(plain, "EP all-to-all (exposed)");
        const double compute = termMs(plain, "expert GEMMs") + termMs(plain, "projection + logits GEMMs") + termMs(plain, "core attention");
        QVERIFY(comm > compute);
        QVERIFY(std::abs(termMs(overlapped, "EP all-to-all (exposed)") - (comm - compute)) < 1e-6 * comm);
    }

    void calibrationFactorScalesEveryTerm()
    {
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        const HardwareSpec hw = *catalog().hardware("gb200");
        ThroughputOptions calibrated;
        calibrated.eff.stepTimeFactor = 1.3;
        const ThroughputEstimate a = estimateThroughput(m, recipe30b(), Workload{}, hw);
        const ThroughputEstimate b = estimateThroughput(m, recipe30b(), Workload{}, hw, calibrated);
        QVERIFY(std::abs(b.stepMs - 1.3 * a.stepMs) < 1e-9 * a.stepMs);
        QVERIFY(std::abs(b.tokensPerSecPerGpu * 1.3 - a.tokensPerSecPerGpu) < 1e-6 * a.tokensPerSecPerGpu);
        QCOMPARE(a.terms.size(), b.terms.size());
        for (size_t i = 0; i < a.terms.size(); ++i)
            QVERIFY(std::abs(b.terms[i].ms - 1.3 * a.terms[i].ms) < 1e-9 * a.stepMs);
    }

    // bf16 Adam moments: m and v read and written in 2 bytes each, 8 of the optimizer step's
    // 32 B per owned parameter less; nothing else in the step changes.
    void bf16MomentsShortenOnlyTheOptimizerStep()
    {
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        const HardwareSpec hw = *catalog().hardware("gb200");
        Workload bf16;
        bf16.bf16AdamMoments = true;
        const ThroughputEstimate a = estimateThroughput(m, recipe30b(), Workload{}, hw);
        const ThroughputEstimate b = estimateThroughput(m, recipe30b(), bf16, hw);
        QCOMPARE(a.terms.size(), b.terms.size());
        for (size_t i = 0; i < a.terms.size(); ++i) {
            QCOMPARE(a.terms[i].name, b.terms[i].name);
            if (a.terms[i].name == "optimizer step") {
                QVERIFY(a.terms[i].ms > 0);
                QVERIFY(std::abs(b.terms[i].ms - a.terms[i].ms * 24.0 / 32.0) < 1e-12 * a.stepMs);
                QVERIFY2(b.terms[i].assumption.find("24 B") != std::string::npos, b.terms[i].assumption.c_str());
            } else {
                QCOMPARE(b.terms[i].ms, a.terms[i].ms);
            }
        }
    }

    void efficiencyFactorsAreOverridable()
    {
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        const HardwareSpec hw = *catalog().hardware("gb200");
        ThroughputOptions slow;
        slow.eff.groupedGemm /= 2;
        QVERIFY(estimateThroughput(m, recipe30b(), Workload{}, hw, slow).stepMs >
                estimateThroughput(m, recipe30b(), Workload{}, hw).stepMs);
        ThroughputOptions fast;
        fast.explain = false;
        QCOMPARE(estimateThroughput(m, recipe30b(), Workload{}, hw, fast).stepMs,
                 estimateThroughput(m, recipe30b(), Workload{}, hw).stepMs);
    }

    // A measured packed shape: n images of P patches each cost exactly n × visionFlops(P), the
    // decoder FLOPs count the effective tokens with the attention over each sample, and padding
    // is computed (time) but not counted (FLOPs, tokens).
    void packedShapeCountsWhatThePackerMade()
    {
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        const HardwareSpec hw = *catalog().hardware("h200");
        Layout l;
        l.worldSize = 1, l.mbs = 2, l.gbs = 2;
        Workload w;
        w.packed.images = 10, w.packed.patches = 10 * 1024.0, w.packed.patchesSquared = 10 * 1024.0 * 1024.0;
        w.packed.imageTokens = 10 * 256.0, w.packed.textTokens = 1200, w.packed.padTokens = 4096 - 2560 - 1200;
        w.packed.samples = 10;
        w.packed.sampleTokensSquared = 10 * 376.0 * 376.0;
        const ThroughputEstimate e = estimateThroughput(m, l, w, hw);
        const double vision = 10 * visionFlops(m.vision, m.decoder.hiddenSize, 1024);
        QVERIFY(std::abs(e.visionFlopsPerStep - 2 * vision) < 1e-9 * vision);
        const double decoder = decoderFlops(m.decoder, std::vector<int64_t>(10, 376));
        QVERIFY(std::abs(e.modelFlopsPerStep - 2 * (decoder + vision)) < 1e-9 * (decoder + vision));
        QCOMPARE(e.effectiveTokensPerStep, 2.0 * 3760);
        // The same tokens as one unpacked sequence per sample cost more attention.
        Workload unpacked;
        QVERIFY(termMs(estimateThroughput(m, l, unpacked, hw), "core attention") > termMs(e, "core attention"));
        // Mock (text only) drops the images of the measured shape too.
        Workload mock = w;
        mock.mockTextOnly = true;
        const ThroughputEstimate em = estimateThroughput(m, l, mock, hw);
        QCOMPARE(em.visionFlopsPerStep, 0.0);
        QCOMPARE(em.effectiveTokensPerStep, 2.0 * 1200);
    }

    // train.overlap_optimizer: the update runs on a side stream while the host queues the next
    // step; the forward beside it shares the HBM, so about the host gap is what it hides (measured on
    // one H200, docs/benchmarks.md 2026-12-05): exposed = update − gap, never below 0; the same with
    // several micro-batches; nothing changes under FSDP (moe-train keeps the serial step there) or
    // for Megatron-Bridge (no such step).
    void moeTrainOverlapsTheOptimizer()
    {
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b-slice")->model;
        const HardwareSpec hw = *catalog().hardware("h200");
        const ThroughputOptions o = moeTrainOn("h200");
        Layout serial;
        serial.worldSize = 1, serial.mbs = 4, serial.gbs = 4, serial.useDistributedOptimizer = false;
        serial.overlapOptimizer = Toggle::Off;
        serial.bf16Gradients = false;  // one update for any number of micro-batches (moeTrainBf16GradientsAsTheyAre)
        Layout overlapped = serial;
        overlapped.overlapOptimizer = Toggle::On;
        const ThroughputEstimate s = estimateThroughput(m, serial, Workload{}, hw, o);
        const ThroughputEstimate e = estimateThroughput(m, overlapped, Workload{}, hw, o);
        const double whole = termMs(s, "optimizer step"), exposed = termMs(e, "optimizer step");
        QVERIFY2(whole > 20.0, QByteArray::number(whole));
        QVERIFY2(std::abs(exposed - (whole - o.rates.stepGapMs)) < 1e-6 * whole,
                 QByteArray::number(exposed) + " vs " + QByteArray::number(whole) + " − " + QByteArray::number(o.rates.stepGapMs));
        QVERIFY(std::abs((s.stepMs - e.stepMs) - o.rates.stepGapMs) < 1e-6 * s.stepMs);
        Layout accumulate = overlapped;
        accumulate.gbs = 8;
        QVERIFY(std::abs(termMs(estimateThroughput(m, accumulate, Workload{}, hw, o), "optimizer step") - exposed) < 1e-9);
        Layout fsdp = overlapped;
        fsdp.worldSize = 2, fsdp.gbs = 8, fsdp.useMegatronFsdp = true, fsdp.fsdpStrategy = "optim";
        Layout fsdpSerial = fsdp;
        fsdpSerial.overlapOptimizer = Toggle::Off;
        QCOMPARE(termMs(estimateThroughput(m, fsdp, Workload{}, hw, o), "optimizer step"),
                 termMs(estimateThroughput(m, fsdpSerial, Workload{}, hw, o), "optimizer step"));
        QCOMPARE(estimateThroughput(m, overlapped, Workload{}, hw).stepMs, estimateThroughput(m, serial, Workload{}, hw).stepMs);
    }

    // train.overlap_optimizer "auto" (the default): overlapped on one GPU where the predicted peak
    // plus the gradients the updates hold fit 90 % of the card (overlapOptimizerFits, the rule
    // moe-train applies after its first step), else serial; serial with several ranks or without
    // a predicted peak.
    void moeTrainAutoOverlapWhereItFits()
    {
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b-slice")->model;
        const HardwareSpec hw = *catalog().hardware("h200");
        ThroughputOptions o = moeTrainOn("h200");
        Layout serial;
        serial.worldSize = 1, serial.mbs = 4, serial.gbs = 4, serial.useDistributedOptimizer = false;
        serial.overlapOptimizer = Toggle::Off;
        Layout on = serial, automatic = serial;
        on.overlapOptimizer = Toggle::On;
        automatic.overlapOptimizer = Toggle::Auto;
        QVERIFY(Layout{}.overlapOptimizer == Toggle::Auto);
        const double gib = 1073741824.0;
        auto stepOf = [&](const Layout& l, double peakGib) {
            ThroughputOptions with = o;
            with.predictedPeakBytes = peakGib * gib;
            return estimateThroughput(m, l, Workload{}, hw, with).stepMs;
        };
        const double serialMs = stepOf(serial, 82.0), onMs = stepOf(on, 82.0);
        QVERIFY(onMs < serialMs);
        QCOMPARE(stepOf(automatic, 82.0), onMs);       // 82 GiB + the slice's ≈ 9 GiB of gradients fit 90 % of 141
        QCOMPARE(stepOf(automatic, 125.0), serialMs);  // 125 + 9 do not
        QCOMPARE(stepOf(automatic, 0.0), serialMs);    // no predicted peak: serial
        Layout twoRanks = automatic, twoRanksSerial = serial;
        twoRanks.worldSize = twoRanksSerial.worldSize = 2, twoRanks.gbs = twoRanksSerial.gbs = 8;
        QCOMPARE(stepOf(twoRanks, 82.0), stepOf(twoRanksSerial, 82.0));
        Layout graphs = automatic, graphsSerial = serial;  // the router's CUDA graphs: moe-train keeps the serial step
        graphs.cudaGraphImpl = graphsSerial.cudaGraphImpl = "local";
        graphs.cudaGraphScope = graphsSerial.cudaGraphScope = {"moe_router"};
        QCOMPARE(stepOf(graphs, 82.0), stepOf(graphsSerial, 82.0));
        o.predictedPeakBytes = 82.0 * gib;
        QVERIFY(explainOf(estimateThroughput(m, automatic, Workload{}, hw, o), "optimizer step").find("\"auto\"") !=
                std::string::npos);
    }

    // train.bf16_weight_copies: the forward casts nothing (not even a re-forward), the backward still
    // widens every trainable weight's gradient, and the AdamW pass writes 2 B more for each trainable
    // weight with a copy (all but the embedding); FSDP keeps no copies. Memory: the copies outlive the
    // backward, so they also weigh on the optimizer step's peak.
    void moeTrainKeptCopiesCastNothing()
    {
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        const HardwareSpec hw = *catalog().hardware("h200");
        const ThroughputOptions o = moeTrainOn("h200");
        Layout casting;
        casting.worldSize = 1, casting.mbs = 1, casting.gbs = 2, casting.useDistributedOptimizer = false;
        casting.overlapOptimizer = Toggle::Off, casting.bf16WeightCopies = false;
        casting.bf16Gradients = false;          // widened (moeTrainBf16GradientsAsTheyAre)
        casting.recomputeGranularity = "full";  // a re-forward casts again without copies
        Layout kept = casting;
        kept.bf16WeightCopies = true;
        const ThroughputEstimate c = estimateThroughput(m, casting, Workload{}, hw, o);
        const ThroughputEstimate k = estimateThroughput(m, kept, Workload{}, hw, o);
        const ParameterCounts counts = countParameters(m);
        const double params = counts.total();
        const auto near = [](double a, double b) { return std::abs(a - b) <= 1e-4 * std::abs(b); };
        QCOMPARE(termMs(k, "weight casts (autocast)"), 0.0);
        // Two micro-batches, 6 B backward per trainable parameter, nothing forward.
        QVERIFY(near(termMs(k, "gradient widening"), 2 * 6.0 * params / (o.rates.castGbPerS * 1e9) * 1e3));
        QVERIFY(termMs(c, "weight casts (autocast)") > 2.0 * termMs(k, "gradient widening"));  // forward + re-forward
        QVERIFY(near(termMs(k, "optimizer step") - termMs(c, "optimizer step"),
                     2.0 * (params - counts.embedding) / (o.rates.optimizerGbPerS * 1e9) * 1e3));
        QVERIFY(k.stepMs < c.stepMs);
        // FSDP keeps no copies: the same terms as casting.
        Layout fsdp = kept, fsdpCasting = casting;
        fsdp.useMegatronFsdp = fsdpCasting.useMegatronFsdp = true;
        fsdp.fsdpStrategy = fsdpCasting.fsdpStrategy = "optim_grads_params";
        QCOMPARE(estimateThroughput(m, fsdp, Workload{}, hw, o).stepMs,
                 estimateThroughput(m, fsdpCasting, Workload{}, hw, o).stepMs);

        MemoryOptions mo;
        mo.moeTrain = true;
        // One micro-batch under full recompute: the optimizer step is the peak, and the kept copies
        // are in it (the measured real-mbs1 and real-recompute-full rows: +7.6 GiB with copies).
        Layout oneCasting = casting, oneKept = kept;
        oneCasting.gbs = oneKept.gbs = 1;
        const double extra = estimateMemory(m, oneKept, Workload{}, mo).total() - estimateMemory(m, oneCasting, Workload{}, mo).total();
        QVERIFY2(std::abs(extra - 2.0 * params) < 0.05 * 2.0 * params, std::to_string(extra / params).c_str());
    }

    // train.bf16_gradients (with the kept copies, one GPU): no widening pass, the norm and the AdamW
    // pass read 2 B less per copied weight; a second micro-batch widens once (to accumulate in fp32)
    // and the passes read fp32 again; on two GPUs it is off (a reducer hooks the fp32 gradients).
    // Memory: where the optimizer step is the peak, 2 B per copied weight less.
    void moeTrainBf16GradientsAsTheyAre()
    {
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        const HardwareSpec hw = *catalog().hardware("h200");
        const ThroughputOptions o = moeTrainOn("h200");
        Layout widening;
        widening.worldSize = 1, widening.mbs = 1, widening.gbs = 1, widening.useDistributedOptimizer = false;
        widening.overlapOptimizer = Toggle::Off, widening.bf16WeightCopies = true, widening.bf16Gradients = false;
        widening.recomputeGranularity = "full";  // the optimizer step is the memory peak
        Layout bf16 = widening;
        bf16.bf16Gradients = true;
        const ThroughputEstimate w = estimateThroughput(m, widening, Workload{}, hw, o);
        const ThroughputEstimate b = estimateThroughput(m, bf16, Workload{}, hw, o);
        const ParameterCounts counts = countParameters(m);
        const double copied = counts.total() - counts.embedding;
        const auto near = [](double x, double y) { return std::abs(x - y) <= 1e-4 * std::abs(y); };
        QCOMPARE(termMs(b, "gradient widening"), 0.0);
        QVERIFY(near(termMs(w, "gradient widening"), 6.0 * counts.total() / (o.rates.castGbPerS * 1e9) * 1e3));
        QVERIFY(near(termMs(w, "gradient-norm pass") - termMs(b, "gradient-norm pass"),
                     2.0 * copied / (o.rates.reduceGbPerS * 1e9) * 1e3));
        QVERIFY(near(termMs(w, "optimizer step") - termMs(b, "optimizer step"),
                     2.0 * copied / (o.rates.optimizerGbPerS * 1e9) * 1e3));
        // Two micro-batches: widened once, then fp32 as before.
        Layout twoWidening = widening, twoBf16 = bf16;
        twoWidening.gbs = twoBf16.gbs = 2;
        const ThroughputEstimate tw = estimateThroughput(m, twoWidening, Workload{}, hw, o);
        const ThroughputEstimate tb = estimateThroughput(m, twoBf16, Workload{}, hw, o);
        QVERIFY(near(termMs(tb, "gradient widening"), 6.0 * copied / (o.rates.castGbPerS * 1e9) * 1e3));
        QCOMPARE(termMs(tb, "optimizer step"), termMs(tw, "optimizer step"));
        QCOMPARE(termMs(tb, "gradient-norm pass"), termMs(tw, "gradient-norm pass"));
        // Two GPUs: off.
        Layout dpWidening = widening, dpBf16 = bf16;
        dpWidening.worldSize = dpBf16.worldSize = 2;
        dpWidening.gbs = dpBf16.gbs = 2;
        QCOMPARE(estimateThroughput(m, dpBf16, Workload{}, hw, o).stepMs,
                 estimateThroughput(m, dpWidening, Workload{}, hw, o).stepMs);

        MemoryOptions mo;
        mo.moeTrain = true;
        const double saved =
            estimateMemory(m, widening, Workload{}, mo).total() - estimateMemory(m, bf16, Workload{}, mo).total();
        QVERIFY2(std::abs(saved - 2.0 * copied) < 0.05 * 2.0 * copied, std::to_string(saved / copied).c_str());
    }

    // moe-train's FSDP (runtime/parallel/fsdp.h). ZeRO-1/2 keep the whole fp32 parameters on every
    // rank beside the fp32 shards, and the backward makes the whole fp32 gradients before any
    // reduce-scatter: with one micro-batch per step ZeRO-2 holds what ZeRO-1 holds (measured on
    // 2×H200: 65.0 and 64.9 GiB). The peak is the first unit's reduce-scatter (the root: embedding,
    // output layer, projector), whose fp32 input is a concatenated copy; bf16 reduction halves the
    // columns it replaces the gradients with, so the copy costs nothing beyond its output. ZeRO-3
    // gathers one layer at a time; its peak is the last layer's backward.
    void moeTrainFsdpHoldsWhatItsCodeHolds()
    {
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        Layout zero1;
        zero1.worldSize = 2, zero1.mbs = 1, zero1.gbs = 2, zero1.useDistributedOptimizer = false;
        zero1.useMegatronFsdp = true, zero1.fsdpStrategy = "optim";
        zero1.bf16WeightCopies = false, zero1.bf16Gradients = false;
        Layout zero2 = zero1;
        zero2.fsdpStrategy = "optim_grads";
        MemoryOptions mo;
        mo.moeTrain = true;
        const ParameterCounts c = countParameters(m);
        const double params = c.total(), n = 2.0;
        const double one = estimateMemory(m, zero1, Workload{}, mo).total();
        const double two = estimateMemory(m, zero2, Workload{}, mo).total();
        QCOMPARE(two, one);
        // At least the whole fp32 parameters, their shards and moments, and the whole gradients.
        QVERIFY(one > params * (4.0 + 4.0 / n + 8.0 / n + 4.0));
        // Megatron's ZeRO-2 (bf16 parameters, sharded main gradients) holds far less.
        MemoryOptions megatron;
        QVERIFY(estimateMemory(m, zero2, Workload{}, megatron).total() < one - 2.0 * params);
        // Kept bf16 copies do not exist under FSDP.
        Layout kept = zero2;
        kept.bf16WeightCopies = true;
        QCOMPARE(estimateMemory(m, kept, Workload{}, mo).total(), two);
        // bf16 reduction: the columns that replace the root's gradients are 2 B instead of 4, and
        // their concatenation 2 B: the 4 B of the fp32 concatenation are saved (the output, 4 B / N
        // after widening, and the shard gradient copied from it stay).
        Layout bf16 = zero2;
        bf16.gradReduceInFp32 = false;
        const double root = c.embedding + c.outputLayer + m.decoder.hiddenSize + c.projector;
        const double saved = two - estimateMemory(m, bf16, Workload{}, mo).total();
        QVERIFY2(std::abs(saved - root * 4.0) < 1e-6 * saved, (std::to_string(saved / 1073741824.0) + " GiB").c_str());
        // Two micro-batches per rank: ZeRO-1 holds the whole accumulated gradients through the
        // second forward, ZeRO-2 only the first one's shards.
        Layout acc1 = zero1, acc2 = zero2;
        acc1.gbs = acc2.gbs = 4;
        const MemoryEstimate a1 = estimateMemory(m, acc1, Workload{}, mo), a2 = estimateMemory(m, acc2, Workload{}, mo);
        double held1 = 0, held2 = 0;
        for (const MemoryTerm& t : a1.terms)
            held1 += t.name == "gradients held through the forward" ? t.bytes : 0.0;
        for (const MemoryTerm& t : a2.terms)
            held2 += t.name == "gradients held through the forward" ? t.bytes : 0.0;
        QVERIFY(std::abs(held1 - 4.0 * params) < 1e-9 * held1);
        QVERIFY(std::abs(held2 - 4.0 * params / n) < 1e-9 * held2);

        // ZeRO-3: the layers' whole fp32 parameters are gone (gathered one layer at a time) but
        // their bf16 copies are still saved for backward.
        Layout zero3 = zero2;
        zero3.fsdpStrategy = "optim_grads_params";
        const double three = estimateMemory(m, zero3, Workload{}, mo).total();
        const double layerParams = c.decoderDense + c.decoderExperts + c.visionEncoder;
        QVERIFY2(three < two - 4.0 * layerParams + 0.5 * 4.0 * layerParams,
                 std::to_string(three / 1073741824.0).c_str());
        QVERIFY(three > params * (4.0 / n + 8.0 / n + 2.0));
        // fsdp_reshard_after_forward false: every layer stays gathered (4 B) instead of two at a
        // time, and the last layer's backward needs no new gather.
        Layout gathered = zero3;
        gathered.fsdpReshardAfterForward = false;
        const double unit = c.decoderDense / m.decoder.numLayers + c.decoderExperts / m.decoder.numLayers;
        const double more = estimateMemory(m, gathered, Workload{}, mo).total() - three;
        QVERIFY2(std::abs(more - (4.0 * layerParams - 8.0 * unit)) < 1e-6 * more,
                 (std::to_string(more / 1073741824.0) + " GiB").c_str());
    }

    // moe-train's own passes: casts per micro-batch, one norm pass, the fused AdamW over every
    // trainable parameter (28 B, 20 B with bf16 moments), a host gap; each at its measured rate.
    void moeTrainHasItsOwnPasses()
    {
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        const HardwareSpec hw = *catalog().hardware("h200");
        Layout l;
        l.worldSize = 1, l.mbs = 1, l.gbs = 2, l.useDistributedOptimizer = false;
        l.overlapOptimizer = Toggle::Off;  // the serial step (the overlapped one: moeTrainOverlapsTheOptimizer)
        l.bf16WeightCopies = false;  // autocast's casts (the kept copies: moeTrainKeptCopiesCastNothing)
        ThroughputOptions o = moeTrainOn("h200");
        QVERIFY2(!o.rates.source.empty(), "the catalog has no moe-train profile for h200");
        const ThroughputEstimate e = estimateThroughput(m, l, Workload{}, hw, o);
        const ThroughputEstimate megatron = estimateThroughput(m, l, Workload{}, hw);
        QCOMPARE(termMs(megatron, "weight casts (autocast)"), 0.0);
        const double params = countParameters(m).total();
        // Two micro-batches: 2 × (6 B forward + 6 B backward) per parameter.
        QVERIFY(std::abs(termMs(e, "weight casts (autocast)") - 2 * 12.0 * params / (o.rates.castGbPerS * 1e9) * 1e3) <
                1e-4 * termMs(e, "weight casts (autocast)"));
        const auto near = [](double a, double b) { return std::abs(a - b) <= 1e-4 * std::abs(b); };
        QVERIFY(near(termMs(e, "optimizer step"), 28.0 * params / (o.rates.optimizerGbPerS * 1e9) * 1e3));
        QVERIFY(near(termMs(e, "gradient-norm pass"), 4.0 * params / (o.rates.reduceGbPerS * 1e9) * 1e3));
        QCOMPARE(termMs(e, "host gap per step"), o.rates.stepGapMs);
        QVERIFY(termMs(e, "optimizer step") != termMs(megatron, "optimizer step"));
        Workload bf16;
        bf16.bf16AdamMoments = true;
        QVERIFY(std::abs(termMs(estimateThroughput(m, l, bf16, hw, o), "optimizer step") / termMs(e, "optimizer step") -
                         20.0 / 28.0) < 1e-9);
        // A frozen encoder is still cast forward, but has no gradient to widen and no step.
        Layout frozen = l;
        frozen.freezeVision = true;
        const ThroughputEstimate f = estimateThroughput(m, frozen, Workload{}, hw, o);
        const ParameterCounts c = countParameters(m);
        const double vision = c.visionEncoder + c.projector;
        QVERIFY(near(termMs(e, "optimizer step") - termMs(f, "optimizer step"), 28.0 * vision / (o.rates.optimizerGbPerS * 1e9) * 1e3));
        QVERIFY(termMs(f, "weight casts (autocast)") < termMs(e, "weight casts (autocast)"));
        // Faster casts, shorter cast term; without a measured profile the HBM fractions are assumed and said.
        ThroughputOptions fast = o;
        fast.rates.castGbPerS *= 2;
        QVERIFY(std::abs(termMs(estimateThroughput(m, l, Workload{}, hw, fast), "weight casts (autocast)") * 2 -
                         termMs(e, "weight casts (autocast)")) < 1e-9);
        ThroughputOptions assumed;
        assumed.runtime = TrainingRuntime::MoeTrain;
        for (const TimeTerm& t : estimateThroughput(m, l, Workload{}, hw, assumed).terms)
            if (t.name == "weight casts (autocast)" || t.name == "optimizer step")
                QVERIFY2(t.assumption.find("assumed") != std::string::npos, t.assumption.c_str());
        // moe-train's LM head runs over the labelled (text) tokens only.
        Workload w;
        w.imagesPerSample = 4, w.imageWidth = w.imageHeight = 896;
        QVERIFY(termMs(estimateThroughput(m, l, w, hw, o), "projection + logits GEMMs") <
                termMs(estimateThroughput(m, l, w, hw), "projection + logits GEMMs"));
    }

    // moe-train's attention from its measured varlen flash kernels, tile by tile: the same
    // tokens in short packed samples cost several times their FLOPs (diagonal and partial tiles,
    // a CTA each), a long sequence runs near the kernel's long-sequence rate, a frozen encoder
    // runs only the forward kernel, a full recompute repeats the forward; without a measured
    // kernel for the hardware the FLOP-based term is used and says it is assumed.
    void moeTrainAttentionByTiles()
    {
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        const HardwareSpec hw = *catalog().hardware("h200");
        Layout l;
        l.worldSize = 1, l.mbs = 1, l.gbs = 1, l.useDistributedOptimizer = false;
        const ThroughputOptions o = moeTrainOn("h200");
        QVERIFY(o.rates.attentionKernel(m.decoder.kvChannels, true));
        const double flopsPerScore = 2.0 * m.decoder.numAttentionHeads * m.decoder.kvChannels * m.decoder.numLayers;  // forward
        auto tflops = [&](const Workload& w, double scores) {
            const double ms = termMs(estimateThroughput(m, l, w, hw, o), "core attention");
            return 3.0 * flopsPerScore * scores / (ms * 1e-3) / 1e12;  // model FLOPs (fwd + bwd) per second
        };
        Workload longSeq;  // one 4096-token sample per sequence
        const double longRate = tflops(longSeq, 4096.0 * 4096.0);
        // FA2 on Hopper: ~35 % of the dense bf16 peak forward at long sequences, less backward.
        QVERIFY2(longRate > 0.15 * hw.peakDenseBf16Tflops && longRate < 0.45 * hw.peakDenseBf16Tflops,
                 std::to_string(longRate).c_str());
        Workload shortSamples;  // ten ~400-token samples, as moe-train's real sample set packs
        shortSamples.packed.samples = 10, shortSamples.packed.textTokens = 4000;
        shortSamples.packed.sampleTokensSquared = 10 * 400.0 * 400.0;
        shortSamples.mockTextOnly = true;
        const double shortRate = tflops(shortSamples, 10 * 400.0 * 400.0);
        QVERIFY2(shortRate < longRate / 2.0, (std::to_string(shortRate) + " vs " + std::to_string(longRate)).c_str());
        for (const TimeTerm& t : estimateThroughput(m, l, shortSamples, hw, o).terms)
            if (t.name == "core attention")
                QVERIFY2(t.assumption.find("tile by tile") != std::string::npos && t.assumption.find("measured") != std::string::npos,
                         t.assumption.c_str());
        // Full recompute repeats the attention forward (about a quarter of forward + backward here).
        Layout full = l;
        full.recomputeGranularity = "full", full.recomputeMethod = "uniform", full.recomputeNumLayers = 1;
        Layout selective = l;
        selective.recomputeGranularity = "selective", selective.recomputeModules = {"core_attn"};
        const double attention = termMs(estimateThroughput(m, l, shortSamples, hw, o), "core attention");
        const double again = termMs(estimateThroughput(m, selective, shortSamples, hw, o), "recompute");
        QVERIFY2(again > 0.15 * attention && again < 0.45 * attention, (std::to_string(again) + " of " + std::to_string(attention)).c_str());
        QVERIFY(termMs(estimateThroughput(m, full, shortSamples, hw, o), "recompute") > again);
        // The vision encoder's per-image attention: a frozen encoder runs the forward kernel only.
        Workload images;
        images.imagesPerSample = 4, images.imageWidth = images.imageHeight = 896;
        Layout frozen = l;
        frozen.freezeVision = true;
        const double trained = termMs(estimateThroughput(m, l, images, hw, o), "vision encoder");
        const double forwardOnly = termMs(estimateThroughput(m, frozen, images, hw, o), "vision encoder");
        QVERIFY2(forwardOnly < 0.45 * trained && forwardOnly > 0.2 * trained,
                 (std::to_string(forwardOnly) + " of " + std::to_string(trained)).c_str());
        // Not measured on B200: the FLOP-based term, said to be assumed.
        const HardwareSpec b200 = *catalog().hardware("b200");
        const ThroughputOptions assumed = moeTrainOn("b200");
        for (const TimeTerm& t : estimateThroughput(m, l, shortSamples, b200, assumed).terms)
            if (t.name == "core attention")
                QVERIFY2(t.assumption.find("assumed") != std::string::npos, t.assumption.c_str());
    }

    // The knobs of the 26.06+ perf configs: full-iteration graphs drop the per-layer launch
    // overhead, the TE op fuser (fused expert MLP) drops the SwiGLU/quantize traffic, FP8
    // attention speeds up attention only under FP8 — and none of them touches anything else.
    void fusedConfigKnobsMoveOnlyTheirTerms()
    {
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        const HardwareSpec hw = *catalog().hardware("gb200");
        Workload w;
        w.mockTextOnly = w.forceBalancedRouting = true;
        ThroughputOptions o;
        o.fp8 = true;
        Layout base = recipe30b();
        base.cudaGraphImpl = "transformer_engine", base.cudaGraphScope = {"moe_router", "moe_preprocess"};
        const ThroughputEstimate b = estimateThroughput(m, base, w, hw, o);
        Layout full = base;
        full.cudaGraphImpl = "full_iteration", full.cudaGraphScope.clear();
        QVERIFY(termMs(b, "per-layer overhead") > 0);
        QCOMPARE(termMs(estimateThroughput(m, full, w, hw, o), "per-layer overhead"), 0.0);
        Layout fused = base;
        fused.teOpFuser = true;
        const ThroughputEstimate f = estimateThroughput(m, fused, w, hw, o);
        QVERIFY(termMs(f, "memory-bound elementwise") < termMs(b, "memory-bound elementwise"));
        QCOMPARE(termMs(f, "expert GEMMs"), termMs(b, "expert GEMMs"));
        Layout attn = base;
        attn.fp8DotProductAttention = true;
        const ThroughputEstimate a = estimateThroughput(m, attn, w, hw, o);
        QVERIFY(std::abs(termMs(a, "core attention") * o.eff.fp8AttentionSpeedup - termMs(b, "core attention")) < 1e-9);
        ThroughputOptions bf16 = o;
        bf16.fp8 = false;
        QCOMPARE(termMs(estimateThroughput(m, attn, w, hw, bf16), "core attention"),
                 termMs(estimateThroughput(m, base, w, hw, bf16), "core attention"));
        // Where the model is not validated, the term says so.
        bool said = false;
        for (const TimeTerm& t : b.terms)
            said = said || (t.name == "expert GEMMs" && t.assumption.find("NOT validated on Blackwell") != std::string::npos);
        QVERIFY(said);
    }

    // moe-train's collectives as its code runs them (throughput_model.cpp, runtime/parallel):
    // ZeRO-1 pays one reduce-scatter and one all-gather of every trainable value per step, both
    // waited for; bf16 reduction halves the first; ZeRO-3 kept gathered gathers once instead of
    // twice; EP pays the all-to-all bytes at the measured rate plus one routed-count wait per MoE
    // layer forward. Each at the profile's measured rate.
    void moeTrainCollectivesFollowItsCode()
    {
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        const HardwareSpec hw = *catalog().hardware("h200");
        ThroughputOptions o;
        o.runtime = TrainingRuntime::MoeTrain;
        o.rates = catalog().runtimeRates("moe-train", "h200");
        QVERIFY(o.rates.shardGbPerS > 0 && o.rates.allreduceGbPerS > 0 && o.rates.alltoallGbPerS > 0);
        const auto near = [](double a, double b) { return std::abs(a - b) <= 1e-6 * std::abs(b); };
        Layout zero1;
        zero1.worldSize = 2, zero1.mbs = 1, zero1.gbs = 4, zero1.useMegatronFsdp = true, zero1.fsdpStrategy = "optim";
        const ThroughputEstimate e1 = estimateThroughput(m, zero1, Workload{}, hw, o);
        const double params = countParameters(m).total();
        // Half of every fp32 value leaves each of the 2 ranks, once for the gradients, once for the parameters.
        QVERIFY(near(termMs(e1, "FSDP gradient reduce-scatter"), params * 4.0 / 2 / (o.rates.shardGbPerS * 1e9) * 1e3));
        QVERIFY(near(termMs(e1, "FSDP parameter all-gather"), termMs(e1, "FSDP gradient reduce-scatter")));
        QCOMPARE(termMs(e1, "DP grad/param collectives (exposed)"), 0.0);  // Megatron's term is not moe-train's
        Layout bf16 = zero1;
        bf16.gradReduceInFp32 = false;
        QVERIFY(near(termMs(estimateThroughput(m, bf16, Workload{}, hw, o), "FSDP gradient reduce-scatter") * 2,
                     termMs(e1, "FSDP gradient reduce-scatter")));
        ThroughputOptions faster = o;
        faster.rates.shardGbPerS *= 2;
        QVERIFY(near(termMs(estimateThroughput(m, zero1, Workload{}, hw, faster), "FSDP parameter all-gather") * 2,
                     termMs(e1, "FSDP parameter all-gather")));
        // The optimizer steps the rank's shard only.
        Layout ddp = zero1;
        ddp.useMegatronFsdp = false, ddp.fsdpStrategy = "no_shard";
        ddp.overlapOptimizer = Toggle::Off;  // the serial step, as FSDP's
        ddp.bf16WeightCopies = false;  // no copies to write, as under FSDP
        QVERIFY(near(termMs(e1, "optimizer step") * 2, termMs(estimateThroughput(m, ddp, Workload{}, hw, o), "optimizer step")));

        Layout zero3 = zero1;
        zero3.fsdpStrategy = "optim_grads_params";
        Layout kept = zero3;
        kept.fsdpReshardAfterForward = false;
        const double reshard = termMs(estimateThroughput(m, zero3, Workload{}, hw, o), "FSDP collectives (exposed)");
        const double once = termMs(estimateThroughput(m, kept, Workload{}, hw, o), "FSDP collectives (exposed)");
        QVERIFY2(reshard > once && once > 0, qPrintable(QString("%1 vs %2 ms").arg(reshard).arg(once)));
        // ZeRO-3 gathers the root unit (embedding, output layer, projector) after the step.
        const ParameterCounts counts = countParameters(m);
        const double root =
            counts.embedding + counts.outputLayer + counts.projector + (counts.visionEncoder - counts.visionBlocks);
        QVERIFY2(near(termMs(estimateThroughput(m, zero3, Workload{}, hw, o), "FSDP parameter all-gather"),
                      root * 4.0 / 2 / (o.rates.shardGbPerS * 1e9) * 1e3),
                 qPrintable(QString::number(
                     termMs(estimateThroughput(m, zero3, Workload{}, hw, o), "FSDP parameter all-gather"))));
        // EP 2 × DP 2 under ZeRO-3: the experts' group is one rank (expert DP 1), which moves each
        // layer's experts through the flat buffers as copies: 24 B per parameter per gather (two
        // per micro-batch, resharded after the forward) and 32 B per reduce, at the copy rate.
        Layout epFsdp = zero3;
        epFsdp.ep = 2;
        ThroughputOptions slowCopies = o;
        slowCopies.rates.copyGbPerS = o.rates.copyGbPerS / 2;
        QVERIFY(o.rates.copyGbPerS > 0);
        const double experts = counts.decoderExperts / 2;  // this rank's half of every layer's experts
        const double copyMs = experts * (2 * 24.0 + 32.0) / (o.rates.copyGbPerS * 1e9) * 1e3;
        const double perMicro =
            termMs(estimateThroughput(m, epFsdp, Workload{}, hw, slowCopies), "FSDP collectives (exposed)") -
            termMs(estimateThroughput(m, epFsdp, Workload{}, hw, o), "FSDP collectives (exposed)");
        QVERIFY2(near(perMicro, 2 * copyMs),  // 2 micro-batches: twice the copies, each twice as slow
                 qPrintable(QString("%1 vs %2 ms").arg(perMicro).arg(2 * copyMs)));

        // TP 2 with SP and ETP 2: each MoE layer's forward waits on the host for the TP ranks' row
        // counts (exchangeCounts), EP's routed-count wait; without SP nothing is exchanged.
        Layout tpSp = ddp;
        tpSp.tp = 2, tpSp.etp = 2, tpSp.sequenceParallel = true, tpSp.gbs = 2;
        ThroughputOptions slowSync = o;
        slowSync.rates.epSyncMs = o.rates.epSyncMs + 1.0;
        const double waits =
            termMs(estimateThroughput(m, tpSp, Workload{}, hw, slowSync), "TP/SP collectives (exposed)") -
            termMs(estimateThroughput(m, tpSp, Workload{}, hw, o), "TP/SP collectives (exposed)");
        QVERIFY2(near(waits, 2.0 * m.decoder.numLayers * 1.0),  // 2 micro-batches × L layers × 1 ms more each
                 qPrintable(QString::number(waits)));
        Layout tpNoSp = tpSp;
        tpNoSp.sequenceParallel = false;
        QCOMPARE(termMs(estimateThroughput(m, tpNoSp, Workload{}, hw, slowSync), "TP/SP collectives (exposed)"),
                 termMs(estimateThroughput(m, tpNoSp, Workload{}, hw, o), "TP/SP collectives (exposed)"));

        Layout ep = ddp;
        ep.ep = 2;
        Workload balanced;
        balanced.forceBalancedRouting = true;
        const ThroughputEstimate e = estimateThroughput(m, ep, balanced, hw, o);
        const DecoderConfig& d = m.decoder;
        // 2 micro-batches × L layers × 4 all-to-alls of T·k rows of h bf16, half of them to the peer.
        const double bytes = 2.0 * d.numLayers * 4.0 * 4096.0 * d.moeRouterTopk * d.hiddenSize * 2.0 / 2.0;
        QVERIFY(near(termMs(e, "EP all-to-all (exposed)"),
                     (bytes / (o.rates.alltoallGbPerS * 1e9) + 2.0 * d.numLayers * o.rates.epSyncMs * 1e-3) * 1e3));
    }
};

QTEST_GUILESS_MAIN(TestPlannerThroughput)
#include "test_throughput_model.moc"
