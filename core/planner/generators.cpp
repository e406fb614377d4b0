// Megatron-Bridge overrides, perf launcher command and environment (megatron-bridge.md §1, §2, §4,
// §5), and the format dispatcher. Launch scripts are in launch_scripts.cpp.
//
// Only what RunConfig decides is written: parallel sizes, batch, sequence length, recompute, CUDA
// graphs, dispatcher, FSDP, freezing, precision. Model architecture, optimizer and data paths stay
// with the Bridge recipe (the recipe already has them right, and a second copy could only drift).
#include "core/planner/generators.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <map>

namespace wb::core::planner {
namespace {

std::string boolText(bool v) { return v ? "true" : "false"; }

std::string joinList(const std::vector<std::string>& items, const char* sep)
{
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0)
            out += sep;
        out += items[i];
    }
    return out;
}

// Hydra list syntax, also valid YAML flow syntax.
std::string listText(const std::vector<std::string>& items) { return "[" + joinList(items, ",") + "]"; }

bool gb200Class(const GeneratorTarget& t) { return t.hardware.nvlinkDomainSize > t.hardware.gpusPerNode; }

void modelOverrides(const RunConfig& c, const GeneratorTarget& target, std::vector<BridgeOverride>& out)
{
    const ParallelConfig& p = c.parallel;
    auto add = [&](const char* key, std::string value) { out.push_back({std::string("model.") + key, std::move(value)}); };
    add("tensor_model_parallel_size", std::to_string(p.tensorModelParallelSize));
    add("pipeline_model_parallel_size", std::to_string(p.pipelineModelParallelSize));
    // Megatron's "no virtual stages" is None, not 1.
    add("virtual_pipeline_model_parallel_size",
        p.virtualPipelineModelParallelSize > 1 ? std::to_string(p.virtualPipelineModelParallelSize) : "null");
    add("context_parallel_size", std::to_string(p.contextParallelSize));
    add("expert_model_parallel_size", std::to_string(p.expertModelParallelSize));
    add("expert_tensor_parallel_size", std::to_string(p.expertTensorParallelSize));
    add("sequence_parallel", boolText(p.sequenceParallel));
    if (p.numLayersInFirstPipelineStage > 0)
        add("num_layers_in_first_pipeline_stage", std::to_string(p.numLayersInFirstPipelineStage));
    if (p.numLayersInLastPipelineStage > 0)
        add("num_layers_in_last_pipeline_stage", std::to_string(p.numLayersInLastPipelineStage));
    add("seq_length", std::to_string(c.train.seqLength));

    add("moe_token_dispatcher_type", p.moeTokenDispatcherType);
    if (p.moeTokenDispatcherType == "flex" && !p.moeFlexDispatcherBackend.empty())
        add("moe_flex_dispatcher_backend", p.moeFlexDispatcherBackend);
    add("moe_router_dtype", c.model.decoder.moeRouterDtype);
    if (target.overlapMoeExpertParallelComm)  // §6: EP overlap needs the shared-expert overlap off
        add("moe_shared_expert_overlap", "false");

    const RecomputeConfig& r = c.recompute;
    if (r.granularity == "none") {
        add("recompute_granularity", "null");
    } else {
        add("recompute_granularity", r.granularity);
        if (r.granularity == "full") {
            add("recompute_method", r.method);
            add("recompute_num_layers", std::to_string(r.recomputeNumLayers));
        } else {
            add("recompute_modules", listText(r.modules));
        }
    }

    add("cuda_graph_impl", c.cudaGraph.impl);
    if (c.cudaGraph.impl != "none") {
        // Bridge recipes and the perf CLI still write the deprecated `cuda_graph_scope` (§2).
        add("cuda_graph_scope", listText(c.cudaGraph.scope));
        add("cuda_graph_warmup_steps", std::to_string(c.cudaGraph.warmupSteps));
    }
    // Always explicit: the MoE provider's defaults (LM and vision frozen) surprise people (§2).
    add("freeze_language_model", boolText(c.model.freezeLanguageModel));
    add("freeze_vision_model", boolText(c.model.freezeVisionModel));
    add("freeze_vision_projection", boolText(c.model.freezeVisionProjection));
}

}  // namespace

std::vector<BridgeOverride> bridgeOverrides(const RunConfig& c, const GeneratorTarget& target)
{
    std::vector<BridgeOverride> out;
    modelOverrides(c, target, out);
    out.push_back({"train.micro_batch_size", std::to_string(c.train.microBatchSize)});
    out.push_back({"train.global_batch_size", std::to_string(c.train.globalBatchSize)});
    out.push_back({"train.train_iters", std::to_string(c.train.trainIters)});
    out.push_back({"dataset.seq_length", std::to_string(c.train.seqLength)});
    if (c.parallel.useMegatronFsdp) {
        out.push_back({"ddp.use_megatron_fsdp", "true"});
        out.push_back({"ddp.data_parallel_sharding_strategy", c.parallel.dataParallelShardingStrategy});
        out.push_back({"ddp.average_in_collective", "false"});
        out.push_back({"dist.use_megatron_fsdp", "true"});
        out.push_back({"checkpoint.ckpt_format", "fsdp_dtensor"});  // required by Megatron FSDP (§6)
    } else {
        // Megatron's DDP default is off; the planner's time model assumes it on (dpExposed), so
        // the layout that was predicted is the one launched.
        out.push_back({"ddp.overlap_grad_reduce", boolText(c.parallel.overlapGradReduce)});
    }
    // Megatron's default is bf16 reduction (false); moe-train's is fp32: write what was planned.
    out.push_back({"ddp.grad_reduce_in_fp32", boolText(c.parallel.gradReduceInFp32)});
    if (usesBf16Moments(c)) {
        // Megatron's precision-aware optimizer, as NVIDIA's MoE scripts pass it to Bridge. Master
        // weights and main grads stay fp32 (as in moe-train); only the moments are bf16.
        const auto dtype = [](const std::string& d) { return d == "bf16" ? "torch.bfloat16" : "torch.float32"; };
        out.push_back({"optimizer.use_precision_aware_optimizer", "true"});
        out.push_back({"optimizer.main_grads_dtype", "torch.float32"});
        out.push_back({"optimizer.main_params_dtype", "torch.float32"});
        out.push_back({"optimizer.exp_avg_dtype", dtype(c.train.expAvgDtype)});
        out.push_back({"optimizer.exp_avg_sq_dtype", dtype(c.train.expAvgSqDtype)});
        // OptimizerConfig asserts use_distributed_optimizer with it. Bridge turns it on for
        // Megatron FSDP itself (and syncs ddp.* with optimizer.*); without FSDP say it here rather
        // than trust the recipe.
        if (!c.parallel.useMegatronFsdp) {
            out.push_back({"optimizer.use_distributed_optimizer", "true"});
            out.push_back({"ddp.use_distributed_optimizer", "true"});
        }
    }
    if (target.overlapMoeExpertParallelComm)
        out.push_back({"comm_overlap.overlap_moe_expert_parallel_comm", "true"});
    if (c.train.precision == "bf16")
        out.push_back({"mixed_precision", "bf16_mixed"});
    return out;
}

bool usesBf16Moments(const RunConfig& c)
{
    return c.train.expAvgDtype == "bf16" || c.train.expAvgSqDtype == "bf16";
}

std::string bridgeDotlist(const std::vector<BridgeOverride>& overrides)
{
    std::string out;
    for (const BridgeOverride& o : overrides)
        out += o.key + "=" + o.value + "\n";
    return out;
}

std::string bridgeYaml(const std::vector<BridgeOverride>& overrides)
{
    // Sections in first-seen order, each with its keys in order; top-level scalars after them.
    std::vector<std::string> sections;
    std::map<std::string, std::vector<const BridgeOverride*>> bySection;
    std::vector<const BridgeOverride*> scalars;
    for (const BridgeOverride& o : overrides) {
        const size_t dot = o.key.find('.');
        if (dot == std::string::npos) {
            scalars.push_back(&o);
            continue;
        }
        const std::string section = o.key.substr(0, dot);
        if (!bySection.count(section))
            sections.push_back(section);
        bySection[section].push_back(&o);
    }
    std::string out = "# Megatron-Bridge override file (generated by moe-workbench). Precedence: recipe, then this\n"
                      "# file, then command-line key=value overrides.\n";
    for (const std::string& section : sections) {
        out += section + ":\n";
        for (const BridgeOverride* o : bySection[section]) {
            std::string value = o->value;
            if (value.front() == '[') {  // YAML flow lists read better with a space after commas
                std::string spaced;
                for (char ch : value)
                    spaced += ch == ',' ? std::string(", ") : std::string(1, ch);
                value = spaced;
            }
            out += "  " + o->key.substr(section.size() + 1) + ": " + value + "\n";
        }
    }
    for (const BridgeOverride* o : scalars)
        out += o->key + ": " + o->value + "\n";
    return out;
}

std::vector<std::pair<std::string, std::string>> bridgeEnvironment(const RunConfig& c, const GeneratorTarget& t, bool slurm)
{
    std::vector<std::pair<std::string, std::string>> env = {
        {"NCCL_GRAPH_REGISTER", "0"},
        {"NCCL_NVLS_ENABLE", "0"},
        {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"},
        {"TORCH_NCCL_AVOID_RECORD_STREAMS", "1"},
        {"TORCH_NCCL_HIGH_PRIORITY", "1"},
    };
    const int ep = c.parallel.expertModelParallelSize;
    const bool graphs = c.cudaGraph.impl != "none";
    if (gb200Class(t)) {
        // Qwen3-VL GB200 perf settings; the launcher rejects EP > 72 (lint says so, too).
        env.insert(env.end(), {
            {"CUDA_DEVICE_MAX_CONNECTIONS", "32"},
            {"NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN", std::to_string(ep)},
            {"NVLINK_DOMAIN_SIZE", std::to_string(t.hardware.nvlinkDomainSize)},
            {"USE_MNNVL", "1"},
            {"NUM_OF_TOKENS_PER_CHUNK_COMBINE_API", "128"},
            {"NVTE_FWD_LAYERNORM_SM_MARGIN", "20"},
            {"NVTE_BWD_LAYERNORM_SM_MARGIN", "20"},
        });
        if (slurm) {
            env.push_back({"NCCL_NET_GDR_LEVEL", "PHB"});
            env.push_back({"NCCL_NET_GDR_C2C", "1"});
        }
    } else {
        // H100/B200/B300: one 8-GPU NVLink domain per node.
        if (t.overlapMoeExpertParallelComm && graphs)  // §6: EP overlap + CUDA graphs
            env.push_back({"CUDA_DEVICE_MAX_CONNECTIONS", "32"});
        env.push_back({"NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN", std::to_string(std::min(ep, t.hardware.nvlinkDomainSize))});
        env.push_back({"NVLINK_DOMAIN_SIZE", std::to_string(t.hardware.nvlinkDomainSize)});
        env.push_back({"USE_MNNVL", "0"});
    }
    return env;
}

std::string bridgePerfRecipe(const std::string& modelName)
{
    // Bridge's perf recipes (§5) for the two Qwen3-VL sizes and the text-only Qwen3 MoE models of
    // the published rows (§8; scripts/performance/configs/qwen/): the catalog names with '_'.
    for (const char* name : {"qwen3-vl-30b-a3b", "qwen3-vl-235b-a22b", "qwen3-30b-a3b", "qwen3-235b-a22b"})
        if (modelName == name) {
            std::string recipe = name;
            std::replace(recipe.begin(), recipe.end(), '-', '_');
            return recipe;
        }
    return {};
}

std::string bridgePerfCommand(const RunConfig& c, const GeneratorTarget& t, std::vector<std::string>& warnings)
{
    const ParallelConfig& p = c.parallel;
    std::vector<std::string> args = {"python", "scripts/performance/setup_experiment.py"};
    auto flag = [&](const char* name, const std::string& value) {
        args.push_back(name);
        args.push_back(shellQuote(value));
    };
    flag("--account", t.account.empty() ? "ACCOUNT" : t.account);
    flag("--partition", t.partition.empty() ? "PARTITION" : t.partition);
    if (t.account.empty() || t.partition.empty())
        warnings.push_back("perf launcher: replace ACCOUNT / PARTITION with your Slurm account and partition (--account, --partition)");
    static const std::vector<std::string> kPerfGpus = {"gb200", "gb300", "b200", "h100"};
    if (std::find(kPerfGpus.begin(), kPerfGpus.end(), t.hardware.name) == kPerfGpus.end())
        warnings.push_back("perf launcher: Bridge has Qwen3-VL perf recipes for gb200, gb300, b200 and h100 only; -g " +
                           t.hardware.name + " will not find one");
    flag("-g", t.hardware.name);
    flag("-c", "bf16");
    if (c.train.precision != "bf16")
        warnings.push_back("perf launcher: runs bf16 (-c bf16); the config says " + c.train.precision);
    // A text-only model (no vision tower) runs Bridge's LLM perf recipes: family qwen, domain llm.
    const bool textOnly = c.model.vision.numLayers <= 0;
    flag("-m", textOnly ? "qwen" : "qwen_vl");
    std::string recipe = bridgePerfRecipe(t.modelName);
    if (recipe.empty()) {
        warnings.push_back("perf launcher: Bridge has no perf recipe for model '" + t.modelName +
                           "' (only qwen3-vl-30b-a3b, qwen3-vl-235b-a22b, qwen3-30b-a3b and qwen3-235b-a22b); "
                           "replace MODEL_RECIPE");
        recipe = "MODEL_RECIPE";
    }
    flag("-mr", recipe);
    flag("-ng", std::to_string(t.worldSize()));
    flag("--domain", textOnly ? "llm" : "qwen3vl");
    flag("-tp", std::to_string(p.tensorModelParallelSize));
    flag("-pp", std::to_string(p.pipelineModelParallelSize));
    flag("-cp", std::to_string(p.contextParallelSize));
    if (p.virtualPipelineModelParallelSize > 1)
        flag("-vp", std::to_string(p.virtualPipelineModelParallelSize));
    flag("-ep", std::to_string(p.expertModelParallelSize));
    flag("-et", std::to_string(p.expertTensorParallelSize));
    flag("-mb", std::to_string(c.train.microBatchSize));
    flag("-gb", std::to_string(c.train.globalBatchSize));
    flag("-sl", std::to_string(c.train.seqLength));
    flag("--cuda_graph_impl", c.cudaGraph.impl);
    if (c.cudaGraph.impl != "none" && !c.cudaGraph.scope.empty())
        flag("--cuda_graph_scope", joinList(c.cudaGraph.scope, ","));
    if (p.moeTokenDispatcherType == "flex" && !p.moeFlexDispatcherBackend.empty())
        flag("--moe_flex_dispatcher_backend", p.moeFlexDispatcherBackend);  // absent = alltoall (§5)
    if (p.useMegatronFsdp)
        flag("--use_megatron_fsdp", "true");
    if (c.recompute.granularity == "full")
        flag("-rl", std::to_string(c.recompute.recomputeNumLayers));
    else if (c.recompute.granularity == "selective")
        flag("--recompute_modules", joinList(c.recompute.modules, ","));

    // What the flags cannot say goes as key=value overrides.
    std::vector<std::string> keys;
    if (p.moeTokenDispatcherType == "allgather")
        keys.push_back("model.moe_token_dispatcher_type");
    for (const char* k : {"model.sequence_parallel", "model.num_layers_in_first_pipeline_stage",
                          "model.num_layers_in_last_pipeline_stage", "model.freeze_language_model",
                          "model.freeze_vision_model", "model.freeze_vision_projection",
                          "model.moe_shared_expert_overlap", "ddp.data_parallel_sharding_strategy", "ddp.overlap_grad_reduce",
                          "ddp.grad_reduce_in_fp32", "checkpoint.ckpt_format", "comm_overlap.overlap_moe_expert_parallel_comm", "train.train_iters",
                          "optimizer.use_precision_aware_optimizer", "optimizer.main_grads_dtype",
                          "optimizer.main_params_dtype", "optimizer.exp_avg_dtype", "optimizer.exp_avg_sq_dtype",
                          "optimizer.use_distributed_optimizer", "ddp.use_distributed_optimizer"})
        keys.push_back(k);
    for (const BridgeOverride& o : bridgeOverrides(c, t))
        if (std::find(keys.begin(), keys.end(), o.key) != keys.end())
            args.push_back(shellQuote(o.key + "=" + o.value));

    // One flag and its value per line, so the command reads like the reference.
    std::string out = args[0] + " " + args[1];
    for (size_t i = 2; i < args.size(); ++i) {
        const bool value = i > 2 && args[i - 1].front() == '-' && args[i].front() != '-';
        out += value ? " " + args[i] : " \\\n  " + args[i];
    }
    return out + "\n";
}

std::string bridgeJobManifest(const GeneratorTarget& target)
{
    nlohmann::ordered_json j = {{"version", 1}, {"script", "bridge.sbatch"}, {"config", "overrides.yaml"}};
    if (!target.modelName.empty())
        j["model"] = target.modelName;
    if (!target.hardware.name.empty())
        j["hardware"] = target.hardware.name;
    j["gpus"] = target.worldSize();
    return j.dump(2) + "\n";
}

const std::vector<std::string>& generatorFormats()
{
    static const std::vector<std::string> formats = {"runtime", "megatron-bridge", "slurm", "ssh"};
    return formats;
}

namespace {

std::string envScript(const std::vector<std::pair<std::string, std::string>>& env, const std::string& header)
{
    std::string out = "# " + header + "\n# Source it: . ./env.sh\n";
    for (const auto& [name, value] : env)
        out += "export " + name + "=" + shellQuote(value) + "\n";
    return out;
}

}  // namespace

namespace {

// The planner's layouts name Megatron's CUDA graphs (transformer_engine over moe_router and
// moe_preprocess, megatron-bridge.md §6); moe-train runs its own ("local") over the router only
// (docs/runtime.md "CUDA graphs": the permutation's and attention's shapes change every
// micro-batch).
void cudaGraphsForMoeTrain(CudaGraphConfig& g, std::vector<std::string>& warnings)
{
    if (g.impl == "none")
        return;
    std::vector<std::string> kept, dropped;
    for (const auto& scope : g.scope)
        (scope == "moe_router" ? kept : dropped).push_back(scope);
    const std::string was = "cuda_graph " + g.impl + " " + listText(g.scope);
    if (g.impl == "full_iteration" || kept.empty()) {
        g.impl = "none";
        g.scope.clear();
        warnings.push_back(was + ": moe-train cannot capture that (it graphs the MoE router only); written without "
                                 "CUDA graphs. The step-time prediction assumed them.");
        return;
    }
    if (g.impl == "local" && dropped.empty())
        return;
    g.impl = "local";
    g.scope = kept;
    warnings.push_back(was + ": moe-train runs its own CUDA graphs over the router only; written as cuda_graph local " +
                       listText(kept) + (dropped.empty() ? "" : ", without " + listText(dropped)) +
                       " (docs/runtime.md \"CUDA graphs\"). The step-time prediction assumed Megatron's graphs.");
}

// The planner picks flex + HybridEP/DeepEP on GB200-class systems (the guide's reliable default
// there); those are faster kernels for the same exchange. moe-train dispatches by all-to-all only:
// the same tokens reach the same experts, so the layout and the losses stay; the speed does not.
void dispatcherForMoeTrain(ParallelConfig& p, std::vector<std::string>& warnings)
{
    if (p.moeTokenDispatcherType == "alltoall")
        return;
    const std::string was = "moe_token_dispatcher_type " + p.moeTokenDispatcherType +
                             (p.moeFlexDispatcherBackend.empty() ? "" : " (" + p.moeFlexDispatcherBackend + ")");
    p.moeTokenDispatcherType = "alltoall";
    p.moeFlexDispatcherBackend.clear();
    if (p.expertModelParallelSize > 1)
        warnings.push_back(was + ": moe-train dispatches tokens to the experts by all-to-all only; written as "
                                 "alltoall (the same tokens reach the same experts, so the losses do not change). "
                                 "The step-time prediction assumed " + was + ".");
}

// Virtual pipeline stages (interleaved 1F1B) cut the bubble. moe-train runs them on the CPU
// (Gloo) with equal model chunks, so they are kept there. On CUDA (its schedule orders messages
// per tag, and NCCL pairs them by order: runtime_checks.cpp) and with uneven first/last stages it
// runs plain 1F1B over the same stages instead: the same layers per rank and the same losses.
void pipelineForMoeTrain(const RunConfig& c, ParallelConfig& p, std::vector<std::string>& warnings)
{
    if (p.virtualPipelineModelParallelSize <= 1)
        return;
    std::string why;
    if (c.runtime.device == "cuda")
        why = "moe-train runs the interleaved schedule on the CPU (Gloo) only so far";
    else if (p.numLayersInFirstPipelineStage > 0 || p.numLayersInLastPipelineStage > 0)
        why = "moe-train does not combine virtual stages with uneven first/last pipeline stages";
    if (why.empty())
        return;  // moe-train runs interleaved 1F1B
    warnings.push_back("virtual_pipeline_model_parallel_size " + std::to_string(p.virtualPipelineModelParallelSize) + ": " +
                       why + "; it runs plain 1F1B over the " + std::to_string(p.pipelineModelParallelSize) +
                       " stages (no interleaving), written as 1 — same layers per rank and same losses, a larger "
                       "pipeline bubble. The step-time prediction assumed the interleaved schedule.");
    p.virtualPipelineModelParallelSize = 1;
}

}  // namespace

// The formats that start moe-train get what it can run, and say what changed, so a generated config
// is never one moe-train refuses for an implementation choice it does not have (CUDA graphs, the
// dispatcher's kernels, the interleaved schedule on CUDA). Megatron-Bridge keeps the layout as planned.
RunConfig configForMoeTrain(const RunConfig& config, std::vector<std::string>& warnings)
{
    RunConfig out = config;
    cudaGraphsForMoeTrain(out.cudaGraph, warnings);
    dispatcherForMoeTrain(out.parallel, warnings);
    pipelineForMoeTrain(out, out.parallel, warnings);
    return out;
}

Result<GeneratedBundle> generateFormat(const std::string& format, const RunConfig& config, const GeneratorTarget& target)
{
    if (target.nodes < 1 || target.gpusPerNode < 1)
        return makeError(ErrorCode::InvalidArgument, "nodes and GPUs per node must be at least 1", format);
    // The runtime, SSH and Slurm formats start moe-train, which runs context parallelism on the
    // CPU (Gloo) only (docs/parallel.md): a CUDA layout with CP cannot be rewritten without
    // changing DP (the world is TP × CP × DP × PP), so it is refused; Megatron-Bridge runs CP, so
    // its overrides are still written.
    if (config.parallel.contextParallelSize > 1 && config.runtime.device == "cuda" &&
        (format == "runtime" || format == "ssh" || format == "slurm"))
        return makeError(ErrorCode::InvalidArgument,
                         "parallel.context_parallel_size " + std::to_string(config.parallel.contextParallelSize) +
                             ": moe-train runs context parallelism on the CPU only, not on CUDA yet; pick a layout "
                             "with context_parallel_size 1, or generate --format megatron-bridge",
                         format);
    GeneratedBundle bundle;
    // What moe-train's formats change (its dispatcher, its graphs): said only where moe-train runs
    // — a Megatron-Bridge bundle keeps the layout as planned, so those notes would be false there.
    std::vector<std::string> trainerNotes;
    const RunConfig forTrainer = configForMoeTrain(config, trainerNotes);
    if (format != "megatron-bridge")
        bundle.warnings.insert(bundle.warnings.end(), trainerNotes.begin(), trainerNotes.end());
    if (format == "runtime") {
        bundle.files.push_back({"run.json", runConfigToJson(forTrainer) + "\n"});
    } else if (format == "megatron-bridge") {
        const auto overrides = bridgeOverrides(config, target);
        bundle.files.push_back({"overrides.yaml", bridgeYaml(overrides)});
        bundle.files.push_back({"overrides.dotlist", bridgeDotlist(overrides)});
        bundle.files.push_back({"env.sh", envScript(bridgeEnvironment(config, target, false),
                                                    "Environment Megatron-Bridge recipes set for " + target.hardware.name)});
        bundle.files.push_back({"env.slurm.sh", envScript(bridgeEnvironment(config, target, true),
                                                          "The same, plus the Slurm extras for " + target.hardware.name)});
        std::string perf = "#!/usr/bin/env bash\n# Megatron-Bridge perf launcher (run from a Megatron-Bridge checkout; add -d for a dry run\n"
                           "# that prints the sbatch script).\nset -euo pipefail\n";
        perf += bridgePerfCommand(config, target, bundle.warnings);
        bundle.files.push_back({"perf_launch.sh", perf, true});
        bundle.files.push_back({"bridge.sbatch", bridgeSlurmScript(config, target), true});
        bundle.files.push_back({"bridge_job.json", bridgeJobManifest(target)});
    } else if (format == "slurm") {
        auto bad = [](const std::string& v) {
            return !std::all_of(v.begin(), v.end(), [](char ch) {
                return std::isalnum(static_cast<unsigned char>(ch)) || std::string_view("._:,-").find(ch) != std::string_view::npos;
            });
        };
        for (const auto& [what, value] : {std::pair{"account", target.account}, {"partition", target.partition}, {"time", target.timeLimit}})
            if (bad(value))
                return makeError(ErrorCode::InvalidArgument,
                                 std::string(what) + " '" + value + "' has characters an #SBATCH line cannot carry; use letters, digits and . _ : , -",
                                 "slurm");
        bundle.files.push_back({"run.sbatch", slurmScript(forTrainer, target), true});
        bundle.files.push_back({"run.json", runConfigToJson(forTrainer) + "\n"});
    } else if (format == "ssh") {
        bundle.files.push_back({"launch_ssh.sh", sshLaunchScript(forTrainer, target), true});
        bundle.files.push_back({"run.json", runConfigToJson(forTrainer) + "\n"});
        if (target.hosts.empty())
            bundle.warnings.push_back("ssh: edit HOSTS in launch_ssh.sh (node0, node1, ... are placeholders), or pass --hosts");
    } else {
        return makeError(ErrorCode::InvalidArgument, "unknown format; use one of runtime, megatron-bridge, slurm, ssh", format);
    }
    return bundle;
}

}  // namespace wb::core::planner
