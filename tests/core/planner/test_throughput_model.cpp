// Throughput model: FLOPs agree with core/model_flops.h, the terms add up, and the model moves
// the right way when a knob changes (bubble, EP off the NVLink domain, mock data, frozen vision).
#include "core/planner/throughput_model.h"

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
};

QTEST_GUILESS_MAIN(TestPlannerThroughput)
#include "test_throughput_model.moc"
