// Lint: every rule fires on a layout built to break it (one row per rule), a clean layout has no
// errors, and the mapping to/from RunConfig round-trips.
#include "core/planner/lint.h"

#include <QtTest/QtTest>

#include <functional>
#include <set>

using namespace wb::core;
using namespace wb::core::planner;

namespace {

Catalog& catalog()
{
    static Catalog c = *loadCatalog(builtinCatalogDir(WB_SOURCE_DIR));
    return c;
}

// Qwen3-VL-30B-A3B on 8 GPUs, the Bridge GB200 perf recipe: TP1 PP1 EP8 MBS4 GBS512, HybridEP.
Layout baseLayout()
{
    Layout l;
    l.worldSize = 8;
    l.ep = 8;
    l.mbs = 4;
    l.gbs = 512;
    l.dispatcherType = "flex";
    l.dispatcherBackend = "hybridep";
    l.cudaGraphImpl = "transformer_engine";
    l.cudaGraphScope = {"moe_router", "moe_preprocess"};
    return l;
}

struct Breaker {
    const char* rule;
    const char* hardware;
    std::function<void(Layout&)> mutate;
    int seq = 4096;
    bool bf16Moments = false;  ///< LintContext::bf16AdamMoments
};

const std::vector<Breaker>& breakers()
{
    static const std::vector<Breaker> rows = {
        {"precision-aware-optimizer-needs-distributed-optimizer", "gb200", [](Layout& l) { l.useDistributedOptimizer = false; }, 4096, true},
        {"world-divisible-by-tp-pp-cp", "gb200", [](Layout& l) { l.worldSize = 6; l.tp = 4; l.ep = 1; l.sequenceParallel = true; }},
        {"world-divisible-by-pp-ep-etp", "gb200", [](Layout& l) { l.worldSize = 12; l.ep = 8; }},
        {"ep-divides-experts", "gb200", [](Layout& l) { l.ep = 6; l.worldSize = 12; }},
        {"tp-divides-heads", "gb200", [](Layout& l) { l.tp = 8; l.sequenceParallel = true; }},
        {"sp-needs-tp", "gb200", [](Layout& l) { l.sequenceParallel = true; }},
        {"cp-divides-seq", "gb200", [](Layout& l) { l.cp = 4; l.ep = 2; }, 4100},
        {"uneven-stages-need-pp", "gb200", [](Layout& l) { l.firstStageLayers = 10; }},
        {"pp-splits-layers", "gb200", [](Layout& l) { l.pp = 8; l.ep = 1; l.worldSize = 8; l.mbs = 1; l.gbs = 8; l.firstStageLayers = 5; l.lastStageLayers = 5; }},
        {"vpp-divides-stage-layers", "gb200", [](Layout& l) { l.pp = 2; l.vpp = 5; l.ep = 4; l.mbs = 1; }},
        {"fsdp-strategy-needs-fsdp", "gb200", [](Layout& l) { l.fsdpStrategy = "optim_grads_params"; }},
        {"flex-backend-needs-flex-dispatcher", "gb200", [](Layout& l) { l.dispatcherType = "alltoall"; }},
        {"flex-dispatcher-needs-backend", "gb200", [](Layout& l) { l.dispatcherBackend = ""; }},
        {"gbs-divisible-by-mbs-dp", "gb200", [](Layout& l) { l.gbs = 100; }},
        {"recompute-modules-selective-only", "gb200", [](Layout& l) { l.recomputeModules = {"core_attn"}; }},
        {"full-recompute-num-layers", "gb200", [](Layout& l) { l.recomputeGranularity = "full"; l.recomputeNumLayers = 0; l.cudaGraphImpl = "none"; l.cudaGraphScope = {}; }},
        {"cuda-graph-scope-needs-impl", "gb200", [](Layout& l) { l.cudaGraphImpl = "none"; }},
        {"cuda-graph-mlp-scope-dense-only", "gb200", [](Layout& l) { l.cudaGraphScope = {"mlp"}; }},
        {"cuda-graph-moe-and-moe-router-exclusive", "gb200", [](Layout& l) { l.cudaGraphScope = {"moe", "moe_router"}; }},
        {"cuda-graph-moe-preprocess-needs-router", "gb200", [](Layout& l) { l.cudaGraphScope = {"moe_preprocess"}; }},
        {"full-recompute-needs-full-iteration-graph", "gb200", [](Layout& l) { l.recomputeGranularity = "full"; l.recomputeNumLayers = 1; }},
        {"minimum-gpus", "gb200", [](Layout& l) { l.worldSize = 4; l.ep = 8; }},
        {"tp-divides-vision-heads", "gb200", [](Layout& l) { l.tp = 32; l.worldSize = 32; l.ep = 8; l.sequenceParallel = true; }},
        {"qwen3-vl-forces-sequence-parallel", "gb200", [](Layout& l) { l.tp = 2; l.ep = 4; }},
        {"cuda-graph-attn-scope-qwen3-vl", "gb200", [](Layout& l) { l.cudaGraphScope = {"attn", "moe_router", "moe_preprocess"}; }},
        {"cuda-graph-moe-scope-drop-and-pad-only", "gb200", [](Layout& l) { l.cudaGraphScope = {"moe"}; }},
        {"moe-recompute-vs-ep-overlap", "gb200", [](Layout& l) { l.recomputeGranularity = "selective"; l.recomputeModules = {"moe"}; l.overlapMoeExpertParallelComm = true; l.cudaGraphImpl = "none"; l.cudaGraphScope = {}; }},
        {"moe-recompute-vs-te-router-graph", "gb200", [](Layout& l) { l.recomputeGranularity = "selective"; l.recomputeModules = {"moe"}; }},
        {"mlp-recompute-noop-on-moe", "gb200", [](Layout& l) { l.recomputeGranularity = "selective"; l.recomputeModules = {"mlp"}; }},
        {"ep-overlap-needs-ep", "gb200", [](Layout& l) { l.ep = 1; l.dispatcherType = "alltoall"; l.dispatcherBackend = ""; l.overlapMoeExpertParallelComm = true; }},
        {"ep-overlap-needs-alltoall-or-flex", "gb200", [](Layout& l) { l.dispatcherType = "allgather"; l.dispatcherBackend = ""; l.overlapMoeExpertParallelComm = true; }},
        {"ep-overlap-vs-shared-expert-overlap", "gb200", [](Layout& l) { l.overlapMoeExpertParallelComm = true; l.moeSharedExpertOverlap = true; }},
        {"ep-overlap-needs-vpp", "gb200", [](Layout& l) { l.pp = 2; l.ep = 4; l.mbs = 1; l.overlapMoeExpertParallelComm = true; }},
        {"env-cuda-device-max-connections", "gb200", [](Layout& l) { l.overlapMoeExpertParallelComm = true; }},
        {"fsdp-needs-fsdp-dtensor-checkpoints", "gb200", [](Layout& l) { l.useMegatronFsdp = true; l.fsdpStrategy = "optim_grads_params"; }},
        {"fsdp-no-shard", "gb200", [](Layout& l) { l.useMegatronFsdp = true; }},
        {"hybridep-needs-sm8-9-10", "old-gpu", [](Layout&) {}},
        {"deepep-needs-sm8-9-or-b200-b300", "gb200", [](Layout& l) { l.dispatcherBackend = "deepep"; }},
        {"hybridep-ep-over-nvlink-domain", "gb200", [](Layout& l) { l.worldSize = 128; l.ep = 128; l.gbs = 512; }},
        {"tp-within-node", "gb200", [](Layout& l) { l.tp = 8; l.worldSize = 8; l.ep = 8; l.sequenceParallel = true; l.mbs = 1; }},
    };
    return rows;
}

HardwareSpec hardwareFor(const char* name)
{
    if (std::string(name) == "old-gpu") {  // a Volta-class card: SM 7.0
        HardwareSpec h = *catalog().hardware("h100");
        h.name = "v100";
        h.sm = "7.0";
        return h;
    }
    return *catalog().hardware(name);
}

}  // namespace

class TestPlannerLint : public QObject {
    Q_OBJECT
private slots:
    void cleanRecipeHasNoErrors()
    {
        const ModelSpec m = *catalog().model("qwen3-vl-30b-a3b");
        const HardwareSpec hw = *catalog().hardware("gb200");
        const auto findings = lintLayout(baseLayout(), {&m.model, &hw, 4096});
        QVERIFY2(!hasErrors(findings), findings.empty() ? "" : findings.front().toString().c_str());
        // the 235B GB200 recipe: PP8 with first 10 / last 12 layers, EP8, MBS2, GBS1024 on 64 GPUs
        Layout l = baseLayout();
        l.worldSize = 64, l.pp = 8, l.firstStageLayers = 10, l.lastStageLayers = 12, l.mbs = 2, l.gbs = 1024;
        const ModelSpec big = *catalog().model("qwen3-vl-235b-a22b");
        const auto f2 = lintLayout(l, {&big.model, &hw, 4096});
        QVERIFY2(!hasErrors(f2), f2.empty() ? "" : f2.front().toString().c_str());
    }

    void eachRuleFires_data()
    {
        QTest::addColumn<int>("row");
        for (size_t i = 0; i < breakers().size(); ++i)
            QTest::newRow(breakers()[i].rule) << int(i);
    }
    void eachRuleFires()
    {
        QFETCH(int, row);
        const Breaker& b = breakers()[size_t(row)];
        const ModelSpec m = *catalog().model("qwen3-vl-30b-a3b");
        const HardwareSpec hw = hardwareFor(b.hardware);
        Layout l = baseLayout();
        b.mutate(l);
        const auto findings = lintLayout(l, {&m.model, &hw, b.seq, b.bf16Moments});
        std::string all;
        bool found = false;
        for (const LintFinding& f : findings) {
            all += f.toString() + "\n";
            if (f.rule == b.rule) {
                found = true;
                QVERIFY2(!f.message.empty() && !f.fix.empty(), f.toString().c_str());
                QVERIFY(!f.source.empty());
            }
        }
        QVERIFY2(found, (std::string("expected ") + b.rule + ", got:\n" + all).c_str());
    }

    // bf16 moments need the distributed optimizer: Megatron FSDP always has it, the planner's
    // default layout has it, and fp32 moments never need it.
    void precisionAwareOptimizerOnlyWithoutDistributedOptimizer()
    {
        const ModelSpec m = *catalog().model("qwen3-vl-30b-a3b");
        const HardwareSpec hw = *catalog().hardware("gb200");
        const auto fires = [&](const Layout& l, bool bf16) {
            for (const LintFinding& f : lintLayout(l, {&m.model, &hw, 4096, bf16}))
                if (f.rule == "precision-aware-optimizer-needs-distributed-optimizer")
                    return f.field == "ddp.use_distributed_optimizer" && f.severity == LintSeverity::Error;
            return false;
        };
        Layout l = baseLayout();
        QVERIFY(!fires(l, true));  // distributed optimizer on (default)
        l.useDistributedOptimizer = false;
        QVERIFY(fires(l, true));
        QVERIFY(!fires(l, false));
        l.useMegatronFsdp = true;
        l.fsdpStrategy = "optim_grads_params";
        QVERIFY(!fires(l, true));
        // From a RunConfig: its train.exp_avg_dtype decides; RunConfig layouts keep the default.
        RunConfig c;
        c.model = m.model;
        applyLayout(baseLayout(), c);
        c.train.expAvgDtype = "bf16";
        for (const LintFinding& f : lintRunConfig(c, 8, &hw))
            QVERIFY2(f.rule != "precision-aware-optimizer-needs-distributed-optimizer", f.toString().c_str());
    }

    void everyRuleHasABreakingRow()
    {
        std::set<std::string> tested;
        for (const Breaker& b : breakers())
            tested.insert(b.rule);
        for (const std::string& id : lintRuleIds())
            QVERIFY2(tested.count(id) == 1, ("no test row breaks rule " + id).c_str());
    }

    void runConfigRoundTrip()
    {
        Layout l = baseLayout();
        l.worldSize = 64, l.pp = 8, l.vpp = 3, l.firstStageLayers = 10, l.lastStageLayers = 12;
        l.recomputeGranularity = "selective";
        l.recomputeModules = {"core_attn", "moe_act"};
        l.freezeVision = true;
        RunConfig c;
        applyLayout(l, c);
        QCOMPARE(c.parallel.pipelineModelParallelSize, 8);
        QCOMPARE(c.parallel.moeFlexDispatcherBackend, std::string("hybridep"));
        QCOMPARE(c.cudaGraph.scope, (std::vector<std::string>{"moe_router", "moe_preprocess"}));
        QVERIFY(c.model.freezeVisionModel && c.model.freezeVisionProjection);
        QCOMPARE(layoutFromRunConfig(c, 64), l);
        // sizes per §3
        QCOMPARE(l.dp(), 8);      // 64 / (1·8·1)
        QCOMPARE(l.edp(), 1);     // 64 / (8·8·1)
        QCOMPARE(minimumGpus(l), 64);
        Layout e;
        e.worldSize = 64, e.ep = 8, e.etp = 8;
        QCOMPARE(minimumGpus(e), 64);  // PP·max(TP·CP, EP·ETP), not the product of everything
        QCOMPARE(e.dp(), 64);
        QCOMPARE(e.edp(), 1);
        QCOMPARE(layersPerStage(l, 94), (std::vector<int>{10, 12, 12, 12, 12, 12, 12, 12}));
    }

    void lintRunConfigUsesTheConfigsModel()
    {
        RunConfig c;
        c.model = catalog().model("qwen3-vl-30b-a3b")->model;
        c.parallel.expertModelParallelSize = 6;
        const auto f = lintRunConfig(c, 6, nullptr);
        QVERIFY(hasErrors(f));
    }
};

QTEST_GUILESS_MAIN(TestPlannerLint)
#include "test_lint.moc"
