// Memory model against Megatron's closed forms (Korthikanti et al. 2022; megatron-bridge.md §7),
// with every number computed by hand in the comments, then the per-rank sharding rules.
#include "core/planner/memory_model.h"

#include <QtTest/QtTest>

using namespace wb::core;
using namespace wb::core::planner;

namespace {

Catalog& catalog()
{
    static Catalog c = *loadCatalog(builtinCatalogDir(WB_SOURCE_DIR));
    return c;
}

// A dense GPT layer as the paper has it: MHA, GeLU MLP of 4h, dropout, no flash attention.
// s = 2048, b = 1, h = 1024, a = 16 → sbh = 2,097,152 and 5as/h = 160.
ActivationShape denseShape()
{
    ActivationShape x;
    x.s = 2048, x.b = 1, x.h = 1024, x.a = 16, x.q = 1024, x.kv = 1024, x.ffn = 4096;
    x.gated = false, x.topk = 0, x.dropout = true, x.flash = false;
    return x;
}

}  // namespace

class TestPlannerMemory : public QObject {
    Q_OBJECT
private slots:
    void korthikantiClosedForms_data()
    {
        QTest::addColumn<int>("t");
        QTest::addColumn<bool>("sp");
        QTest::addColumn<bool>("flash");
        QTest::addColumn<QString>("granularity");
        QTest::addColumn<double>("bytes");
        // sbh(34 + 5as/h) = 2097152 × 194
        QTest::newRow("no parallelism") << 1 << false << false << "none" << 406847488.0;
        // flash removes 5as/h: 2097152 × 34
        QTest::newRow("flash attention") << 1 << false << true << "none" << 71303168.0;
        // TP 4: sbh(10 + 24/t + 5as/(ht)) = 2097152 × (10 + 6 + 40)
        QTest::newRow("TP4") << 4 << false << false << "none" << 117440512.0;
        // TP 4 + SP: sbh(34/t + 5as/(ht)) = 2097152 × 48.5
        QTest::newRow("TP4+SP") << 4 << true << false << "none" << 101711872.0;
        // selective (core_attn) + SP: sbh·34/t = 2097152 × 8.5
        QTest::newRow("selective+SP") << 4 << true << false << "selective" << 17825792.0;
        // full recompute: 2sbh, / t with SP
        QTest::newRow("full") << 1 << false << false << "full" << 4194304.0;
        QTest::newRow("full+SP") << 4 << true << false << "full" << 1048576.0;
    }
    void korthikantiClosedForms()
    {
        QFETCH(int, t);
        QFETCH(bool, sp);
        QFETCH(bool, flash);
        QFETCH(QString, granularity);
        QFETCH(double, bytes);
        ActivationShape x = denseShape();
        x.t = t, x.sp = sp, x.flash = flash;
        x.granularity = granularity.toStdString();
        if (x.granularity == "selective")
            x.modules = {"core_attn"};
        QCOMPARE(layerActivationBytes(x), bytes);
    }

    void moeTopkTerm()
    {
        // MoE replaces the dense MLP's 16h (GeLU 4h: FC1 out + act out) with the router (8E fp32)
        // plus k copies of (2h in + 4f gate/up + 2f act + 2h out). h = 1024, f = 512, k = 8, E = 64:
        // dense part (no dropout, flash) per token = 4h+4h (norms) + 2q+4kv+2q (=8h) = 16h = 16384;
        // MoE = 512 + 8 × (2048 + 2048 + 1024 + 2048) = 512 + 57344. Per token 74240; × s = 2048.
        ActivationShape x = denseShape();
        x.dropout = false, x.flash = true, x.gated = true, x.topk = 8, x.experts = 64, x.ffn = 512;
        QCOMPARE(layerActivationBytes(x), 2048.0 * 74240.0);
        // moe_act recompute drops the 2f act output of every copy: 8 × 1024 per token
        x.granularity = "selective";
        x.modules = {"moe_act"};
        QCOMPARE(layerActivationBytes(x), 2048.0 * (74240.0 - 8192.0));
        // imbalance 1.5 scales the routed part only
        x.granularity = "none";
        x.modules.clear();
        x.imbalance = 1.5;
        QCOMPARE(layerActivationBytes(x), 2048.0 * (16384.0 + 512.0 + 1.5 * 57344.0));
    }

    void optimizerSharding_data()
    {
        QTest::addColumn<bool>("fsdp");
        QTest::addColumn<QString>("strategy");
        QTest::addColumn<bool>("distopt");
        QTest::addColumn<double>("weights");    // bytes per parameter, with N = 8
        QTest::addColumn<double>("grads");
        QTest::addColumn<double>("optimizer");
        QTest::addColumn<bool>("bf16Moments");
        QTest::newRow("ddp 18 B/param") << false << "no_shard" << false << 2.0 << 4.0 << 12.0 << false;
        QTest::newRow("distopt 6 + 12/DP") << false << "no_shard" << true << 2.0 << 4.0 << 1.5 << false;
        QTest::newRow("fsdp optim") << true << "optim" << true << 2.0 << 4.0 << 1.5 << false;
        QTest::newRow("fsdp optim_grads") << true << "optim_grads" << true << 2.0 << 0.5 << 1.5 << false;
        QTest::newRow("fsdp optim_grads_params") << true << "optim_grads_params" << true << 0.25 << 0.5 << 1.5 << false;
        // bf16 Adam moments (precision-aware optimizer): fp32 master 4 + m 2 + v 2 = 8 B instead of
        // 12: 14 B/param unsharded, 6 + 8/DP distributed (8 / 8 ranks = 1 B).
        QTest::newRow("ddp bf16 moments 14 B/param") << false << "no_shard" << false << 2.0 << 4.0 << 8.0 << true;
        QTest::newRow("distopt bf16 moments 6 + 8/DP") << false << "no_shard" << true << 2.0 << 4.0 << 1.0 << true;
        QTest::newRow("fsdp optim_grads_params bf16 moments") << true << "optim_grads_params" << true << 0.25 << 0.5 << 1.0 << true;
    }
    void optimizerSharding()
    {
        QFETCH(bool, fsdp);
        QFETCH(QString, strategy);
        QFETCH(bool, distopt);
        QFETCH(double, weights);
        QFETCH(double, grads);
        QFETCH(double, optimizer);
        QFETCH(bool, bf16Moments);
        // sample-tiny on 8 GPUs, TP1 PP1 EP1: DP = EDP = 8; 1,414,464 parameters on every rank.
        const ModelConfig m = catalog().model("sample-tiny")->model;
        Layout l;
        l.worldSize = 8, l.gbs = 8, l.mbs = 1;
        l.useMegatronFsdp = fsdp;
        l.fsdpStrategy = strategy.toStdString();
        l.useDistributedOptimizer = distopt;
        Workload w;
        w.bf16AdamMoments = bf16Moments;
        const MemoryEstimate e = estimateMemory(m, l, w);
        const double params = 1414464.0;
        QCOMPARE(e.category("weights"), weights * params);
        QCOMPARE(e.category("grads"), grads * params);
        QCOMPARE(e.category("optimizer"), optimizer * params);
    }

    void expertsShardOverExpertDp()
    {
        // 30B-A3B on 64 GPUs, EP8: EDP = 64/8 = 8, DP = 64. Expert params per rank =
        // 48 × 16 local experts × 3·2048·768 = 48 × 16 × 4,718,592 = 3,623,878,656;
        // optimizer 12 B / EDP 8 = 1.5 B each.
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        Layout l;
        l.worldSize = 64, l.ep = 8, l.gbs = 64, l.mbs = 1;
        const MemoryEstimate e = estimateMemory(m, l, Workload{});
        double expertOptimizer = 0;
        for (const MemoryTerm& t : e.terms)
            if (t.name == "routed experts optimizer")
                expertOptimizer = t.bytes;
        QCOMPARE(expertOptimizer, 3623878656.0 * 1.5);
        // bf16 Adam moments: 8 B / EDP 8 = 1 B each; nothing else changes.
        Workload bf16;
        bf16.bf16AdamMoments = true;
        const MemoryEstimate b = estimateMemory(m, l, bf16);
        for (const MemoryTerm& t : b.terms)
            if (t.name == "routed experts optimizer") {
                QCOMPARE(t.bytes, 3623878656.0 * 1.0);
                QVERIFY2(t.assumption.find("bf16 Adam m, v") != std::string::npos, t.assumption.c_str());
            }
        QCOMPARE(b.category("weights"), e.category("weights"));
        QCOMPARE(b.category("grads"), e.category("grads"));
        QCOMPARE(b.category("optimizer") * 1.5, e.category("optimizer"));
    }

    void everyTermExplainsItself()
    {
        const ModelConfig m = catalog().model("qwen3-vl-235b-a22b")->model;
        Layout l;
        l.worldSize = 64, l.pp = 8, l.firstStageLayers = 10, l.lastStageLayers = 12, l.ep = 8, l.mbs = 2, l.gbs = 1024;
        l.dispatcherType = "flex", l.dispatcherBackend = "hybridep";
        l.cudaGraphImpl = "transformer_engine", l.cudaGraphScope = {"moe_router", "moe_preprocess"};
        const MemoryEstimate e = estimateMemory(m, l, Workload{});
        QCOMPARE(e.stage, 0);  // vision + embedding + most micro-batches in flight
        for (const char* name : {"vision encoder activations", "deepstack features", "dispatcher buffers", "CUDA graphs",
                                 "allocator slack", "decoder activations"}) {
            bool found = false;
            for (const MemoryTerm& t : e.terms)
                if (t.name == name) {
                    found = true;
                    QVERIFY2(!t.assumption.empty() && t.bytes > 0, name);
                }
            QVERIFY2(found, name);
        }
        // logits appear on the last stage only
        const MemoryEstimate lastStage = estimateStageMemory(m, l, Workload{}, 7);
        QVERIFY(lastStage.category("activations") > 0);
        bool logits = false;
        for (const MemoryTerm& t : lastStage.terms)
            logits |= t.name == "logits and loss";
        QVERIFY(logits);
        // numbers-only mode gives the same total
        MemoryOptions fast;
        fast.explain = false;
        QCOMPARE(estimateMemory(m, l, Workload{}, fast).total(), e.total());
    }

    void recomputeAndFreezingReduceMemory()
    {
        const ModelConfig m = catalog().model("qwen3-vl-30b-a3b")->model;
        Layout l;
        l.worldSize = 8, l.ep = 8, l.mbs = 4, l.gbs = 512;
        const double none = estimateMemory(m, l, Workload{}).category("activations");
        l.recomputeGranularity = "selective", l.recomputeModules = {"core_attn", "moe_act", "layernorm"};
        const double selective = estimateMemory(m, l, Workload{}).category("activations");
        l.recomputeGranularity = "full", l.recomputeModules = {}, l.recomputeNumLayers = 1;
        const double full = estimateMemory(m, l, Workload{}).category("activations");
        QVERIFY(none > selective && selective > full);
        l.freezeVision = true;
        QVERIFY(estimateMemory(m, l, Workload{}).category("activations") < full);
    }
};

QTEST_GUILESS_MAIN(TestPlannerMemory)
#include "test_memory_model.moc"
