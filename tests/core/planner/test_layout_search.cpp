// Search: ranked layouts are lint-clean and fit memory with headroom, the goal changes the order,
// and a GPU count no layout can use answers with the nearest counts that work.
#include "core/planner/layout_search.h"

#include <QtTest/QtTest>

using namespace wb::core;
using namespace wb::core::planner;

namespace {

Catalog& catalog()
{
    static Catalog c = *loadCatalog(builtinCatalogDir(WB_SOURCE_DIR));
    return c;
}

SearchRequest request(const char* model, const char* hw, int gpus, int gbs)
{
    SearchRequest r;
    r.model = *catalog().model(model);
    r.hardware = *catalog().hardware(hw);
    r.gpus = gpus;
    r.gbs = gbs;
    return r;
}

}  // namespace

class TestPlannerSearch : public QObject {
    Q_OBJECT
private slots:
    void rankedLayoutsAreValid_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("hw");
        QTest::addColumn<int>("gpus");
        QTest::addColumn<int>("gbs");
        QTest::newRow("30B on 8 GB200") << "qwen3-vl-30b-a3b" << "gb200" << 8 << 512;
        QTest::newRow("30B on 16 H100") << "qwen3-vl-30b-a3b" << "h100" << 16 << 512;
        QTest::newRow("235B on 64 GB200") << "qwen3-vl-235b-a22b" << "gb200" << 64 << 1024;
        QTest::newRow("tiny on 2 H200") << "sample-tiny" << "h200" << 2 << 8;
    }
    void rankedLayoutsAreValid()
    {
        QFETCH(QString, model);
        QFETCH(QString, hw);
        QFETCH(int, gpus);
        QFETCH(int, gbs);
        SearchRequest req = request(model.toUtf8().constData(), hw.toUtf8().constData(), gpus, gbs);
        auto r = searchLayouts(req);
        QVERIFY(r.ok());
        QVERIFY2(!r->ranked.empty(), r->noLayoutReason.c_str());
        double previous = 1e300;
        for (const Candidate& c : r->ranked) {
            QVERIFY(!hasErrors(c.lint));
            QVERIFY(!hasErrors(lintLayout(c.layout, {&req.model.model, &req.hardware, 4096})));
            QVERIFY(MemoryEstimate::gib(c.memory.total()) <= req.hardware.hbmGib * 0.9);
            QCOMPARE(c.layout.worldSize, gpus);
            QVERIFY(c.throughput.tokensPerSecPerGpu <= previous);
            previous = c.throughput.tokensPerSecPerGpu;
            QVERIFY(!c.memory.terms.front().name.empty());  // explained
        }
    }

    void goalsChangeTheOrder()
    {
        SearchRequest req = request("qwen3-vl-30b-a3b", "gb200", 8, 512);
        req.goal = Goal::Memory;
        auto mem = searchLayouts(req);
        for (size_t i = 1; i < mem->ranked.size(); ++i)
            QVERIFY(mem->ranked[i - 1].memory.total() <= mem->ranked[i].memory.total() + 1);
        req.goal = Goal::FirstRun;
        auto first = searchLayouts(req);
        const Layout& l = first->ranked.front().layout;
        QVERIFY(l.useMegatronFsdp && l.pp == 1 && l.tp == 1 && l.cudaGraphImpl == "none");
        QCOMPARE(parseGoal("first-run").value(), Goal::FirstRun);
        QVERIFY(!parseGoal("fastest").ok());
    }

    void unusableGpuCountSuggestsNeighbours()
    {
        // 235B on 4 H100s: nothing fits (≈ 236 B params need far more than 4 × 72 GiB).
        SearchRequest req = request("qwen3-vl-235b-a22b", "h100", 4, 64);
        auto r = searchLayouts(req);
        QVERIFY(r.ok());
        QVERIFY(r->ranked.empty());
        QVERIFY2(r->noLayoutReason.find("memory") != std::string::npos, r->noLayoutReason.c_str());
        QVERIFY(!r->nearby.empty());
        QVERIFY(r->nearby.back().gpus > 4);
        QVERIFY(!r->nearby.back().why.empty());
    }

    void badRequests()
    {
        SearchRequest req = request("qwen3-vl-30b-a3b", "gb200", 8, 512);
        req.nodes = 3;
        QVERIFY(!searchLayouts(req).ok());
        req.nodes = 0;
        req.workload.seqLength = 128;  // one 448² image is 196 tokens
        QVERIFY(!searchLayouts(req).ok());
    }
};

QTEST_GUILESS_MAIN(TestPlannerSearch)
#include "test_layout_search.moc"
