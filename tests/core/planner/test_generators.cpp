// Generators: Megatron-Bridge keys, perf-launcher flags and environment names are all in the
// allow-lists below (copied from reference/megatron-bridge.md §1, §2, §4, §5 — a name that is not
// there is not a real framework name); the YAML says what the dotlist says; shell quoting survives
// bash; generated scripts pass `bash -n` and the SSH script, run against a stand-in ssh, starts
// one trainer per node with the torchrun environment; plan JSON round-trips; JSON paths map to lines.
#include "core/planner/bridge_import.h"
#include "core/planner/generators.h"
#include "core/planner/layout_search.h"
#include "core/planner/plan_json.h"

#include <QtTest/QtTest>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

using namespace wb::core;
using namespace wb::core::planner;

using Mutation = std::function<void(RunConfig&, GeneratorTarget&)>;
Q_DECLARE_METATYPE(Mutation)

namespace {

Catalog& catalog()
{
    static Catalog c = *loadCatalog(builtinCatalogDir(WB_SOURCE_DIR));
    return c;
}

// megatron-bridge.md §2 (fields, with their §1 sections) — the only keys a generator may write.
const std::set<std::string>& bridgeKeyAllowList()
{
    static const std::set<std::string> keys = {
        "model.tensor_model_parallel_size", "model.pipeline_model_parallel_size",
        "model.virtual_pipeline_model_parallel_size", "model.context_parallel_size",
        "model.expert_model_parallel_size", "model.expert_tensor_parallel_size", "model.sequence_parallel",
        "model.num_layers_in_first_pipeline_stage", "model.num_layers_in_last_pipeline_stage",
        "model.pipeline_model_parallel_layout", "train.micro_batch_size", "train.global_batch_size",
        "train.train_iters", "model.seq_length", "dataset.seq_length", "dist.use_megatron_fsdp",
        "ddp.use_megatron_fsdp", "ddp.data_parallel_sharding_strategy", "checkpoint.ckpt_format",
        "ddp.average_in_collective", "ddp.fsdp_double_buffer", "ddp.nccl_ub", "model.moe_token_dispatcher_type",
        "model.moe_flex_dispatcher_backend", "model.moe_hybridep_num_sms", "model.moe_deepep_num_sms",
        "model.moe_grouped_gemm", "model.moe_permute_fusion", "model.moe_router_fusion", "model.moe_router_dtype",
        "model.moe_router_topk", "model.num_moe_experts", "model.moe_ffn_hidden_size", "model.moe_aux_loss_coeff",
        "model.moe_router_load_balancing_type", "model.moe_shared_expert_overlap", "model.recompute_granularity",
        "model.recompute_method", "model.recompute_num_layers", "model.recompute_modules", "model.cuda_graph_impl",
        "model.cuda_graph_scope", "model.cuda_graph_modules", "model.cuda_graph_warmup_steps",
        "model.freeze_language_model", "model.freeze_vision_model", "model.freeze_vision_projection",
        "comm_overlap.overlap_moe_expert_parallel_comm", "comm_overlap.delay_wgrad_compute",
        "ddp.overlap_grad_reduce", "ddp.overlap_param_gather", "comm_overlap.tp_comm_overlap", "mixed_precision",
        // Megatron-Core OptimizerConfig fields as NVIDIA's Megatron-MoE scripts pass them to Bridge
        // (precision-aware optimizer), and the distributed optimizer it asserts (Bridge syncs the
        // ddp.* and optimizer.* flags in ConfigContainer validation).
        "optimizer.use_precision_aware_optimizer", "optimizer.main_grads_dtype", "optimizer.main_params_dtype",
        "optimizer.exp_avg_dtype", "optimizer.exp_avg_sq_dtype", "optimizer.use_distributed_optimizer",
        "ddp.use_distributed_optimizer",
        // Megatron-Core DistributedDataParallelConfig.grad_reduce_in_fp32 (default false: bf16
        // reduction), a sibling of overlap_grad_reduce in the ddp section.
        "ddp.grad_reduce_in_fp32"};
    return keys;
}

// §5: the perf launcher's flags.
const std::set<std::string>& perfFlagAllowList()
{
    static const std::set<std::string> flags = {
        "--account", "--partition", "-g", "-c", "-m", "-mr", "-ng", "--domain", "-tp", "-pp", "-cp", "-vp", "-ep",
        "-et", "-mb", "-gb", "-sl", "--cuda_graph_impl", "--cuda_graph_scope", "--moe_flex_dispatcher_backend",
        "--use_megatron_fsdp", "-rl", "--recompute_modules", "-d"};
    return flags;
}

// §4: environment variables the recipes set.
const std::set<std::string>& envAllowList()
{
    static const std::set<std::string> names = {
        "NCCL_GRAPH_REGISTER", "NCCL_NVLS_ENABLE", "PYTORCH_CUDA_ALLOC_CONF", "TORCH_NCCL_AVOID_RECORD_STREAMS",
        "TORCH_NCCL_HIGH_PRIORITY", "CUDA_DEVICE_MAX_CONNECTIONS", "NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN",
        "NVLINK_DOMAIN_SIZE", "USE_MNNVL", "NUM_OF_TOKENS_PER_CHUNK_COMBINE_API", "NVTE_FWD_LAYERNORM_SM_MARGIN",
        "NVTE_BWD_LAYERNORM_SM_MARGIN", "NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_C2C"};
    return names;
}

RunConfig qwen30b()
{
    RunConfig c;
    c.name = "qwen30b";
    c.model = catalog().model("qwen3-vl-30b-a3b")->model;
    c.train.seqLength = 4096;
    c.train.precision = "bf16";
    c.train.microBatchSize = 4;
    c.train.globalBatchSize = 512;
    c.runtime.device = "cuda";
    c.data.manifest = "/data/manifest.jsonl";
    c.parallel.expertModelParallelSize = 8;
    return c;
}

GeneratorTarget target(const char* hardware, int nodes, int gpusPerNode)
{
    GeneratorTarget t;
    t.hardware = *catalog().hardware(hardware);
    t.nodes = nodes;
    t.gpusPerNode = gpusPerNode;
    t.modelName = "qwen3-vl-30b-a3b";
    return t;
}

std::map<std::string, std::string> asMap(const std::vector<BridgeOverride>& overrides)
{
    std::map<std::string, std::string> m;
    for (const BridgeOverride& o : overrides)
        m[o.key] = o.value;
    return m;
}

QString runBash(const QStringList& args, const QString& workDir = {}, const QProcessEnvironment& env = {})
{
    QProcess p;
    if (!workDir.isEmpty())
        p.setWorkingDirectory(workDir);
    if (!env.isEmpty())
        p.setProcessEnvironment(env);
    p.start(QStringLiteral("bash"), args);
    p.waitForFinished(30000);
    return QString::fromUtf8(p.readAllStandardOutput()) + QString::fromUtf8(p.readAllStandardError()) +
           (p.exitCode() == 0 ? QString() : QStringLiteral("[exit %1]").arg(p.exitCode()));
}

// Every format that starts moe-train (runtime, ssh, slurm) writes `c` with `size(parsed run.json)`
// == `expected`, and says nothing about `knob` in its warnings: a layout moe-train runs as planned.
void checkMoeTrainFormatsKeep(const RunConfig& c, const GeneratorTarget& t, int (*size)(const RunConfig&), int expected,
                              const char* knob)
{
    for (const char* format : {"runtime", "ssh", "slurm"}) {
        auto kept = generateFormat(format, c, t);
        QVERIFY2(kept.ok(), format);
        bool sawConfig = false;
        for (const auto& f : kept->files)
            if (f.name == "run.json") {
                const auto parsed = parseRunConfig(f.content);
                QVERIFY2(parsed.ok(), format);
                QCOMPARE(size(parsed.config), expected);
                sawConfig = true;
            }
        QVERIFY2(sawConfig, format);
        QVERIFY2(std::none_of(kept->warnings.begin(), kept->warnings.end(),
                              [knob](const std::string& w) { return w.find(knob) != std::string::npos; }),
                 format);
    }
}

void writeFile(const QString& path, const std::string& content, bool executable)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(content.data(), static_cast<qint64>(content.size()));
    f.close();
    if (executable)
        f.setPermissions(f.permissions() | QFileDevice::ExeOwner | QFileDevice::ExeUser);
}

}  // namespace

class TestGenerators : public QObject {
    Q_OBJECT
private slots:
    void bridgeOverrides_data();
    void bridgeOverrides();
    void perfCommandFlags_data() { bridgeOverrides_data(); }
    void perfCommandFlags();
    void bridgeImportRoundTrips_data() { bridgeOverrides_data(); }
    void bridgeImportRoundTrips();
    void bridgeImportReportsLines();
    void perfLaunchFlagsReadBack();
    void textOnlyModelPerfCommand();
    void environment_data();
    void environment();
    void shellQuoteSurvivesBash_data();
    void shellQuoteSurvivesBash();
    void scriptsPassBashSyntaxCheck_data();
    void scriptsPassBashSyntaxCheck();
    void sshScriptStartsOneTrainerPerNode();
    void slurmScriptStartsOneTrainerPerRank();
    void slurmRefusesUnsafeDirectives();
    void runtimeFormatsContextParallel();
    void runtimeFormatsKeepTheGraphsMoeTrainRuns();
    void runtimeFormatsDispatchByAllToAll();  // and virtual stages: kept on the CPU, plain 1F1B on CUDA
    void planJsonRoundTrips();
    void bridgeImportChecksMomentDtypes();
    void bridgeImportReadsFusedConfigKnobs();
    void bridgeImportRefusesSizesBelowOne();
    void bridgeImportReadsTheData();
    void bridgeImportReadsAResolvedConfigContainer();
    void bridgeImportTreeYaml();
    void jsonPathLine_data();
    void jsonPathLine();
};

// Rows: a mutation of the 30B GB200 recipe config, and key=value pairs the overrides must hold.
void TestGenerators::bridgeOverrides_data()
{
    QTest::addColumn<Mutation>("mutate");
    QTest::addColumn<QStringList>("expected");
    using M = Mutation;
    QTest::newRow("recipe 30B 8xGB200 hybridep + graphs")
        << M([](RunConfig& c, GeneratorTarget&) {
               c.parallel.moeTokenDispatcherType = "flex";
               c.parallel.moeFlexDispatcherBackend = "hybridep";
               c.cudaGraph.impl = "transformer_engine";
               c.cudaGraph.scope = {"moe_router", "moe_preprocess"};
           })
        << QStringList{"model.expert_model_parallel_size=8", "model.moe_token_dispatcher_type=flex",
                       "model.moe_flex_dispatcher_backend=hybridep", "model.cuda_graph_impl=transformer_engine",
                       "model.cuda_graph_scope=[moe_router,moe_preprocess]", "train.micro_batch_size=4",
                       "model.virtual_pipeline_model_parallel_size=null", "mixed_precision=bf16_mixed",
                       "model.recompute_granularity=null", "ddp.overlap_grad_reduce=true"};
    QTest::newRow("3D PP4 VPP2 uneven, TP2 + SP, selective recompute")
        << M([](RunConfig& c, GeneratorTarget&) {
               c.parallel.tensorModelParallelSize = 2;
               c.parallel.sequenceParallel = true;
               c.parallel.pipelineModelParallelSize = 4;
               c.parallel.virtualPipelineModelParallelSize = 2;
               c.parallel.numLayersInFirstPipelineStage = 10;
               c.parallel.numLayersInLastPipelineStage = 14;
               c.recompute.granularity = "selective";
               c.recompute.modules = {"core_attn", "moe_act", "layernorm"};
           })
        << QStringList{"model.tensor_model_parallel_size=2", "model.sequence_parallel=true",
                       "model.virtual_pipeline_model_parallel_size=2", "model.num_layers_in_first_pipeline_stage=10",
                       "model.num_layers_in_last_pipeline_stage=14", "model.recompute_granularity=selective",
                       "model.recompute_modules=[core_attn,moe_act,layernorm]"};
    QTest::newRow("FSDP optim_grads_params, frozen vision, full recompute")
        << M([](RunConfig& c, GeneratorTarget&) {
               c.parallel.useMegatronFsdp = true;
               c.parallel.dataParallelShardingStrategy = "optim_grads_params";
               c.model.freezeVisionModel = true;
               c.model.freezeVisionProjection = true;
               c.recompute.granularity = "full";
               c.recompute.recomputeNumLayers = 2;
           })
        << QStringList{"ddp.use_megatron_fsdp=true", "dist.use_megatron_fsdp=true",
                       "ddp.data_parallel_sharding_strategy=optim_grads_params", "checkpoint.ckpt_format=fsdp_dtensor",
                       "ddp.average_in_collective=false", "model.freeze_vision_model=true",
                       "model.freeze_vision_projection=true", "model.recompute_granularity=full",
                       "model.recompute_method=uniform", "model.recompute_num_layers=2"};
    QTest::newRow("EP overlap on H100, PP2 VPP12, fp32")
        << M([](RunConfig& c, GeneratorTarget& t) {
               c.train.precision = "fp32";
               c.parallel.pipelineModelParallelSize = 2;
               c.parallel.virtualPipelineModelParallelSize = 12;
               t = target("h100", 2, 8);
               t.overlapMoeExpertParallelComm = true;
           })
        << QStringList{"comm_overlap.overlap_moe_expert_parallel_comm=true", "model.moe_shared_expert_overlap=false",
                       "model.virtual_pipeline_model_parallel_size=12", "model.moe_token_dispatcher_type=alltoall"};
    QTest::newRow("DP gradient allreduce not overlapped")
        << M([](RunConfig& c, GeneratorTarget&) { c.parallel.overlapGradReduce = false; })
        << QStringList{"ddp.overlap_grad_reduce=false", "ddp.grad_reduce_in_fp32=true"};
    QTest::newRow("FSDP with bf16 gradient reduction")
        << M([](RunConfig& c, GeneratorTarget&) {
               c.parallel.useMegatronFsdp = true;
               c.parallel.dataParallelShardingStrategy = "optim_grads";
               c.parallel.gradReduceInFp32 = false;
           })
        << QStringList{"ddp.grad_reduce_in_fp32=false", "ddp.data_parallel_sharding_strategy=optim_grads"};
    // The precision-aware optimizer: the five fields as NVIDIA's MoE scripts pass them, plus the
    // distributed optimizer Megatron asserts with it (Bridge switches it on itself under FSDP).
    QTest::newRow("bf16 Adam moments, 3D")
        << M([](RunConfig& c, GeneratorTarget&) { c.train.expAvgDtype = c.train.expAvgSqDtype = "bf16"; })
        << QStringList{"optimizer.use_precision_aware_optimizer=true", "optimizer.main_grads_dtype=torch.float32",
                       "optimizer.main_params_dtype=torch.float32", "optimizer.exp_avg_dtype=torch.bfloat16",
                       "optimizer.exp_avg_sq_dtype=torch.bfloat16", "optimizer.use_distributed_optimizer=true",
                       "ddp.use_distributed_optimizer=true"};
    QTest::newRow("bf16 Adam moments, FSDP")
        << M([](RunConfig& c, GeneratorTarget&) {
               c.train.expAvgDtype = c.train.expAvgSqDtype = "bf16";
               c.parallel.useMegatronFsdp = true;
               c.parallel.dataParallelShardingStrategy = "optim_grads_params";
           })
        << QStringList{"optimizer.use_precision_aware_optimizer=true", "optimizer.exp_avg_dtype=torch.bfloat16",
                       "optimizer.exp_avg_sq_dtype=torch.bfloat16", "ddp.use_megatron_fsdp=true"};
}

void TestGenerators::bridgeOverrides()
{
    QFETCH(Mutation, mutate);
    QFETCH(QStringList, expected);
    RunConfig c = qwen30b();
    GeneratorTarget t = target("gb200", 2, 4);
    mutate(c, t);
    const auto overrides = planner::bridgeOverrides(c, t);
    for (const BridgeOverride& o : overrides)
        QVERIFY2(bridgeKeyAllowList().count(o.key), ("not a Megatron-Bridge field in the reference: " + o.key).c_str());
    const std::string dotlist = bridgeDotlist(overrides);
    for (const QString& e : expected)
        QVERIFY2(dotlist.find(e.toStdString() + "\n") != std::string::npos, qPrintable(e + QStringLiteral(" missing in\n") + QString::fromStdString(dotlist)));
    if (c.train.precision != "bf16")
        QVERIFY(dotlist.find("mixed_precision") == std::string::npos);
    // Default moments: no optimizer field at all (the recipe's optimizer stays as it is); under
    // FSDP Bridge turns the distributed optimizer on itself, so it is not written.
    QCOMPARE(dotlist.find("optimizer.") != std::string::npos, usesBf16Moments(c));
    if (c.parallel.useMegatronFsdp)
        QVERIFY(dotlist.find("use_distributed_optimizer") == std::string::npos);
    // FSDP has its own reduce-scatter: the DDP overlap flag is written only without it.
    QCOMPARE(dotlist.find("ddp.overlap_grad_reduce=") != std::string::npos, !c.parallel.useMegatronFsdp);

    // The YAML file says exactly what the dotlist says: read its two levels back.
    std::map<std::string, std::string> fromYaml;
    std::string section;
    std::istringstream yaml(bridgeYaml(overrides));
    for (std::string line; std::getline(yaml, line);) {
        if (line.empty() || line[0] == '#')
            continue;
        const size_t colon = line.find(": ");
        if (line.back() == ':') {
            section = line.substr(0, line.size() - 1);
        } else if (line.rfind("  ", 0) == 0) {
            std::string value = line.substr(colon + 2);
            value.erase(std::remove(value.begin(), value.end(), ' '), value.end());
            fromYaml[section + "." + line.substr(2, colon - 2)] = value;
        } else {
            fromYaml[line.substr(0, colon)] = line.substr(colon + 2);
        }
    }
    QCOMPARE(fromYaml, asMap(overrides));
}

void TestGenerators::perfCommandFlags()
{
    QFETCH(Mutation, mutate);
    RunConfig c = qwen30b();
    GeneratorTarget t = target("gb200", 2, 4);
    mutate(c, t);
    std::vector<std::string> warnings;
    const std::string command = bridgePerfCommand(c, t, warnings);
    QVERIFY(command.rfind("python scripts/performance/setup_experiment.py", 0) == 0);
    // Every word: a flag from §5, a flag's value, or a key=value override with a §2 key.
    std::istringstream words(command);
    std::string word, previous;
    int overridesSeen = 0;
    while (words >> word) {
        if (word == "\\" || word == "python" || word == "scripts/performance/setup_experiment.py")
            continue;
        if (word.front() == '-') {
            QVERIFY2(perfFlagAllowList().count(word), ("not a perf launcher flag: " + word).c_str());
        } else if (previous.front() != '-') {
            if (word.front() == '\'')
                word = word.substr(1, word.size() - 2);
            const std::string key = word.substr(0, word.find('='));
            QVERIFY2(bridgeKeyAllowList().count(key), ("not a Megatron-Bridge field: " + key).c_str());
            ++overridesSeen;
        }
        previous = word;
    }
    QVERIFY(overridesSeen > 0);
    QVERIFY(command.find("-ng " + std::to_string(t.worldSize()) + " ") != std::string::npos);
    QVERIFY(command.find("-mr qwen3_vl_30b_a3b") != std::string::npos);
    QCOMPARE(command.find("-vp") != std::string::npos, c.parallel.virtualPipelineModelParallelSize > 1);
    QCOMPARE(command.find("-rl ") != std::string::npos, c.recompute.granularity == "full");
    QCOMPARE(command.find("--recompute_modules") != std::string::npos, c.recompute.granularity == "selective");
    QCOMPARE(command.find("--use_megatron_fsdp true") != std::string::npos, c.parallel.useMegatronFsdp);
    QCOMPARE(command.find("--moe_flex_dispatcher_backend hybridep") != std::string::npos,
             c.parallel.moeFlexDispatcherBackend == "hybridep");
    QVERIFY(!warnings.empty());  // ACCOUNT / PARTITION placeholders
    const std::string check = runBash({QStringLiteral("-n"), QStringLiteral("-c"), QString::fromStdString(command)}).toStdString();
    QVERIFY2(check.empty(), check.c_str());
}

// Reading the generated YAML and dotlist back gives the same layout (the lint path for Bridge files).
void TestGenerators::bridgeImportRoundTrips()
{
    QFETCH(Mutation, mutate);
    RunConfig c = qwen30b();
    GeneratorTarget t = target("gb200", 2, 4);
    mutate(c, t);
    const auto overrides = planner::bridgeOverrides(c, t);
    for (const BridgeOverride& o : overrides) {
        const auto& known = bridgeKnownFields();
        QVERIFY2(std::find(known.begin(), known.end(), o.key) != known.end(), o.key.c_str());
    }
    RunConfig base;
    base.model = c.model;
    for (bool yaml : {true, false}) {
        const std::string text = yaml ? bridgeYaml(overrides) : bridgeDotlist(overrides);
        QVERIFY(looksLikeDotlist(text) == !yaml);
        const BridgeImport back = importBridgeOverrides(text, yaml, base, t.worldSize());
        QVERIFY2(back.problems.empty(), back.problems.empty() ? "" : back.problems.front().message.c_str());
        Layout expected = layoutFromRunConfig(c, t.worldSize());
        expected.overlapMoeExpertParallelComm = t.overlapMoeExpertParallelComm;
        QVERIFY2(back.layout == expected, (back.layout.describe() + " != " + expected.describe()).c_str());
        QCOMPARE(back.config.train.seqLength, c.train.seqLength);
        QCOMPARE(back.config.train.trainIters, c.train.trainIters);
        QCOMPARE(back.config.train.precision, c.train.precision == "bf16" ? std::string("bf16") : base.train.precision);
        QCOMPARE(back.config.model.freezeLanguageModel, c.model.freezeLanguageModel);
        QCOMPARE(back.config.parallel.overlapGradReduce, c.parallel.overlapGradReduce);
        QCOMPARE(back.config.train.expAvgDtype, c.train.expAvgDtype);
        QCOMPARE(back.config.train.expAvgSqDtype, c.train.expAvgSqDtype);
    }
    // The perf launcher command (flags + key=value overrides) reads back to the same layout too.
    std::vector<std::string> warnings;
    const std::string perf = "#!/usr/bin/env bash\nset -euo pipefail\n" + bridgePerfCommand(c, t, warnings);
    QVERIFY(looksLikePerfLaunch(perf));
    const BridgeImport back = importBridgeOverrides(perf, false, base, t.worldSize());
    QVERIFY2(back.problems.empty(), back.problems.empty() ? "" : (back.problems.front().key + ": " + back.problems.front().message).c_str());
    Layout expected = layoutFromRunConfig(c, t.worldSize());
    expected.overlapMoeExpertParallelComm = t.overlapMoeExpertParallelComm;
    QVERIFY2(back.layout == expected, (back.layout.describe() + " != " + expected.describe() + "\n" + perf).c_str());
    QVERIFY(back.perf.present);
    QCOMPARE(back.perf.gpus, t.worldSize());
    QCOMPARE(back.perf.hardware, t.hardware.name);
    QCOMPARE(back.perf.model, std::string("qwen3-vl-30b-a3b"));
    QCOMPARE(back.config.train.seqLength, c.train.seqLength);
}

// The text-only Qwen3 MoE models (the published rows' models) run Bridge's LLM perf recipes:
// family qwen, recipe qwen3_30b_a3b, domain llm; the recipe name reads back to the catalog model.
void TestGenerators::textOnlyModelPerfCommand()
{
    RunConfig c = qwen30b();
    c.model = catalog().model("qwen3-30b-a3b")->model;
    QCOMPARE(c.model.vision.numLayers, 0);
    GeneratorTarget t = target("b200", 1, 8);
    t.modelName = "qwen3-30b-a3b";
    std::vector<std::string> warnings;
    const std::string perf = bridgePerfCommand(c, t, warnings);
    QVERIFY2(perf.find("-m qwen \\\n  -mr qwen3_30b_a3b \\\n") != std::string::npos, perf.c_str());
    QVERIFY2(perf.find("--domain llm \\\n") != std::string::npos, perf.c_str());
    for (const std::string& w : warnings)
        QVERIFY2(w.find("no perf recipe") == std::string::npos, w.c_str());
    RunConfig base;
    base.model = c.model;
    const BridgeImport back = importBridgeOverrides("#!/bin/bash\n" + perf, false, base, t.worldSize());
    QCOMPARE(back.perf.model, std::string("qwen3-30b-a3b"));
    QVERIFY(catalog().model(back.perf.model));
}

// A hand-written perf launcher command: each flag sets its field on its own line; -etp is -et;
// a flag the workbench does not know is a warning on its line; a flag without a value an error.
void TestGenerators::perfLaunchFlagsReadBack()
{
    const char* command = "#!/bin/bash\n"
                          "python scripts/performance/setup_experiment.py --account a --partition p \\\n"
                          "  -g h100 -c bf16 -m qwen_vl -mr qwen3_vl_30b_a3b -ng 16 --domain qwen3vl \\\n"
                          "  -tp 2 -pp 2 -vp 12 -cp 1 \\\n"
                          "  -ep 3 -etp 1 \\\n"
                          "  -mb 1 -gb 512 -sl 8192 \\\n"
                          "  --cuda_graph_impl transformer_engine --cuda_graph_scope moe_router,moe_preprocess \\\n"
                          "  --moe_flex_dispatcher_backend hybridep --recompute_modules core_attn,moe_act \\\n"
                          "  --frobnicate 3 model.sequence_parallel=true -d \\\n"
                          "  -mb\n";
    RunConfig base;
    base.model = qwen30b().model;
    const BridgeImport r = importBridgeOverrides(command, false, base, 16);
    QVERIFY(r.perf.present);
    QCOMPARE(r.perf.gpus, 16);
    QCOMPARE(r.perf.gpusLine, 3);
    QCOMPARE(r.perf.hardware, std::string("h100"));
    QCOMPARE(r.perf.model, std::string("qwen3-vl-30b-a3b"));
    const ParallelConfig& p = r.config.parallel;
    QCOMPARE(p.tensorModelParallelSize, 2);
    QCOMPARE(p.pipelineModelParallelSize, 2);
    QCOMPARE(p.virtualPipelineModelParallelSize, 12);
    QCOMPARE(p.expertModelParallelSize, 3);
    QCOMPARE(p.expertTensorParallelSize, 1);
    QCOMPARE(p.moeTokenDispatcherType, std::string("flex"));
    QCOMPARE(p.moeFlexDispatcherBackend, std::string("hybridep"));
    QVERIFY(p.sequenceParallel);
    QCOMPARE(r.config.train.microBatchSize, 1);
    QCOMPARE(r.config.train.globalBatchSize, 512);
    QCOMPARE(r.config.train.seqLength, 8192);
    QCOMPARE(r.config.cudaGraph.impl, std::string("transformer_engine"));
    QCOMPARE(r.config.cudaGraph.scope, (std::vector<std::string>{"moe_router", "moe_preprocess"}));
    QCOMPARE(r.config.recompute.granularity, std::string("selective"));
    QCOMPARE(r.config.recompute.modules, (std::vector<std::string>{"core_attn", "moe_act"}));
    QCOMPARE(r.lineOfConfigPath("parallel.expert_model_parallel_size"), 5);
    QCOMPARE(r.lineOfConfigPath("train.seq_length"), 6);
    std::map<int, std::string> byLine;
    for (const BridgeImportProblem& x : r.problems)
        byLine[x.line] += x.key + ": " + x.message + (x.error ? " [error]" : " [warning]");
    QCOMPARE(int(r.problems.size()), 2);
    QVERIFY2(byLine[9].find("--frobnicate") != std::string::npos && byLine[9].find("[warning]") != std::string::npos,
             byLine[9].c_str());
    QVERIFY2(byLine[10].find("-mb") != std::string::npos && byLine[10].find("[error]") != std::string::npos,
             byLine[10].c_str());
    // The same text without setup_experiment.py is a plain dotlist: flags are not read.
    std::string plain = command;
    const size_t script = plain.find("setup_experiment.py");
    QVERIFY(script != std::string::npos);
    plain.replace(script, std::string_view("setup_experiment.py").size(), "other.py");
    QVERIFY(!looksLikePerfLaunch(plain));
    QCOMPARE(importBridgeOverrides(plain, false, base, 16).config.parallel.expertModelParallelSize,
             base.parallel.expertModelParallelSize);
    // -rl N: full recompute of N layers; -c bf16: bf16.
    const BridgeImport full = importBridgeOverrides(
        "python scripts/performance/setup_experiment.py -ng 8 -c bf16 -rl 2 -ep 8\n", false, base, 8);
    QVERIFY(full.problems.empty());
    QCOMPARE(full.config.recompute.granularity, std::string("full"));
    QCOMPARE(full.config.recompute.recomputeNumLayers, 2);
    QCOMPARE(full.config.train.precision, std::string("bf16"));
}

void TestGenerators::bridgeImportReportsLines()
{
    const char* yaml = "# comment\n"
                       "model:\n"
                       "  expert_model_parallel_size: 8\n"
                       "  recompute_granularty: full\n"
                       "  sequence_parallel: maybe\n"
                       "ddp:\n"
                       "  use_megatron_fsdp: true\n"
                       "checkpoint:\n"
                       "  ckpt_format: torch_dist\n"
                       "  moe_grouped_gemm: true  # a real field, but in the wrong section\n";
    RunConfig base;
    base.model = qwen30b().model;
    const BridgeImport r = importBridgeOverrides(yaml, true, base, 8);
    std::map<int, std::string> byLine;
    for (const BridgeImportProblem& p : r.problems)
        byLine[p.line] += p.message + (p.error ? " [error]" : " [warning]") + (p.fix.empty() ? "" : " fix: " + p.fix);
    QVERIFY2(byLine[4].find("did you mean model.recompute_granularity") != std::string::npos, byLine[4].c_str());
    QVERIFY2(byLine[4].find("[warning]") != std::string::npos, byLine[4].c_str());
    QVERIFY2(byLine[5].find("true or false") != std::string::npos, byLine[5].c_str());
    QVERIFY2(byLine[9].find("fsdp_dtensor") != std::string::npos, byLine[9].c_str());
    QVERIFY2(byLine.count(10) && byLine[10].find("[warning]") != std::string::npos, "checkpoint.moe_grouped_gemm is not a field");
    QCOMPARE(r.lineOfConfigPath("parallel.expert_model_parallel_size"), 3);
    QCOMPARE(r.lineOfConfigPath("parallel.use_megatron_fsdp"), 7);
    QCOMPARE(r.config.parallel.expertModelParallelSize, 8);
    QVERIFY(r.config.parallel.useMegatronFsdp);
    // A dotlist as it appears on a command line, with Hydra's + prefix and quotes.
    const BridgeImport d = importBridgeOverrides("'model.recompute_modules=[core_attn,moe_act]' +train.micro_batch_size=2 \\\n", false, base, 8);
    QVERIFY(d.problems.empty());
    QCOMPARE(d.config.recompute.modules, (std::vector<std::string>{"core_attn", "moe_act"}));
    QCOMPARE(d.config.train.microBatchSize, 2);
}

// Issue 20 item 2: a parallel size, batch size or sequence length of 0 (or below) is an error on
// its line and is not applied, so the layout keeps a size of at least 1 (lint divided by it: SIGFPE).
// A resolved ConfigContainer YAML names its dataset (OmegaConf writes lists as block sequences):
// Bridge's mock VLM data with its images, and the router's benchmark-only forced balance.
void TestGenerators::bridgeImportReadsTheData()
{
    RunConfig base;
    base.model = qwen30b().model;
    const std::string yaml = "model:\n  moe_router_force_load_balancing: true\n  cuda_graph_scope:\n  - moe_router\n  - moe_preprocess\n"
                             "  recompute_modules:\n"
                             "dataset:\n  _target_: megatron.bridge.data.vlm_datasets.mock_provider.MockVLMSFTDatasetConfig\n"
                             "  num_images: 2\n  image_size:\n  - 320\n  - 240\n";
    const BridgeImport r = importBridgeOverrides(yaml, true, base, 8);
    QVERIFY2(r.problems.empty(), r.problems.empty() ? "" : (r.problems.front().key + ": " + r.problems.front().message).c_str());
    QVERIFY(r.data.mock);
    QCOMPARE(r.data.images, 2);
    QCOMPARE(r.data.imageWidth, 320);
    QCOMPARE(r.data.imageHeight, 240);
    QCOMPARE(r.data.forceLoadBalancing, std::optional<bool>(true));
    QCOMPARE(r.config.cudaGraph.scope, (std::vector<std::string>{"moe_router", "moe_preprocess"}));  // the block list
    // A real dataset, and values that are not what the field takes.
    const BridgeImport real = importBridgeOverrides("dataset:\n  _target_: megatron.bridge.data.energon.EnergonDatasetConfig\n", true, base, 8);
    QVERIFY(!real.data.mock && real.problems.empty() && !real.data.forceLoadBalancing);
    const BridgeImport bad = importBridgeOverrides(
        "model:\n  moe_router_force_load_balancing: maybe\ndataset:\n  num_images: -2\n  image_size: big\n", true, base, 8);
    for (const char* key : {"model.moe_router_force_load_balancing", "dataset.num_images", "dataset.image_size"})
        QVERIFY2(std::any_of(bad.problems.begin(), bad.problems.end(), [&](const BridgeImportProblem& p) { return p.key == key; }), key);
}

// The 1-based line of `text` that is exactly `line` (0 if none): the fixture's lines are looked up
// by their text, so the expected lines follow the file.
int lineOf(const std::string& text, const std::string& line)
{
    std::istringstream in(text);
    int n = 0;
    for (std::string l; std::getline(in, l);) {
        ++n;
        if (l == line)
            return n;
    }
    return 0;
}

// A full resolved ConfigContainer as Megatron-Bridge saves it (`cfg.to_yaml()`, PyYAML safe_dump:
// sorted keys, _target_s at every level, nested vision_config, dtypes as {_call_, _target_}):
// read into the layout, the mock dataset, each read key on its line, and one note for the fields
// not read instead of a warning per field.
void TestGenerators::bridgeImportReadsAResolvedConfigContainer()
{
    QFile f(QStringLiteral(WB_SOURCE_DIR "/tests/core/fixtures/bridge/qwen3_vl_30b_a3b_config.yaml"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const std::string text = f.readAll().toStdString();
    RunConfig base;
    base.model = qwen30b().model;
    const BridgeImport r = importBridgeOverrides(text, true, base, 8);
    QCOMPARE(int(r.problems.size()), 1);
    const BridgeImportProblem& note = r.problems.front();
    QVERIFY(!note.error);
    QCOMPARE(note.line, 0);
    QVERIFY2(note.message.rfind("103 fields not read", 0) == 0, note.message.c_str());

    const ParallelConfig& p = r.config.parallel;
    QCOMPARE(p.tensorModelParallelSize, 1);
    QCOMPARE(p.pipelineModelParallelSize, 1);
    QCOMPARE(p.virtualPipelineModelParallelSize, 1);  // null
    QCOMPARE(p.contextParallelSize, 1);
    QCOMPARE(p.expertModelParallelSize, 8);
    QCOMPARE(p.expertTensorParallelSize, 1);
    QVERIFY(!p.sequenceParallel);
    QVERIFY(!p.useMegatronFsdp);
    QCOMPARE(p.moeTokenDispatcherType, std::string("alltoall"));
    QCOMPARE(p.moeFlexDispatcherBackend, std::string());
    QCOMPARE(r.config.train.microBatchSize, 1);
    QCOMPARE(r.config.train.globalBatchSize, 512);
    QCOMPARE(r.config.train.trainIters, 50);
    QCOMPARE(r.config.train.seqLength, 4096);
    QCOMPARE(r.config.train.precision, std::string("bf16"));  // mixed_precision.bf16
    QCOMPARE(r.config.train.expAvgDtype, std::string("fp32"));  // {_call_: false, _target_: torch.float32}
    QCOMPARE(r.config.recompute.granularity, std::string("selective"));
    QCOMPARE(r.config.recompute.modules, (std::vector<std::string>{"core_attn", "moe_act"}));
    QCOMPARE(r.config.cudaGraph.impl, std::string("transformer_engine"));
    QCOMPARE(r.config.cudaGraph.scope, (std::vector<std::string>{"moe_router", "moe_preprocess"}));
    QVERIFY(r.config.model.freezeVisionModel);
    QVERIFY(!r.config.model.freezeLanguageModel);
    QCOMPARE(r.layout.tp, 1);
    QCOMPARE(r.layout.ep, 8);
    QCOMPARE(r.layout.etp, 1);
    QCOMPARE(r.layout.mbs, 1);
    QCOMPARE(r.layout.gbs, 512);
    QVERIFY(r.layout.useDistributedOptimizer);

    QVERIFY(r.data.mock);
    QCOMPARE(r.data.target, std::string("megatron.bridge.data.vlm_datasets.mock_provider.MockVLMSFTDatasetConfig"));
    QCOMPARE(r.data.images, 1);
    QCOMPARE(r.data.imageWidth, 256);
    QCOMPARE(r.data.imageHeight, 256);
    QCOMPARE(r.data.forceLoadBalancing, std::optional<bool>(true));

    const std::vector<std::pair<std::string, std::string>> lines = {
        {"model.expert_model_parallel_size", "  expert_model_parallel_size: 8"},
        {"model.cuda_graph_scope", "  cuda_graph_scope:"},
        {"model.vision_config.num_layers", "    num_layers: 27"},
        {"model.num_layers", "  num_layers: 48"},
        {"dataset.image_size", "  image_size:"},
        {"dataset.prompt", "  prompt: Describe this image. Answer in one sentence and name the main colours you"},
        {"train.global_batch_size", "  global_batch_size: 512"},
        {"ddp.use_megatron_fsdp", "  use_megatron_fsdp: false"},
        {"optimizer.exp_avg_dtype", "  exp_avg_dtype:"},
        {"mixed_precision.bf16", "  bf16: true"},
    };
    for (const auto& [key, line] : lines) {
        const int expected = lineOf(text, line);
        QVERIFY2(expected > 0, line.c_str());
        const auto it = r.keyLines.find(key);
        QVERIFY2(it != r.keyLines.end(), key.c_str());
        QVERIFY2(it->second == expected, (key + " on line " + std::to_string(it->second) + ", not " + std::to_string(expected)).c_str());
    }
    QCOMPARE(r.lineOfConfigPath("parallel.expert_model_parallel_size"), lineOf(text, "  expert_model_parallel_size: 8"));
    QCOMPARE(r.lineOfConfigPath("train.micro_batch_size"), lineOf(text, "  micro_batch_size: 1"));

    // A value the workbench reads is still checked on its line in a resolved config.
    std::string broken = text;
    broken.replace(broken.find("  moe_token_dispatcher_type: alltoall"), 36, "  moe_token_dispatcher_type: allgath");
    const BridgeImport b = importBridgeOverrides(broken, true, base, 8);
    QVERIFY(std::any_of(b.problems.begin(), b.problems.end(), [&](const BridgeImportProblem& x) {
        return x.error && x.key == "model.moe_token_dispatcher_type" && x.line == lineOf(text, "  moe_token_dispatcher_type: alltoall");
    }));
}

// The tree reader under override files: any depth, _target_s never warned, the per-key warnings
// kept for a hand-written file (even one with many sections), a YAML error on its line.
void TestGenerators::bridgeImportTreeYaml()
{
    RunConfig base;
    base.model = qwen30b().model;
    const BridgeImport t = importBridgeOverrides("model:\n  _target_: x.Qwen3VLMoEModelProvider\n  tensor_model_parallel_size: 2\n"
                                                 "  vision_config:\n    _target_: y.Config\n", true, base, 8);
    QVERIFY2(t.problems.empty(), t.problems.empty() ? "" : t.problems.front().message.c_str());
    QCOMPARE(t.config.parallel.tensorModelParallelSize, 2);
    const BridgeImport many = importBridgeOverrides("model:\n  recompute_granularty: full\ntrain:\n  micro_batch_size: 2\n"
                                                    "ddp:\n  overlap_grad_reduce: true\ndist:\n  use_megatron_fsdp: false\n"
                                                    "checkpoint:\n  ckpt_format: torch_dist\n", true, base, 8);
    QCOMPARE(int(many.problems.size()), 1);
    QCOMPARE(many.problems.front().line, 2);
    QVERIFY(many.problems.front().fix.find("did you mean model.recompute_granularity") != std::string::npos);
    const BridgeImport deep = importBridgeOverrides("model:\n  moe:\n    extra:\n      knob: 1\n", true, base, 8);
    QCOMPARE(int(deep.problems.size()), 1);
    QCOMPARE(deep.problems.front().key, std::string("model.moe.extra.knob"));
    QCOMPARE(deep.problems.front().line, 4);
    const BridgeImport bad = importBridgeOverrides("model:\n  expert_model_parallel_size: 8\n expert_tensor_parallel_size: 1\n", true, base, 8);
    QCOMPARE(int(bad.problems.size()), 1);
    QVERIFY(bad.problems.front().error);
    QCOMPARE(bad.problems.front().line, 3);
    QVERIFY2(bad.problems.front().message.find("not valid YAML (column 2): a key at indentation 1 inside a mapping at indentation 2") == 0,
             bad.problems.front().message.c_str());
    QCOMPARE(bad.problems.front().fix, std::string("indent it like its siblings"));
    // A list of mappings where a field wants names is an error on its line, not a crash or a silent skip.
    const BridgeImport nested = importBridgeOverrides("model:\n  cuda_graph_scope:\n  - name: moe_router\n", true, base, 8);
    QVERIFY(std::any_of(nested.problems.begin(), nested.problems.end(), [](const BridgeImportProblem& x) {
        return x.error && x.key == "model.cuda_graph_scope" && x.line == 2;
    }));
}

void TestGenerators::bridgeImportRefusesSizesBelowOne()
{
    RunConfig base;
    base.model = qwen30b().model;
    const std::vector<std::pair<std::string, std::string>> yaml = {
        {"model", "tensor_model_parallel_size"}, {"model", "pipeline_model_parallel_size"},
        {"model", "virtual_pipeline_model_parallel_size"}, {"model", "context_parallel_size"},
        {"model", "expert_model_parallel_size"}, {"model", "expert_tensor_parallel_size"},
        {"model", "seq_length"}, {"train", "micro_batch_size"}, {"train", "global_batch_size"}};
    for (const auto& [section, field] : yaml)
        for (const char* value : {"0", "-1", "-0"}) {
            const std::string text = section + ":\n  " + field + ": " + value + "\n";
            const BridgeImport r = importBridgeOverrides(text, true, base, 8);
            const std::string key = section + "." + field;
            const bool named = std::any_of(r.problems.begin(), r.problems.end(), [&](const BridgeImportProblem& p) {
                return p.error && p.line == 2 && p.key == key && p.message.find(">= 1") != std::string::npos;
            });
            QVERIFY2(named, (key + "=" + value).c_str());
            const auto& l = r.layout;
            QVERIFY2(l.tp >= 1 && l.pp >= 1 && l.vpp >= 1 && l.cp >= 1 && l.ep >= 1 && l.etp >= 1 && l.mbs >= 1 &&
                         l.gbs >= 1 && r.config.train.seqLength >= 1,
                     (key + "=" + value).c_str());
        }
    for (const char* flags : {"-tp 0", "-pp 0", "-ep 0", "-et 0", "-et -0", "-mb 0", "-gb 0", "-sl 0", "-vp 0", "-cp 0"}) {
        const std::string command = std::string("python scripts/performance/setup_experiment.py -g h200 -ng 8 "
                                                "-mr qwen3_vl_30b_a3b ") + flags + "\n";
        const BridgeImport r = importBridgeOverrides(command, false, base, 8);
        QVERIFY2(std::any_of(r.problems.begin(), r.problems.end(),
                             [](const BridgeImportProblem& p) { return p.error && p.message.find(">= 1") != std::string::npos; }),
                 flags);
    }
}

void TestGenerators::environment_data()
{
    QTest::addColumn<QString>("hardware");
    QTest::addColumn<int>("ep");
    QTest::addColumn<bool>("slurm");
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("gb200 EP8") << QStringLiteral("gb200") << 8 << false
                               << QStringList{"NVLINK_DOMAIN_SIZE=72", "USE_MNNVL=1", "NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN=8",
                                              "CUDA_DEVICE_MAX_CONNECTIONS=32", "NCCL_GRAPH_REGISTER=0"};
    QTest::newRow("gb200 EP32 slurm") << QStringLiteral("gb200") << 32 << true
                                      << QStringList{"NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN=32", "NCCL_NET_GDR_LEVEL=PHB",
                                                     "NCCL_NET_GDR_C2C=1"};
    QTest::newRow("h100 EP16") << QStringLiteral("h100") << 16 << true
                               << QStringList{"NVLINK_DOMAIN_SIZE=8", "USE_MNNVL=0", "NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN=8",
                                              "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"};
    QTest::newRow("b200 EP4") << QStringLiteral("b200") << 4 << false
                              << QStringList{"NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN=4", "USE_MNNVL=0"};
}

void TestGenerators::environment()
{
    QFETCH(QString, hardware);
    QFETCH(int, ep);
    QFETCH(bool, slurm);
    QFETCH(QStringList, expected);
    RunConfig c = qwen30b();
    c.parallel.expertModelParallelSize = ep;
    const GeneratorTarget t = target(hardware.toStdString().c_str(), 8, 4);
    const auto env = bridgeEnvironment(c, t, slurm);
    std::set<std::string> lines;
    for (const auto& [name, value] : env) {
        QVERIFY2(envAllowList().count(name), ("not an environment variable of the reference: " + name).c_str());
        lines.insert(name + "=" + value);
    }
    for (const QString& e : expected)
        QVERIFY2(lines.count(e.toStdString()), qPrintable(e));
    const bool hasGdr = std::any_of(env.begin(), env.end(), [](const auto& kv) { return kv.first == "NCCL_NET_GDR_LEVEL"; });
    QCOMPARE(hasGdr, slurm && hardware == QStringLiteral("gb200"));
}

void TestGenerators::shellQuoteSurvivesBash_data()
{
    QTest::addColumn<QString>("value");
    QTest::newRow("plain") << QStringLiteral("moe-train");
    QTest::newRow("space") << QStringLiteral("my run");
    QTest::newRow("single quote") << QStringLiteral("it's");
    QTest::newRow("double quote") << QStringLiteral("say \"hi\"");
    QTest::newRow("command substitution") << QStringLiteral("$(touch /tmp/wb-pwned)");
    QTest::newRow("backticks") << QStringLiteral("`id`");
    QTest::newRow("glob and tilde") << QStringLiteral("~/*");
    QTest::newRow("newline") << QStringLiteral("a\nb");
    QTest::newRow("empty") << QString();
    QTest::newRow("only quotes") << QStringLiteral("'''");
}

void TestGenerators::shellQuoteSurvivesBash()
{
    QFETCH(QString, value);
    const std::string quoted = shellQuote(value.toStdString());
    const QString out = runBash({QStringLiteral("-c"), QStringLiteral("printf %s ") + QString::fromStdString(quoted)});
    QCOMPARE(out, value);
}

void TestGenerators::scriptsPassBashSyntaxCheck_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("trainer");
    QTest::addColumn<QStringList>("hosts");
    QTest::newRow("plain") << QStringLiteral("run") << QStringLiteral("moe-train") << QStringList();
    QTest::newRow("nasty names") << QStringLiteral("it's a \"run\"\n$(reboot)") << QStringLiteral("/opt/my tools/moe-train`x`")
                                 << QStringList{QStringLiteral("host one"), QStringLiteral("h'2")};
}

void TestGenerators::scriptsPassBashSyntaxCheck()
{
    QFETCH(QString, name);
    QFETCH(QString, trainer);
    QFETCH(QStringList, hosts);
    RunConfig c = qwen30b();
    c.name = name.toStdString();
    GeneratorTarget t = target("gb200", 2, 4);
    t.moeTrain = trainer.toStdString();
    for (const QString& h : hosts)
        t.hosts.push_back(h.toStdString());
    QTemporaryDir dir;
    for (const char* format : {"ssh", "slurm", "megatron-bridge"}) {
        auto bundle = generateFormat(format, c, t);
        QVERIFY(bundle.ok());
        for (const GeneratedFile& f : bundle->files) {
            if (f.name.size() < 3 || (f.name.substr(f.name.size() - 3) != ".sh" && f.name != "run.sbatch"))
                continue;
            const QString path = dir.filePath(QString::fromStdString(f.name));
            writeFile(path, f.content, f.executable);
            const QString check = runBash({QStringLiteral("-n"), path});
            QVERIFY2(check.isEmpty(), qPrintable(QString::fromStdString(f.name) + QStringLiteral(": ") + check));
        }
    }
}

// The SSH script against a stand-in ssh that runs the remote command with sh in a per-host
// "home": every node gets run.json, a pid that is the trainer's own, and the torchrun environment.
void TestGenerators::sshScriptStartsOneTrainerPerNode()
{
    QTemporaryDir dir;
    const QString bin = dir.filePath(QStringLiteral("bin"));
    QVERIFY(QDir().mkpath(bin));
    writeFile(bin + QStringLiteral("/ssh"),
              "#!/usr/bin/env bash\nwhile [[ $1 == -o ]]; do shift 2; done\n[[ $1 == -- ]] && shift\nhost=$1; shift\n"
              "mkdir -p \"$FAKE_ROOT/$host\" && cd \"$FAKE_ROOT/$host\" && exec sh -c \"$*\"\n",
              true);
    const std::string trainer = (bin + QStringLiteral("/train it's $(x)")).toStdString();
    writeFile(QString::fromStdString(trainer),
              "#!/bin/sh\n{ echo \"$*\"; echo \"${WORLD_SIZE-unset} ${RANK-unset} $$\"; } > env.txt\n",
              true);
    RunConfig c = qwen30b();
    c.name = "it's \"quoted\"";
    GeneratorTarget t = target("gb200", 2, 4);
    t.hosts = {"node a", "node'b"};
    t.moeTrain = trainer;
    t.masterPort = 29511;
    writeFile(dir.filePath(QStringLiteral("launch.sh")), sshLaunchScript(c, t), true);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("PATH"), bin + QStringLiteral(":") + env.value(QStringLiteral("PATH")));
    env.insert(QStringLiteral("FAKE_ROOT"), dir.filePath(QStringLiteral("root")));
    env.insert(QStringLiteral("RUN_ID"), QStringLiteral("run $(x) 1"));
    const QString out = runBash({dir.filePath(QStringLiteral("launch.sh"))}, dir.path(), env);
    QVERIFY2(!out.contains(QStringLiteral("[exit")), qPrintable(out));
    const QStringList hosts = {QStringLiteral("node a"), QStringLiteral("node'b")};
    for (int i = 0; i < 2; ++i) {
        const QString runDir = dir.filePath(QStringLiteral("root/") + hosts[i] + QStringLiteral("/.cache/moe-workbench/runs/run $(x) 1"));
        QFile envFile(runDir + QStringLiteral("/env.txt"));
        QTRY_VERIFY_WITH_TIMEOUT(envFile.exists() && envFile.size() > 0, 5000);
        QVERIFY(envFile.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(envFile.readAll()).split(QLatin1Char('\n'));
        // moe-train's multi-node form (it refuses an inherited WORLD_SIZE under --nproc-per-node).
        QCOMPARE(lines[0], QStringLiteral("--config run.json --run-dir ") + runDir +
                               QStringLiteral(" --nproc-per-node 4 --nnodes 2 --node-rank %1 --master-addr node a "
                                              "--master-port 29511").arg(i));
        const QStringList vars = lines[1].split(QLatin1Char(' '));
        QCOMPARE(vars.mid(0, 2), (QStringList{QStringLiteral("unset"), QStringLiteral("unset")}));
        QFile pid(runDir + QStringLiteral("/pid"));
        QVERIFY(pid.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(pid.readAll()).trimmed(), vars.last());  // setsid did not fork
        QFile json(runDir + QStringLiteral("/run.json"));
        QVERIFY(json.open(QIODevice::ReadOnly));
        const RunConfigParse parsed = parseRunConfig(json.readAll().toStdString());
        QVERIFY2(parsed.ok(), formatProblems(parsed.problems).c_str());
        QCOMPARE(parsed.config.name, c.name);
        QCOMPARE(runConfigHash(parsed.config), runConfigHash(c));
    }
}

// The sbatch script under a stand-in srun (one task per rank as Slurm numbers them: SLURM_NODEID,
// SLURM_LOCALID, SLURM_PROCID, SLURM_NTASKS; --label and --output as srun does them) and scontrol:
// every rank gets the torchrun environment from Slurm's and the shared run dir.
void TestGenerators::slurmScriptStartsOneTrainerPerRank()
{
    QTemporaryDir dir;
    const QString bin = dir.filePath(QStringLiteral("bin"));
    QVERIFY(QDir().mkpath(bin));
    writeFile(bin + QStringLiteral("/scontrol"), "#!/bin/sh\nprintf 'gpu-a\\ngpu-b\\n'\n", true);
    writeFile(bin + QStringLiteral("/srun"),
              "#!/usr/bin/env bash\nout=/dev/null; per=1\n"
              "while [[ $1 == --* ]]; do [[ $1 == --output=* ]] && out=${1#--output=}; "
              "[[ $1 == --ntasks-per-node=* ]] && per=${1#--ntasks-per-node=}; shift; done\n"
              "for ((n = 0; n < SLURM_JOB_NUM_NODES; n++)); do for ((l = 0; l < per; l++)); do p=$((n * per + l))\n"
              "  SLURM_NODEID=$n SLURM_LOCALID=$l SLURM_PROCID=$p SLURM_NTASKS=$((SLURM_JOB_NUM_NODES * per)) SLURMD_NODENAME=gpu-$n "
              "\"$@\" 2>&1 | sed \"s/^/$p: /\" >> \"$out\"; done; done\n",
              true);
    const std::string trainer = (bin + QStringLiteral("/my trainer")).toStdString();
    writeFile(QString::fromStdString(trainer),
              "#!/bin/sh\necho \"$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $MASTER_ADDR $MASTER_PORT $*\" > \"$4/env-$RANK.txt\"\n"
              "echo trained\n",
              true);
    RunConfig c = qwen30b();
    c.name = "name with spaces; $(x)";
    GeneratorTarget t = target("h100", 2, 8);
    t.moeTrain = trainer;
    const std::string script = slurmScript(c, t);
    QVERIFY(script.find("#SBATCH --job-name=name_with_spaces____x_\n") != std::string::npos);
    QVERIFY(script.find("#SBATCH --ntasks-per-node=8\n") != std::string::npos);
    writeFile(dir.filePath(QStringLiteral("run.sbatch")), script, true);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("PATH"), bin + QStringLiteral(":") + env.value(QStringLiteral("PATH")));
    env.insert(QStringLiteral("SLURM_JOB_ID"), QStringLiteral("4242"));
    env.insert(QStringLiteral("SLURM_JOB_NUM_NODES"), QStringLiteral("2"));
    env.insert(QStringLiteral("SLURM_JOB_NODELIST"), QStringLiteral("gpu-[a-b]"));
    env.insert(QStringLiteral("RUNS_ROOT"), dir.filePath(QStringLiteral("runs root")));
    env.insert(QStringLiteral("WORLD_SIZE"), QStringLiteral("99"));  // a stale one in the submitting shell
    const QString out = runBash({dir.filePath(QStringLiteral("run.sbatch"))}, dir.path(), env);
    QVERIFY2(!out.contains(QStringLiteral("[exit")), qPrintable(out));
    const QString runDir = dir.filePath(QStringLiteral("runs root/slurm-4242"));
    for (int node = 0; node < 2; ++node) {
        for (int local = 0; local < 8; ++local) {
            const int rank = node * 8 + local;
            QFile f(runDir + QStringLiteral("/env-%1.txt").arg(rank));
            QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(f.fileName()));
            QCOMPARE(QString::fromUtf8(f.readAll()).trimmed(),
                     QStringLiteral("%1 %2 16 8 %3 gpu-a 29500 --config %4/run.json --run-dir %4")
                         .arg(rank).arg(local).arg(node).arg(runDir));
            QVERIFY(QFileInfo::exists(runDir + QStringLiteral("/pid.gpu-%1.%2").arg(node).arg(local)));
        }
    }
    QFile log(runDir + QStringLiteral("/stdout.log"));
    QVERIFY(log.open(QIODevice::ReadOnly));
    const QByteArray logText = log.readAll();
    QCOMPARE(logText.count("trained\n"), 16);
    QVERIFY(logText.startsWith("0: trained\n") && logText.endsWith("15: trained\n"));
    QFile json(runDir + QStringLiteral("/run.json"));
    QVERIFY(json.open(QIODevice::ReadOnly));
    QCOMPARE(runConfigHash(parseRunConfig(json.readAll().toStdString()).config), runConfigHash(c));
    QVERIFY(QFileInfo::exists(runDir + QStringLiteral("/ckpt")));
    // run.json arrives by rename (a reader on the shared filesystem never sees it half-written),
    // and the job's temporary name is gone.
    QVERIFY(script.find("cat > \"$RUN_DIR/run.json\"") == std::string::npos);
    QVERIFY(!QFileInfo::exists(runDir + QStringLiteral("/run.json.4242")));
}

void TestGenerators::slurmRefusesUnsafeDirectives()
{
    GeneratorTarget t = target("h100", 2, 8);
    t.account = "proj 1; rm -rf ~";
    QVERIFY(!generateFormat("slurm", qwen30b(), t).ok());
    t.account = "proj_1";
    t.timeLimit = "04:00:00";
    auto ok = generateFormat("slurm", qwen30b(), t);
    QVERIFY(ok.ok());
    QVERIFY(ok->files[0].content.find("#SBATCH --account=proj_1\n") != std::string::npos);
    QVERIFY(ok->files[0].content.find("#SBATCH --nodes=2\n") != std::string::npos);
    QVERIFY(ok->files[0].content.find("#SBATCH --gpus-per-node=8\n") != std::string::npos);
    QVERIFY(!generateFormat("pdf", qwen30b(), t).ok());
}

// moe-train runs context parallelism on the CPU only: the formats that start it refuse a CUDA
// layout with CP > 1, naming the knob (CP cannot be rewritten away without changing DP), and keep
// CP in a CPU config, silently; Megatron-Bridge's overrides are written either way.
void TestGenerators::runtimeFormatsContextParallel()
{
    RunConfig c = qwen30b();
    c.parallel.contextParallelSize = 2;
    const GeneratorTarget t = target("h100", 2, 8);
    for (const char* format : {"runtime", "ssh", "slurm"}) {
        auto bundle = generateFormat(format, c, t);
        QVERIFY2(!bundle.ok(), format);
        QVERIFY2(bundle.error().message.find("context_parallel_size 2") != std::string::npos, bundle.error().message.c_str());
        QVERIFY2(bundle.error().message.find("CPU only") != std::string::npos, bundle.error().message.c_str());
    }
    QVERIFY(generateFormat("megatron-bridge", c, t).ok());
    RunConfig cpu = c;
    cpu.runtime.device = "cpu";
    checkMoeTrainFormatsKeep(cpu, t, [](const RunConfig& r) { return r.parallel.contextParallelSize; }, 2, "context_parallel");
    c.parallel.contextParallelSize = 1;
    QVERIFY(generateFormat("runtime", c, t).ok());

    // What moe-train's formats rewrite (HybridEP → all-to-all, TE graphs → its router graphs) is
    // said for those formats only: the Bridge bundle keeps the layout as planned.
    c.parallel.moeTokenDispatcherType = "flex";
    c.parallel.moeFlexDispatcherBackend = "hybridep";
    const auto mentionsMoeTrain = [](const GeneratedBundle& b) {
        return std::any_of(b.warnings.begin(), b.warnings.end(),
                           [](const std::string& w) { return w.find("moe-train") != std::string::npos; });
    };
    auto bridge = generateFormat("megatron-bridge", c, t);
    QVERIFY(bridge.ok());
    QVERIFY(!mentionsMoeTrain(*bridge));
    auto runtime = generateFormat("runtime", c, t);
    QVERIFY(runtime.ok());
    QVERIFY(mentionsMoeTrain(*runtime));
}

// A planned layout with Megatron's CUDA graphs (transformer_engine over moe_router and
// moe_preprocess) becomes what moe-train runs (local over moe_router) in the formats that start
// moe-train, with a warning; the result passes moe-train's config validation; Megatron-Bridge's
// overrides keep the planned graphs; a scope without the router is written without graphs.
void TestGenerators::runtimeFormatsKeepTheGraphsMoeTrainRuns()
{
    RunConfig c = qwen30b();
    c.cudaGraph.impl = "transformer_engine";
    c.cudaGraph.scope = {"moe_router", "moe_preprocess"};
    const GeneratorTarget t = target("h100", 1, 8);
    auto fileOf = [](const GeneratedBundle& b, const std::string& name) {
        for (const auto& f : b.files)
            if (f.name == name)
                return f.content;
        return std::string();
    };
    for (const char* format : {"runtime", "ssh", "slurm"}) {
        auto bundle = generateFormat(format, c, t);
        QVERIFY2(bundle.ok(), format);
        const auto parsed = parseRunConfig(fileOf(*bundle, "run.json"));
        QVERIFY2(parsed.ok(), format);
        QCOMPARE(parsed.config.cudaGraph.impl, std::string("local"));
        QCOMPARE(parsed.config.cudaGraph.scope, std::vector<std::string>{"moe_router"});
        QVERIFY2(std::any_of(bundle->warnings.begin(), bundle->warnings.end(),
                             [](const std::string& w) {
                                 return w.find("without [moe_preprocess]") != std::string::npos &&
                                        w.find("transformer_engine") != std::string::npos;
                             }),
                 format);
    }
    auto bridge = generateFormat("megatron-bridge", c, t);
    QVERIFY(bridge.ok());
    QVERIFY(fileOf(*bridge, "overrides.yaml").find("transformer_engine") != std::string::npos);
    QVERIFY(fileOf(*bridge, "overrides.yaml").find("moe_preprocess") != std::string::npos);

    c.cudaGraph.scope = {"attn"};
    auto none = generateFormat("runtime", c, t);
    QVERIFY(none.ok());
    const auto parsed = parseRunConfig(fileOf(*none, "run.json"));
    QCOMPARE(parsed.config.cudaGraph.impl, std::string("none"));
    QVERIFY(parsed.config.cudaGraph.scope.empty());
    QVERIFY(!none->warnings.empty());

    c.cudaGraph.impl = "none";  // nothing to say
    auto plain = generateFormat("runtime", c, t);
    QVERIFY(plain.ok() && plain->warnings.empty());
}

void TestGenerators::runtimeFormatsDispatchByAllToAll()
{
    RunConfig c = qwen30b();
    c.parallel.expertModelParallelSize = 8;
    c.parallel.moeTokenDispatcherType = "flex";
    c.parallel.moeFlexDispatcherBackend = "hybridep";
    const GeneratorTarget t = target("gb200", 1, 8);
    auto run = [&](const char* format) {
        auto bundle = generateFormat(format, c, t);
        for (const auto& f : bundle->files)
            if (f.name == "run.json" || f.name == "overrides.yaml")
                return std::make_pair(std::move(*bundle), f.content);
        return std::make_pair(std::move(*bundle), std::string());
    };
    for (const char* format : {"runtime", "ssh", "slurm"}) {
        const auto [bundle, json] = run(format);
        const auto parsed = parseRunConfig(json);
        QVERIFY2(parsed.ok(), format);
        QCOMPARE(parsed.config.parallel.moeTokenDispatcherType, std::string("alltoall"));
        QVERIFY(parsed.config.parallel.moeFlexDispatcherBackend.empty());
        QCOMPARE(parsed.config.parallel.expertModelParallelSize, 8);  // the layout stays
        QVERIFY2(std::any_of(bundle.warnings.begin(), bundle.warnings.end(),
                             [](const std::string& w) {
                                 return w.find("flex (hybridep)") != std::string::npos &&
                                        w.find("written as alltoall") != std::string::npos;
                             }),
                 format);
    }
    // Megatron-Bridge runs HybridEP: its overrides keep it.
    const auto [bridge, yaml] = run("megatron-bridge");
    QVERIFY(yaml.find("hybridep") != std::string::npos);

    // Interleaved 1F1B on CUDA becomes plain 1F1B over the same stages, with a warning (moe-train
    // runs it on the CPU only); Bridge keeps it.
    RunConfig vpp = qwen30b();
    QCOMPARE(vpp.runtime.device, std::string("cuda"));
    vpp.parallel.pipelineModelParallelSize = 2;
    vpp.parallel.virtualPipelineModelParallelSize = 2;
    auto interleaved = generateFormat("runtime", vpp, t);
    QVERIFY(interleaved.ok());
    for (const auto& f : interleaved->files)
        if (f.name == "run.json") {
            const auto parsed = parseRunConfig(f.content);
            QVERIFY(parsed.ok());
            QCOMPARE(parsed.config.parallel.virtualPipelineModelParallelSize, 1);
            QCOMPARE(parsed.config.parallel.pipelineModelParallelSize, 2);
        }
    QVERIFY(std::any_of(interleaved->warnings.begin(), interleaved->warnings.end(),
                        [](const std::string& w) { return w.find("plain 1F1B") != std::string::npos; }));
    auto bridgeVpp = generateFormat("megatron-bridge", vpp, t);
    QVERIFY(bridgeVpp.ok());
    bool keeps = false;
    for (const auto& f : bridgeVpp->files)
        keeps = keeps || f.content.find("virtual_pipeline_model_parallel_size: 2") != std::string::npos;
    QVERIFY(keeps);
    // On the CPU moe-train runs interleaved 1F1B: every moe-train format keeps the virtual stages,
    // silently; with an uneven first stage it cannot, and says so.
    RunConfig cpuVpp = vpp;
    cpuVpp.runtime.device = "cpu";
    checkMoeTrainFormatsKeep(cpuVpp, t, [](const RunConfig& r) { return r.parallel.virtualPipelineModelParallelSize; }, 2,
                             "virtual_pipeline");
    cpuVpp.parallel.numLayersInFirstPipelineStage = 2;
    std::vector<std::string> notes;
    QCOMPARE(configForMoeTrain(cpuVpp, notes).parallel.virtualPipelineModelParallelSize, 1);
    QVERIFY(std::any_of(notes.begin(), notes.end(), [](const std::string& w) { return w.find("uneven first/last") != std::string::npos; }));

    // Without EP the dispatcher does nothing: rewritten silently.
    c.parallel.expertModelParallelSize = 1;
    auto plain = generateFormat("runtime", c, t);
    QVERIFY(plain.ok());
    QVERIFY(std::none_of(plain->warnings.begin(), plain->warnings.end(),
                         [](const std::string& w) { return w.find("dispatch") != std::string::npos; }));
}

void TestGenerators::planJsonRoundTrips()
{
    SearchRequest req;
    req.model = *catalog().model("qwen3-vl-30b-a3b");
    req.hardware = *catalog().hardware("gb200");
    req.gpus = 8;
    req.maxResults = 6;
    auto result = searchLayouts(req);
    QVERIFY(result.ok());
    QVERIFY(!result->ranked.empty());
    const std::string text = planToJson(req, recommend({}), *result);
    QVERIFY(looksLikePlan(text));
    QVERIFY(!looksLikePlan(runConfigToJson(qwen30b())));
    auto plan = parsePlanJson(text);
    QVERIFY2(plan.ok(), plan.ok() ? "" : plan.error().toString().c_str());
    QCOMPARE(plan->model, req.model.name);
    QCOMPARE(plan->gpus, 8);
    QCOMPARE(plan->layouts.size(), result->ranked.size());
    for (size_t i = 0; i < plan->layouts.size(); ++i)
        QVERIFY2(plan->layouts[i] == result->ranked[i].layout, result->ranked[i].layout.describe().c_str());
    // The runnable config for layout 0 validates and carries the layout.
    const RunConfig c = runConfigForLayout(req.model, plan->layouts[0], plan->workload, "/data/manifest.jsonl");
    QVERIFY2(validateRunConfig(c).empty(), formatProblems(validateRunConfig(c)).c_str());
    QVERIFY2(validateLayout(c, 8).empty(), formatProblems(validateLayout(c, 8)).c_str());
    QCOMPARE(layoutFromRunConfig(c, 8).ep, plan->layouts[0].ep);
    QCOMPARE(c.train.expAvgDtype, std::string("fp32"));
    QVERIFY(text.find("bf16_adam_moments") == std::string::npos);  // default plans read as before
    QVERIFY(!parsePlanJson("{\"layouts\": []}").ok());

    // bf16 Adam moments: kept in the plan, and the runnable config stores both moments in bf16.
    req.workload.bf16AdamMoments = true;
    auto withMoments = searchLayouts(req);
    QVERIFY(withMoments.ok() && !withMoments->ranked.empty());
    auto planMoments = parsePlanJson(planToJson(req, recommend({}), *withMoments));
    QVERIFY(planMoments.ok() && planMoments->workload.bf16AdamMoments);
    const RunConfig cm = runConfigForLayout(req.model, planMoments->layouts[0], planMoments->workload, "/data/manifest.jsonl");
    QCOMPARE(cm.train.expAvgDtype, std::string("bf16"));
    QCOMPARE(cm.train.expAvgSqDtype, std::string("bf16"));
    QVERIFY2(validateRunConfig(cm).empty(), formatProblems(validateRunConfig(cm)).c_str());
}

// Bridge files that set the moment dtypes without the precision-aware optimizer (Megatron
// asserts), or an unknown dtype, are refused on import with the line and the fix; reduced-precision
// master weights are a warning (not modelled).
void TestGenerators::bridgeImportChecksMomentDtypes()
{
    RunConfig base;
    base.model = qwen30b().model;
    const BridgeImport noFlag = importBridgeOverrides("model.expert_model_parallel_size=8\noptimizer.exp_avg_dtype=torch.bfloat16\n",
                                                      false, base, 8);
    QVERIFY(!noFlag.problems.empty());
    QCOMPARE(noFlag.problems.front().line, 2);
    QVERIFY(noFlag.problems.front().error);
    QVERIFY2(noFlag.problems.front().fix.find("optimizer.use_precision_aware_optimizer=true") != std::string::npos,
             noFlag.problems.front().fix.c_str());
    const BridgeImport bad = importBridgeOverrides("optimizer.use_precision_aware_optimizer=true\noptimizer.exp_avg_sq_dtype=torch.float16\n",
                                                   false, base, 8);
    QVERIFY(!bad.problems.empty() && bad.problems.front().key == "optimizer.exp_avg_sq_dtype" && bad.problems.front().error);
    const BridgeImport master = importBridgeOverrides("optimizer.use_precision_aware_optimizer=true\noptimizer.main_params_dtype=torch.float16\n",
                                                      false, base, 8);
    QVERIFY(master.problems.size() == 1 && !master.problems.front().error);
    // ddp.use_distributed_optimizer=false reaches the layout (lint then refuses bf16 moments).
    const BridgeImport ddp = importBridgeOverrides("ddp.use_distributed_optimizer=false\n", false, base, 8);
    QVERIFY(ddp.problems.empty() && !ddp.layout.useDistributedOptimizer);
    const BridgeImport either = importBridgeOverrides("ddp.use_distributed_optimizer=false\noptimizer.use_distributed_optimizer=true\n",
                                                      false, base, 8);
    QVERIFY(either.layout.useDistributedOptimizer);
    // ddp.overlap_grad_reduce reaches parallel.overlap_grad_reduce; not a boolean is an error.
    const BridgeImport overlap = importBridgeOverrides("ddp.overlap_grad_reduce=false\n", false, base, 8);
    QVERIFY(overlap.problems.empty() && !overlap.config.parallel.overlapGradReduce);
    const BridgeImport notBool = importBridgeOverrides("ddp.overlap_grad_reduce=maybe\n", false, base, 8);
    QVERIFY(!notBool.problems.empty() && notBool.problems.front().key == "ddp.overlap_grad_reduce" && notBool.problems.front().error);
    // ddp.grad_reduce_in_fp32 reaches parallel.grad_reduce_in_fp32.
    const BridgeImport bf16Reduce = importBridgeOverrides("ddp.grad_reduce_in_fp32=false\n", false, base, 8);
    QVERIFY(bf16Reduce.problems.empty() && !bf16Reduce.config.parallel.gradReduceInFp32);
}

void TestGenerators::jsonPathLine_data()
{
    QTest::addColumn<QString>("path");
    QTest::addColumn<int>("line");
    QTest::newRow("top-level") << QStringLiteral("name") << 2;
    QTest::newRow("nested") << QStringLiteral("train.micro_batch_size") << 5;
    QTest::newRow("same key in two sections") << QStringLiteral("model.decoder.num_layers") << 10;
    QTest::newRow("absent key → its section") << QStringLiteral("train.no_such") << 4;
    QTest::newRow("key after an array") << QStringLiteral("model.vision.hidden_size") << 8;
    QTest::newRow("string with braces and escaped quote") << QStringLiteral("parallel.tensor_model_parallel_size") << 14;
    QTest::newRow("unknown section") << QStringLiteral("nothing.here") << 0;
}

void TestGenerators::jsonPathLine()
{
    QFETCH(QString, path);
    QFETCH(int, line);
    const char* text = "{\n"
                       "  \"name\": \"a {b} \\\"c\\\"\",\n"
                       "  \"x\": [1, {\"name\": 2}],\n"
                       "  \"train\": {\n"
                       "    \"micro_batch_size\": 4\n"
                       "  },\n"
                       "  \"model\": { \"vision\": { \"num_layers\": 2, \"deepstack_layers\": [1, 2],\n"
                       "     \"hidden_size\": 64 },\n"
                       "    \"decoder\": {\n"
                       "      \"num_layers\": 3 }\n"
                       "  },\n"
                       "  \"parallel\": {\n"
                       "    \"note\": \"}}{{\\\"\",\n"
                       "    \"tensor_model_parallel_size\": 2 }\n"
                       "}\n";
    QCOMPARE(planner::jsonPathLine(text, path.toStdString()), line);
}

// The 26.06+ perf configs' knobs reach the layout the planner predicts (planner-only fields).
void TestGenerators::bridgeImportReadsFusedConfigKnobs()
{
    RunConfig base;
    base.model = qwen30b().model;
    const BridgeImport r = importBridgeOverrides("model.use_transformer_engine_op_fuser=true\n"
                                                 "mixed_precision.fp8_dot_product_attention=true\n"
                                                 "comm_overlap.overlap_moe_expert_parallel_comm=true\n"
                                                 "model.cuda_graph_impl=full_iteration\n",
                                                 false, base, 8);
    for (const auto& p : r.problems)
        QVERIFY2(!p.error, p.message.c_str());
    QVERIFY(r.layout.teOpFuser && r.layout.fp8DotProductAttention && r.layout.overlapMoeExpertParallelComm);
    QCOMPARE(r.layout.cudaGraphImpl, std::string("full_iteration"));
    const BridgeImport bad = importBridgeOverrides("model.use_transformer_engine_op_fuser=maybe\n", false, base, 8);
    bool named = false;
    for (const auto& p : bad.problems)
        named = named || (p.key == "model.use_transformer_engine_op_fuser" && p.error);
    QVERIFY(named);
}

QTEST_GUILESS_MAIN(TestGenerators)
#include "test_generators.moc"
