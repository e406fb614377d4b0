// Runtime-specific config checks (see runtime_checks.h).
#include "runtime/train/runtime_checks.h"

#include "runtime/data/image_io.h"
#include "runtime/data/manifest.h"
#include "runtime/data/tokenizer.h"

#include "runtime/model/cuda/cuda_graph.h"
#include "runtime/model/torch_compat.h"
#include "runtime/parallel/process_group.h"
#include "runtime/train/recompute_runner.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

namespace wb::rt {
namespace {

struct ManifestImageSample {
    int64_t tried = 0;
    int64_t loaded = 0;
    std::string firstFailure;
};

// Decodes up to kSampledImages images spread evenly over the manifest, first to last (caption-only lines are
// text samples and need none): a set whose images are all missing or corrupt is refused here,
// at --validate and before a run starts, rather than at step 0 (issue 20 item 13). A bounded
// sample keeps the check at milliseconds for a manifest of millions of lines; a partly broken set
// passes (the loader skips and counts what does not load).
constexpr int64_t kSampledImages = 8;

ManifestImageSample sampleManifestImages(const std::vector<ManifestEntry>& entries)
{
    std::vector<const ManifestEntry*> withImage;
    for (const ManifestEntry& e : entries)
        if (!e.imagePath.empty())
            withImage.push_back(&e);
    ManifestImageSample sample;
    const int64_t n = static_cast<int64_t>(withImage.size());
    const int64_t take = std::min(n, kSampledImages);
    for (int64_t i = 0; i < take; ++i) {
        const int64_t at = take == 1 ? 0 : i * (n - 1) / (take - 1);  // the first and the last included
        const ManifestEntry& e = *withImage[static_cast<size_t>(at)];
        ++sample.tried;
        auto image = decodeImage(e.imagePath);
        if (image)
            ++sample.loaded;
        else if (sample.firstFailure.empty())
            sample.firstFailure = image.error().toString();
    }
    return sample;
}

}  // namespace

int worldSizeFromEnvironment()
{
    const char* world = std::getenv("WORLD_SIZE");
    return world && *world ? std::max(1, std::atoi(world)) : 1;
}

bool cudaUsable()
{
#if WB_WITH_CUDA
    return torch::cuda::is_available();
#else
    return false;
#endif
}

// Tensor parallelism (runtime/parallel/tensor_parallel.h): what the slicing needs.
void tensorParallelProblems(const core::RunConfig& c, std::vector<core::ConfigProblem>& out)
{
    const auto s = [](int64_t v) { return std::to_string(v); };
    const auto& p = c.parallel;
    const int tp = p.tensorModelParallelSize, etp = p.expertTensorParallelSize;
    if (etp > 1 && etp != tp)
        out.push_back({"parallel.expert_tensor_parallel_size", s(etp) + ": moe-train runs ETP 1 (experts whole on each TP rank) or ETP = TP (" + s(tp) + ")",
                       "set expert_tensor_parallel_size 1 or " + s(tp)});
    if (tp <= 1)
        return;
    const auto& d = c.model.decoder;
    const auto& v = c.model.vision;
    // Decoder heads and KV groups: core's validateRunConfig checks them (Megatron's rule).
    if (v.numAttentionHeads % tp != 0 || v.ffnHiddenSize % tp != 0)
        out.push_back({"parallel.tensor_model_parallel_size", s(tp) + " does not divide the vision encoder's " + s(v.numAttentionHeads) +
                                                                 " heads and " + s(v.ffnHiddenSize) + " MLP width",
                       "choose a TP that divides model.vision.num_attention_heads and ffn_hidden_size"});
    if (d.vocabSize % tp != 0)
        out.push_back({"model.decoder.vocab_size", s(d.vocabSize) + " does not split over tensor_model_parallel_size " + s(tp) +
                                                      " (the embedding and output rows are split over TP)",
                       "pad vocab_size to a multiple of " + s(tp)});
    if (etp == tp && d.moeFfnHiddenSize % tp != 0)
        out.push_back({"parallel.expert_tensor_parallel_size", s(etp) + " does not divide the experts' " + s(d.moeFfnHiddenSize) + " FFN width",
                       "choose an ETP that divides model.decoder.moe_ffn_hidden_size, or ETP 1"});
    if (p.sequenceParallel && c.train.seqLength % tp != 0)
        out.push_back({"train.seq_length", s(c.train.seqLength) + " tokens do not split over tensor_model_parallel_size " + s(tp) +
                                               " (sequence parallelism holds seq_length / TP tokens per rank)",
                       "make seq_length a multiple of " + s(tp) + ", or set sequence_parallel false"});
    // FSDP × TP runs (each TP slice sharded over its DP group, docs/parallel.md); TP × PP × FSDP
    // does not: pipelineProblems' FSDP problem names it.
}

// CUDA graphs (runtime/model/router_graphs.h): impl "local" captures the router; the other scopes
// have shapes or host reads that change every micro-batch (docs/runtime.md "CUDA graphs").
void cudaGraphProblems(const core::RunConfig& c, std::vector<core::ConfigProblem>& out)
{
    const auto& g = c.cudaGraph;
    if (g.impl == "none")
        return;
    if (g.impl != "local") {
        out.push_back({"cuda_graph.impl", "\"" + g.impl + "\" is not available in moe-train: " +
                                              (g.impl == "transformer_engine"
                                                   ? std::string("it has no Transformer Engine; its own graphs are impl \"local\"")
                                                   : std::string("a whole-iteration graph needs fixed shapes, and moe-train's token "
                                                                 "count changes every micro-batch (padding is removed)")),
                       "set cuda_graph.impl \"local\" with scope [\"moe_router\"], or \"none\""});
        return;
    }
    if (!cuda::cudaGraphsAvailable())
        out.push_back({"cuda_graph.impl", "this moe-train was built without CUDA graphs (WB_WITH_CUDA=OFF, or LibTorch < 2.1)",
                       "set cuda_graph.impl \"none\", or build moe-train with CUDA on a GPU node"});
    if (g.scope.empty())
        out.push_back({"cuda_graph.scope", "impl \"local\" with no scope captures nothing in moe-train (it has no whole-layer graphs)",
                       "set scope [\"moe_router\"]"});
    for (const std::string& part : g.scope) {
        if (part == "attn")
            out.push_back({"cuda_graph.scope", "\"attn\" cannot be captured: variable-length flash attention takes cu_seqlens and "
                                               "max_seqlen that change every micro-batch (one segment per packed sample, "
                                               "read on the host), and a graph fixes them",
                           "remove \"attn\" from the scope (keep \"moe_router\")"});
        else if (part == "moe_preprocess")
            out.push_back({"cuda_graph.scope", "\"moe_preprocess\" is not captured by moe-train yet: the permutation's T·K "
                                               "rows change every micro-batch, and padding them to a bucket needs an empty "
                                               "sentinel expert group the expert GEMMs skip (not built); under expert "
                                               "parallelism the counts exchanged are data-dependent",
                           "remove \"moe_preprocess\" from the scope (keep \"moe_router\")"});
        else if (part == "moe")
            out.push_back({"cuda_graph.scope", "\"moe\" (the whole MoE block) cannot be captured: the experts' group sizes are "
                                               "data-dependent",
                           "use scope [\"moe_router\"]"});
    }
}

// Virtual pipeline stages (interleaved 1F1B, pipeline_schedule.h) with `micro` micro-batches per
// step and data-parallel rank. core's validateRunConfig checks that the layers split into equal
// chunks and that PP > 1.
namespace {
void virtualPipelineProblems(const core::RunConfig& c, int micro, int dp, std::vector<core::ConfigProblem>& out)
{
    const auto s = [](int64_t v) { return std::to_string(v); };
    const auto& p = c.parallel;
    const int vpp = p.virtualPipelineModelParallelSize, pp = p.pipelineModelParallelSize;
    if (vpp <= 1)
        return;
    if (p.numLayersInFirstPipelineStage > 0 || p.numLayersInLastPipelineStage > 0)
        out.push_back({"parallel.num_layers_in_first_pipeline_stage",
                       "uneven first/last stages (num_layers_in_first_pipeline_stage " + s(p.numLayersInFirstPipelineStage) +
                           ", num_layers_in_last_pipeline_stage " + s(p.numLayersInLastPipelineStage) +
                           ") are not supported together with virtual_pipeline_model_parallel_size " + s(vpp) + " by moe-train",
                       "set both to 0 (equal model chunks), or virtual_pipeline_model_parallel_size 1"});
    // Megatron's rule for its interleaved schedule: the micro-batches go in groups of PP per chunk.
    if (micro >= pp && micro % pp != 0)
        out.push_back({"train.global_batch_size",
                       "the interleaved schedule (virtual_pipeline_model_parallel_size " + s(vpp) +
                           ") needs the micro-batches per step and data-parallel rank to be a multiple of "
                           "pipeline_model_parallel_size " + s(pp) + "; global_batch_size " + s(c.train.globalBatchSize) +
                           " / (micro_batch_size " + s(c.train.microBatchSize) + " × DP " + s(dp) +
                           ") gives " + s(micro),
                       "make global_batch_size / (micro_batch_size × DP) a multiple of " + s(pp) +
                           ", or set virtual_pipeline_model_parallel_size 1"});
    // NCCL pairs a send with the peer's receive by order, not by tag; the schedule's messages
    // are ordered per tag only (pipeline_schedule.h).
    if (c.runtime.device == "cuda")
        out.push_back({"parallel.virtual_pipeline_model_parallel_size",
                       s(vpp) + ": moe-train runs the interleaved schedule on the CPU (Gloo) only; on CUDA it would need "
                                "Megatron's batched send/recv rounds, which it does not have yet",
                       "set it to 1 on CUDA (plain 1F1B: same layers per rank and losses, a larger bubble)"});
}
}  // namespace

// Context parallelism (runtime/parallel/context_parallel.h): core checks seq_length % (2·CP).
namespace {
void contextParallelProblems(const core::RunConfig& c, std::vector<core::ConfigProblem>& out)
{
    const auto s = [](int64_t v) { return std::to_string(v); };
    const auto& p = c.parallel;
    const int cp = p.contextParallelSize, tp = p.tensorModelParallelSize;
    if (cp <= 1)
        return;
    // The flash varlen core would need each local query chunk's causal mask aligned bottom-right
    // against the gathered keys per packed sample; only the dense core has the CP path.
    if (c.runtime.device == "cuda")
        out.push_back({"parallel.context_parallel_size",
                       s(cp) + ": moe-train runs context parallelism on the CPU (Gloo) only; on CUDA its varlen flash "
                               "attention has no context-parallel path yet",
                       "set context_parallel_size 1 on CUDA (or generate --format megatron-bridge, which runs CP)"});
    if (p.pipelineModelParallelSize > 1)
        out.push_back({"parallel.context_parallel_size",
                       s(cp) + " together with pipeline_model_parallel_size " + s(p.pipelineModelParallelSize) +
                           " is not supported by moe-train yet",
                       "set context_parallel_size 1 or pipeline_model_parallel_size 1 (CP runs with TP, EP and DP)"});
    if (p.useMegatronFsdp && p.dataParallelShardingStrategy != "no_shard")
        out.push_back({"parallel.use_megatron_fsdp",
                       "FSDP (" + p.dataParallelShardingStrategy + ") together with context_parallel_size " + s(cp) +
                           " is not supported by moe-train yet",
                       "set use_megatron_fsdp false (or data_parallel_sharding_strategy \"no_shard\"), or context_parallel_size 1"});
    // Sequence parallelism splits each CP rank's seq_length / CP tokens per row over TP.
    if (tp > 1 && p.sequenceParallel && c.train.seqLength % (2 * cp) == 0 && (c.train.seqLength / cp) % tp != 0)
        out.push_back({"train.seq_length",
                       s(c.train.seqLength) + " tokens give each of context_parallel_size " + s(cp) + " ranks " +
                           s(c.train.seqLength / cp) + " per row, which do not split over tensor_model_parallel_size " + s(tp) +
                           " (sequence parallelism)",
                       "make seq_length a multiple of 2 × CP × TP = " + s(2 * cp * tp) + ", or set sequence_parallel false"});
}
}  // namespace

std::vector<core::ConfigProblem> runtimeProblems(const core::RunConfig& c, int worldSize)
{
    std::vector<core::ConfigProblem> out;
    const auto s = [](int64_t v) { return std::to_string(v); };
    if (c.model.decoder.vocabSize < kMinVocabSize)
        out.push_back({"model.decoder.vocab_size",
                       s(c.model.decoder.vocabSize) + " is too small for moe-train's byte tokenizer (256 bytes + pad, bos, eos, image = 260 ids)",
                       "set vocab_size >= 260"});
    const auto& p = c.parallel;
    contextParallelProblems(c, out);
    for (core::ConfigProblem& p : core::moeTrainModelProblems(c.model.decoder))
        out.push_back(std::move(p));
    tensorParallelProblems(c, out);
    // Data, tensor, expert, FSDP and pipeline parallel run (runtime/parallel), TP × PP × DP (× EP)
    // together, FSDP with TP and/or EP, virtual pipeline stages and CP (× TP × EP × DP) on the CPU;
    // CP with PP or FSDP is rejected above, FSDP with PP below.
    const int ep = p.expertModelParallelSize;
    const int pp = p.pipelineModelParallelSize;
    if (ep > 1 && worldSize % (ep * pp) != 0)
        out.push_back({"parallel.expert_model_parallel_size", s(ep) + " does not divide the " + s(worldSize) + " ranks",
                       "use an expert_model_parallel_size that divides the number of ranks"});
    if (ep > 1 && p.moeTokenDispatcherType != "alltoall")
        out.push_back({"parallel.moe_token_dispatcher_type", "moe-train dispatches experts by all-to-all only, not \"" +
                                                                 p.moeTokenDispatcherType + "\"",
                       "set moe_token_dispatcher_type \"alltoall\""});
    if (pp > 1) {  // pipeline parallel (runtime/parallel/pipeline*.h)
        const bool fsdp = p.useMegatronFsdp && p.dataParallelShardingStrategy != "no_shard";
        if (fsdp)
            out.push_back({"parallel.use_megatron_fsdp",
                           std::string("FSDP together with pipeline parallelism") +
                               (p.tensorModelParallelSize > 1 ? " (TP × PP × FSDP)" : "") + " is not supported by moe-train yet",
                           "use pipeline_model_parallel_size 1 with FSDP (FSDP × TP runs), or plain data parallelism (no_shard) with PP"});
        // DP = world / (TP · PP): the TP ranks of a stage share their micro-batches.
        const int dp = core::dataParallelSize(c, worldSize);
        const int micro = c.train.microBatchSize > 0 && dp > 0 ? c.train.globalBatchSize / (c.train.microBatchSize * dp) : 0;
        if (dp > 0 && micro < pp)
            out.push_back({"train.global_batch_size",
                           "1F1B needs at least pipeline_model_parallel_size = " + s(pp) + " micro-batches per step and data-parallel rank; GBS " +
                               s(c.train.globalBatchSize) + " / (MBS " + s(c.train.microBatchSize) + " × DP " + s(dp) + ") = " + s(micro),
                           "raise global_batch_size to at least " + s(int64_t{pp} * c.train.microBatchSize * dp)});
        virtualPipelineProblems(c, micro, dp, out);
    }
    const torch::Device device(c.runtime.device == "cuda" ? torch::kCUDA : torch::kCPU);
    if (worldSize > 1 && !multiRankSupported(device))
        out.push_back({"parallel", "WORLD_SIZE=" + s(worldSize) + ": this moe-train was built without a c10d backend for " +
                                       c.runtime.device + " (Gloo headers for CPU, NCCL for CUDA)",
                       "run a single process, or rebuild with WB_WITH_C10D=ON where LibTorch's c10d and Gloo/NCCL headers exist"});
    // Recompute (recompute_runner.h): core checks the names and counts; here only the modules
    // this architecture has no counterpart for (no MLA attention, no shared experts).
    if (c.recompute.granularity == "selective")
        for (const std::string& m : c.recompute.modules)
            if (!recomputeModuleSupported(m))
                out.push_back({"recompute.modules", "\"" + m + "\" names a part this model does not have (no MLA, no shared experts)",
                               "use core_attn, moe_act, layernorm, mlp (the vision MLP) or moe"});
    cudaGraphProblems(c, out);
    if (c.runtime.device == "cuda" && !cudaUsable())
        out.push_back({"runtime.device",
#if WB_WITH_CUDA
                       "CUDA is not available on this machine (no visible GPU)",
#else
                       "this moe-train was built without CUDA (WB_WITH_CUDA=OFF)",
#endif
                       "set runtime.device \"cpu\" or build/run moe-train with CUDA on a GPU node"});
    // bf16 = CUDA autocast (fp32 master weights); the CPU has no fast bf16 matmul in these builds.
    if (c.train.precision == "bf16" && c.runtime.device != "cuda")
        out.push_back({"train.precision", "bf16 training is only supported on CUDA devices, not on the CPU",
                       "set precision \"fp32\" or runtime.device \"cuda\""});
#if WB_WITH_CUDA && !WB_TORCH_AT_LEAST(2, 4)
    if (c.train.precision == "bf16" && c.runtime.device == "cuda")
        out.push_back({"train.precision", "bf16 needs LibTorch >= 2.4 (per-device autocast API); this is " TORCH_VERSION,
                       "build moe-train against a newer LibTorch or set precision \"fp32\""});
#endif
    if (c.data.source == "real" && !c.data.manifest.empty()) {
        std::error_code ec;
        if (std::filesystem::is_directory(c.data.manifest, ec))
            out.push_back({"data.manifest", "the manifest '" + c.data.manifest + "' is a folder, not a manifest file",
                           "point data.manifest at the manifest.jsonl inside it (moe-sample-set writes DIR/manifest.jsonl)"});
        else if (!std::filesystem::exists(c.data.manifest, ec))
            out.push_back({"data.manifest", "the manifest '" + c.data.manifest + "' does not exist on this machine",
                           "build a sample set (moe-sample-set --from /usr/share/openclipart/png --out DIR) and point "
                           "data.manifest at DIR/manifest.jsonl, or set data.source \"mock\""});
        else if (!std::filesystem::is_regular_file(c.data.manifest, ec))
            out.push_back({"data.manifest", "the manifest '" + c.data.manifest + "' is not a regular file (a device, FIFO or socket)",
                           "point data.manifest at a manifest.jsonl file"});
        else if (auto entries = loadManifest(c.data.manifest); !entries)
            // Its lines, here rather than at step 0 (issue 20 item 13: a bad manifest passed --validate).
            out.push_back({"data.manifest", entries.error().message + " ('" + c.data.manifest + "')",
                           "fix that line of the manifest: one JSON object per line with \"image\" and \"caption\""});
        else if (auto sample = sampleManifestImages(*entries); sample.tried > 0 && sample.loaded == 0)
            out.push_back({"data.manifest",
                           "none of " + s(sample.tried) + " images sampled evenly from the manifest's " +
                               s(int64_t(entries->size())) + " lines loads ('" + c.data.manifest + "'; first: " +
                               sample.firstFailure + ")",
                           "check the image paths (relative to the manifest's folder) and the files; build a fresh "
                           "set with moe-sample-set, or set data.source \"mock\""});
    }
    const bool images = c.data.source == "real" || c.data.mockImageSize > 0;
    if (images && c.data.imagesPerSample != 1)
        out.push_back({"data.images_per_sample", s(c.data.imagesPerSample) + " images per sample: moe-train reads one image per manifest line",
                       "set images_per_sample 1"});
    const auto& v = c.model.vision;
    if (v.numAttentionHeads > 0 && v.hiddenSize % v.numAttentionHeads == 0 && (v.hiddenSize / v.numAttentionHeads) % 4 != 0)
        out.push_back({"model.vision.num_attention_heads", "vision head dim " + s(v.hiddenSize / v.numAttentionHeads) +
                                                              " is not a multiple of 4 (2-D rotary embeddings)",
                       "choose hidden_size / num_attention_heads divisible by 4"});
    if (v.inChannels != 3)
        out.push_back({"model.vision.in_channels", "moe-train decodes RGB images (3 channels)", "set in_channels 3"});
    const int64_t unit = int64_t{v.patchSize} * v.spatialMergeSize;
    if (images && unit > 0 && c.data.maxPixels / (unit * unit) + 2 > c.train.seqLength)
        out.push_back({"train.seq_length", "an image of max_pixels takes up to " + s(c.data.maxPixels / (unit * unit)) +
                                               " tokens, leaving no room for its caption in " + s(c.train.seqLength),
                       "raise seq_length or lower data.max_pixels"});
    return out;
}

std::vector<core::ConfigProblem> allProblems(const core::RunConfig& config, int worldSize)
{
    std::vector<core::ConfigProblem> all = core::validateRunConfig(config);
    for (auto& p : core::validateLayout(config, worldSize))
        all.push_back(std::move(p));
    for (auto& p : runtimeProblems(config, worldSize))
        all.push_back(std::move(p));
    std::set<std::string> seen;
    std::vector<core::ConfigProblem> unique;
    for (auto& p : all)
        if (seen.insert(p.path + "\n" + p.message).second)
            unique.push_back(std::move(p));
    return unique;
}

}  // namespace wb::rt
