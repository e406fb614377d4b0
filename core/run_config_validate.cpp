// Consistency checks of a RunConfig: sizes that must divide, ranges that depend on other fields,
// and the framework rules of reference/megatron-bridge.md §3 and §6 that a single config can break.
// Each problem names the field, what is wrong, and the fix.
#include "core/run_config.h"

#include "core/text_file.h"
#include "core/text_format.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

namespace wb::core {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// Nearest multiples of `step` around `value`, as a hint ("8 or 12").
std::string nearestMultiples(int64_t value, int64_t step)
{
    const int64_t below = value / step * step;
    const int64_t above = below + step;
    return below > 0 ? str(below) + " or " + str(above) : str(above);
}

void checkModel(const ModelConfig& m, std::vector<ConfigProblem>& out)
{
    const VisionConfig& v = m.vision;
    const DecoderConfig& d = m.decoder;
    if (v.numLayers > 0 && v.hiddenSize % v.numAttentionHeads != 0)
        out.push_back({"model.vision.hidden_size",
                       str(v.hiddenSize) + " is not divisible by num_attention_heads " + str(v.numAttentionHeads),
                       "make hidden_size a multiple of num_attention_heads"});
    if (d.numAttentionHeads % d.numQueryGroups != 0)
        out.push_back({"model.decoder.num_query_groups",
                       "num_attention_heads " + str(d.numAttentionHeads) + " is not divisible by num_query_groups " +
                           str(d.numQueryGroups),
                       "use a num_query_groups that divides num_attention_heads"});
    if (d.kvChannels % 2 != 0)
        out.push_back({"model.decoder.kv_channels", str(d.kvChannels) + " is odd; rotary embeddings need an even head dim",
                       "use an even kv_channels (128 for Qwen3-VL)"});
    if (d.moeRouterTopk > d.numMoeExperts)
        out.push_back({"model.decoder.moe_router_topk",
                       str(d.moeRouterTopk) + " is larger than num_moe_experts " + str(d.numMoeExperts),
                       "route to at most num_moe_experts experts"});
    const int rotaryHalf = static_cast<int>(std::lround(d.kvChannels * d.rotaryPercent)) / 2;
    if (!d.mropeSection.empty()) {
        const int sum = std::accumulate(d.mropeSection.begin(), d.mropeSection.end(), 0);
        if (d.mropeSection.size() != 3 || sum != rotaryHalf)
            out.push_back({"model.decoder.mrope_section",
                           "must be three sizes [t, h, w] summing to the rotary dims / 2 = " + str(rotaryHalf) +
                               " (kv_channels " + str(d.kvChannels) + " × rotary_percent; got " +
                               str(static_cast<int64_t>(d.mropeSection.size())) + " sizes summing to " + str(sum) + ")",
                           "e.g. [24, 20, 20] for kv_channels 128, [11, 11, 10] for 256 × 0.25, or [] for 1-D RoPE"});
    }
    if (d.hybridAttention() && d.linearNumValueHeads % d.linearNumKeyHeads != 0)
        out.push_back({"model.decoder.linear_num_value_heads",
                       str(d.linearNumValueHeads) + " is not a multiple of linear_num_key_heads " + str(d.linearNumKeyHeads),
                       "gated DeltaNet shares each key head among value heads: use a multiple (32 and 16 for Qwen3.5)"});
    int previous = -1;
    for (int layer : v.deepstackLayers) {
        if (layer >= v.numLayers || layer <= previous) {
            out.push_back({"model.vision.deepstack_layers",
                           "layer " + str(layer) + " is not an increasing index below vision num_layers " + str(v.numLayers),
                           "list distinct vision layer indices in increasing order, each < num_layers"});
            break;
        }
        previous = layer;
    }
    if (static_cast<int>(v.deepstackLayers.size()) > d.numLayers)
        out.push_back({"model.vision.deepstack_layers",
                       str(static_cast<int64_t>(v.deepstackLayers.size())) + " deepstack features but only " +
                           str(d.numLayers) + " decoder layers to inject them into",
                       "list at most as many deepstack layers as the decoder has layers"});
    if (m.freezeVisionModel && m.freezeVisionProjection && m.freezeLanguageModel)
        out.push_back({"model.freeze_language_model", "every module is frozen, so nothing would train",
                       "unfreeze at least one of vision model, projection or language model"});
}

void checkTrainAndData(const RunConfig& c, std::vector<ConfigProblem>& out)
{
    const TrainConfig& t = c.train;
    const DataConfig& d = c.data;
    const VisionConfig& v = c.model.vision;
    if (t.globalBatchSize % t.microBatchSize != 0)
        out.push_back({"train.global_batch_size",
                       str(t.globalBatchSize) + " is not a multiple of micro_batch_size " + str(t.microBatchSize),
                       "set global_batch_size to " + nearestMultiples(t.globalBatchSize, t.microBatchSize)});
    if (t.minLr > t.lr)
        out.push_back({"train.min_lr", "min_lr is larger than lr", "set min_lr <= lr"});
    if (t.lrWarmupIters > t.trainIters)
        out.push_back({"train.lr_warmup_iters",
                       str(t.lrWarmupIters) + " warm-up steps exceed train_iters " + str(t.trainIters),
                       "use fewer warm-up steps than train_iters"});
    if (d.source == "real" && d.manifest.empty())
        out.push_back({"data.manifest", "real data needs a manifest (JSONL of {\"image\", \"caption\"})",
                       "set data.manifest to the sample set's manifest.jsonl, or use data.source \"mock\""});
    if (d.minPixels > d.maxPixels)
        out.push_back({"data.min_pixels", str(d.minPixels) + " is larger than max_pixels " + str(d.maxPixels),
                       "set min_pixels <= max_pixels"});
    const int64_t unit = int64_t(v.patchSize) * v.spatialMergeSize;  // pixels per side of one decoder token
    const bool images = d.imagesPerSample > 0 && (d.source == "real" || d.mockImageSize > 0);
    if (images && v.numLayers <= 0)
        out.push_back({"model.vision.num_layers",
                       std::string("0: a text-only model takes no images, but ") +
                           (d.source == "real" ? "data.source \"real\" gives it images" : "data.mock_image_size " + str(d.mockImageSize) + " gives it images"),
                       "set data.source \"mock\" and data.mock_image_size 0 (text only), or give the model vision layers"});
    if (images && d.maxPixels < unit * unit)
        out.push_back({"data.max_pixels", str(d.maxPixels) + " pixels cannot hold one " + str(unit) + "×" + str(unit) +
                                              " merged patch",
                       "raise max_pixels to at least " + str(unit * unit)});
    if (d.source == "mock" && d.mockImageSize % unit != 0)
        out.push_back({"data.mock_image_size", str(d.mockImageSize) + " is not a multiple of patch_size × spatial_merge_size = " + str(unit),
                       "use a multiple of " + str(unit) + " (or 0 for text-only mock data)"});
    // One sample must fit one sequence: its image tokens, caption and the bos/eos pair.
    int64_t imageTokens = 0;
    if (images && unit > 0) {
        const int64_t pixels = d.source == "mock" ? int64_t(d.mockImageSize) * d.mockImageSize : d.maxPixels;
        imageTokens = d.imagesPerSample * (pixels / (unit * unit));
    }
    const int64_t sampleTokens = imageTokens + d.captionMaxTokens + 2;
    if (sampleTokens > t.seqLength)
        out.push_back({"train.seq_length",
                       str(t.seqLength) + " cannot hold one sample of up to " + str(imageTokens) + " image tokens + " +
                           str(d.captionMaxTokens) + " caption tokens + 2",
                       "raise seq_length to at least " + str(sampleTokens) + ", or lower data.max_pixels / caption_max_tokens"});
}

void checkParallel(const RunConfig& c, std::vector<ConfigProblem>& out)
{
    const ParallelConfig& p = c.parallel;
    const DecoderConfig& d = c.model.decoder;
    const int tp = p.tensorModelParallelSize;
    const int pp = p.pipelineModelParallelSize;
    if (d.numMoeExperts % p.expertModelParallelSize != 0)
        out.push_back({"parallel.expert_model_parallel_size",
                       str(p.expertModelParallelSize) + " does not divide num_moe_experts " + str(d.numMoeExperts),
                       "use an expert_model_parallel_size that divides " + str(d.numMoeExperts)});
    if (d.numAttentionHeads % tp != 0 || d.numQueryGroups % tp != 0)
        out.push_back({"parallel.tensor_model_parallel_size",
                       str(tp) + " does not divide num_attention_heads " + str(d.numAttentionHeads) +
                           " and num_query_groups " + str(d.numQueryGroups),
                       "use a tensor_model_parallel_size that divides both (for Qwen3-VL: 1, 2 or 4)"});
    if (p.sequenceParallel && tp == 1)
        out.push_back({"parallel.sequence_parallel", "sequence parallelism needs tensor_model_parallel_size > 1",
                       "set sequence_parallel false, or raise tensor_model_parallel_size"});
    if (p.contextParallelSize > 1 && c.train.seqLength % (2 * p.contextParallelSize) != 0)
        out.push_back({"parallel.context_parallel_size",
                       "seq_length " + str(c.train.seqLength) + " is not divisible by 2 × context_parallel_size = " +
                           str(2 * p.contextParallelSize),
                       "choose seq_length divisible by " + str(2 * p.contextParallelSize)});
    const int first = p.numLayersInFirstPipelineStage;
    const int last = p.numLayersInLastPipelineStage;
    if ((first > 0 || last > 0) && pp == 1)
        out.push_back({"parallel.num_layers_in_first_pipeline_stage", "uneven first/last stages need pipeline_model_parallel_size > 1",
                       "set both to 0, or raise pipeline_model_parallel_size"});
    if (pp > 1) {
        const int middleStages = pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
        const int middleLayers = d.numLayers - first - last;
        if (middleLayers < 0 || (middleStages > 0 && middleLayers % middleStages != 0) ||
            (middleStages == 0 && middleLayers != 0))
            out.push_back({"parallel.pipeline_model_parallel_size",
                           str(d.numLayers) + " decoder layers do not split evenly over " + str(pp) + " stages (first " +
                               str(first) + ", last " + str(last) + ")",
                           "choose pipeline sizes so the remaining layers divide over the middle stages"});
        else if (p.virtualPipelineModelParallelSize > 1 && middleStages > 0 &&
                 (middleLayers / middleStages) % p.virtualPipelineModelParallelSize != 0)
            out.push_back({"parallel.virtual_pipeline_model_parallel_size",
                           str(p.virtualPipelineModelParallelSize) + " does not divide the " + str(middleLayers / middleStages) +
                               " layers per stage",
                           "use a virtual size that divides the layers per pipeline stage"});
    } else if (p.virtualPipelineModelParallelSize > 1) {
        out.push_back({"parallel.virtual_pipeline_model_parallel_size", "virtual pipeline stages need pipeline_model_parallel_size > 1",
                       "set it to 1, or raise pipeline_model_parallel_size"});
    }
    if (p.useMegatronFsdp == false && p.dataParallelShardingStrategy != "no_shard")
        out.push_back({"parallel.data_parallel_sharding_strategy",
                       "\"" + p.dataParallelShardingStrategy + "\" has no effect without use_megatron_fsdp",
                       "set use_megatron_fsdp true, or the strategy to \"no_shard\""});
    if (!p.moeFlexDispatcherBackend.empty() && p.moeTokenDispatcherType != "flex")
        out.push_back({"parallel.moe_flex_dispatcher_backend",
                       "a flex backend does nothing unless moe_token_dispatcher_type is \"flex\"",
                       "set moe_token_dispatcher_type \"flex\", or clear the backend"});
    if (p.moeTokenDispatcherType == "flex" && p.moeFlexDispatcherBackend.empty())
        out.push_back({"parallel.moe_flex_dispatcher_backend", "the flex dispatcher needs a backend",
                       "set moe_flex_dispatcher_backend to \"hybridep\" or \"deepep\""});
}

void checkRecomputeAndGraphs(const RunConfig& c, std::vector<ConfigProblem>& out)
{
    const RecomputeConfig& r = c.recompute;
    const CudaGraphConfig& g = c.cudaGraph;
    if (r.granularity == "selective" && r.modules.empty())
        out.push_back({"recompute.modules", "selective recompute needs at least one module",
                       "list modules, e.g. [\"core_attn\", \"moe_act\"]"});
    if (r.granularity != "selective" && !r.modules.empty())
        out.push_back({"recompute.modules", "modules are only used with granularity \"selective\"",
                       "set granularity \"selective\", or remove the modules"});
    if (r.granularity == "full" && r.recomputeNumLayers < 1)
        out.push_back({"recompute.recompute_num_layers", "full recompute needs recompute_num_layers >= 1",
                       "set recompute_num_layers (1 = every layer recomputed on its own)"});
    if (r.granularity == "full" && r.recomputeNumLayers > c.model.decoder.numLayers)
        out.push_back({"recompute.recompute_num_layers", str(r.recomputeNumLayers) + " exceeds the decoder's " +
                                                             str(c.model.decoder.numLayers) + " layers",
                       "use at most num_layers"});
    if (g.impl == "none" && !g.scope.empty())
        out.push_back({"cuda_graph.scope", "a scope without a CUDA-graph implementation does nothing",
                       "set cuda_graph.impl (\"local\" or \"transformer_engine\"), or clear the scope"});
    if (contains(g.scope, "mlp"))
        out.push_back({"cuda_graph.scope", "\"mlp\" scope captures dense MLPs only; every decoder layer here is MoE",
                       "use \"moe_router\" and \"moe_preprocess\" instead"});
    if (contains(g.scope, "moe") && contains(g.scope, "moe_router"))
        out.push_back({"cuda_graph.scope", "\"moe\" and \"moe_router\" are mutually exclusive", "keep one of them"});
    if (contains(g.scope, "moe_preprocess") && !contains(g.scope, "moe_router"))
        out.push_back({"cuda_graph.scope", "\"moe_preprocess\" requires \"moe_router\"", "add \"moe_router\" to the scope"});
    if (r.granularity == "full" && g.impl != "none" && g.impl != "full_iteration")
        out.push_back({"cuda_graph.impl", "full recompute with CUDA graphs requires impl \"full_iteration\"",
                       "use selective recompute, or impl \"full_iteration\", or no CUDA graphs"});
    if (g.impl != "none" && c.runtime.device != "cuda")
        out.push_back({"cuda_graph.impl", "CUDA graphs need runtime.device \"cuda\"", "set cuda_graph.impl \"none\" on CPU"});
}

}  // namespace

std::vector<ConfigProblem> validateRunConfig(const RunConfig& config)
{
    std::vector<ConfigProblem> out;
    checkModel(config.model, out);
    checkTrainAndData(config, out);
    checkParallel(config, out);
    checkRecomputeAndGraphs(config, out);
    return out;
}

int dataParallelSize(const RunConfig& config, int worldSize)
{
    const ParallelConfig& p = config.parallel;
    const int modelParallel = p.tensorModelParallelSize * p.pipelineModelParallelSize * p.contextParallelSize;
    if (worldSize <= 0 || modelParallel <= 0 || worldSize % modelParallel != 0)
        return 0;
    return worldSize / modelParallel;
}

std::vector<ConfigProblem> validateLayout(const RunConfig& config, int worldSize)
{
    std::vector<ConfigProblem> out;
    const ParallelConfig& p = config.parallel;
    const int dp = dataParallelSize(config, worldSize);
    const int modelParallel = p.tensorModelParallelSize * p.pipelineModelParallelSize * p.contextParallelSize;
    if (dp == 0) {
        out.push_back({"parallel", "world size " + str(worldSize) + " is not a multiple of TP × PP × CP = " + str(modelParallel),
                       "use a multiple of " + str(modelParallel) + " GPUs, or change the parallel sizes"});
        return out;
    }
    const int expertGroup = p.pipelineModelParallelSize * p.expertModelParallelSize * p.expertTensorParallelSize;
    if (worldSize % expertGroup != 0)
        out.push_back({"parallel.expert_model_parallel_size",
                       "world size " + str(worldSize) + " is not a multiple of PP × EP × ETP = " + str(expertGroup),
                       "choose EP × ETP so that PP × EP × ETP divides the world size"});
    const int64_t perStep = int64_t(config.train.microBatchSize) * dp;
    if (config.train.globalBatchSize % perStep != 0)
        out.push_back({"train.global_batch_size",
                       str(config.train.globalBatchSize) + " is not a multiple of micro_batch_size × data-parallel size = " +
                           str(config.train.microBatchSize) + " × " + str(dp),
                       "set global_batch_size to " + nearestMultiples(config.train.globalBatchSize, perStep)});
    return out;
}

Result<RunConfig> loadRunConfig(const std::string& path)
{
    auto text = readTextFile(path, "config file");
    if (!text)
        return text.error();
    RunConfigParse parsed = parseRunConfig(*text);
    if (!parsed.ok())
        return makeError(ErrorCode::InvalidArgument,
                         "the config has " + str(static_cast<int64_t>(parsed.problems.size())) + " problem(s):\n" +
                             formatProblems(parsed.problems),
                         path);
    std::string& manifest = parsed.config.data.manifest;
    if (!manifest.empty()) {
        namespace fs = std::filesystem;
        fs::path m(manifest);
        if (manifest.rfind("~/", 0) == 0 && std::getenv("HOME"))
            m = fs::path(std::getenv("HOME")) / manifest.substr(2);
        else if (m.is_relative())
            m = fs::absolute(fs::path(path)).parent_path() / m;
        manifest = m.lexically_normal().string();
    }
    return std::move(parsed.config);
}

// The decoder moe-train implements: GQA softmax attention with full RoPE in every layer and
// routed experts only.
std::vector<ConfigProblem> moeTrainModelProblems(const DecoderConfig& d)
{
    const std::string fix = "remove it for moe-train; plan and generate this model for Megatron-Bridge (--for megatron-bridge, "
                            "generate --format megatron-bridge)";
    std::vector<ConfigProblem> out;
    if (d.hybridAttention())
        out.push_back({"model.decoder.linear_attention_freq", "gated DeltaNet (linear attention) layers are not implemented in moe-train", fix});
    if (d.attentionOutputGate)
        out.push_back({"model.decoder.attention_output_gate", "the gated attention output is not implemented in moe-train", fix});
    if (d.moeSharedExpertFfnHiddenSize > 0)
        out.push_back({"model.decoder.moe_shared_expert_intermediate_size", "shared experts are not implemented in moe-train", fix});
    if (d.mtpNumLayers > 0)
        out.push_back({"model.decoder.mtp_num_layers", "multi-token prediction is not implemented in moe-train", fix});
    if (d.rotaryPercent != 1.0)
        out.push_back({"model.decoder.rotary_percent", "moe-train rotates the whole head dim (partial RoPE is not implemented)", fix});
    return out;
}

}  // namespace wb::core
