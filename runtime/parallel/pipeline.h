// Pipeline parallelism (PP), applied from outside the model: the decoder's layers are split over
// PP stages; stage 0 also holds the vision encoder, the projectors and the token embedding, the
// last stage the final norm, the output layer and the loss. A rank keeps only its stage's
// parameters (the others are freed: no memory, no gradients, no optimizer state) and runs only
// its part through VlmModelImpl's embed / decoderLayers / decoderHead. Activations travel between
// neighbouring stages with send/recv (pipeline_schedule.h runs 1F1B over the micro-batches).
//
// Rank layout (Megatron-Core's RankGenerator order "tp-cp-ep-dp-pp" with CP = 1: TP fastest,
// then DP, PP last): with S = world / PP ranks per stage, rank r is on stage r / S; the S ranks
// of one stage form its group, inside which TP, EP and DP are laid out exactly as without PP
// (tensor_parallel.h, expert_parallel.h): rank r = stage·S + dp·TP + tp. Rank r's pipeline
// group is {r mod S + k·S}: one rank per stage with the same (tp, dp), group rank = stage, so
// activations go from (tp, dp) of stage s to (tp, dp) of stage s + 1.
//
// Layer split (Megatron's num_layers_in_first/last_pipeline_stage): an uneven first and/or last
// stage takes the given number of layers; the remaining layers split evenly over the others.
//
// Virtual stages (Megatron's virtual_pipeline_model_parallel_size v > 1, the interleaved
// schedule): the L layers split into P·v model chunks of L / (P·v) layers in model order, and
// stage s holds chunks s, s + P, s + 2P, … (its model chunk c is global chunk c·P + s). Stage 0's
// chunk 0 also runs the vision encoder, projectors and embedding, stage P − 1's chunk v − 1 the
// final norm, output layer and loss. Activations of chunk c go from stage s to stage s + 1 and
// from stage P − 1 to chunk c + 1 of stage 0 (gradients the reverse way). Uneven first/last
// stages are not combined with v > 1 (refused naming the fields).
// Training thread only.
#pragma once

#include "core/run_config.h"
#include "runtime/parallel/process_group.h"

#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace wb::rt {

class VlmModelImpl;

/// [begin, end) decoder layers per stage for `numLayers` layers over `stages` stages; `first` /
/// `last` = layers of the first / last stage (0 = even split). Throws std::invalid_argument
/// naming the fields when the numbers do not add up.
std::vector<std::pair<int, int>> pipelineStageLayers(int numLayers, int stages, int first, int last);

/// [begin, end) decoder layers of each of the `stages`·`chunks` model chunks, in model order
/// (stage s's chunk c is entry c·stages + s). `chunks` 1 is pipelineStageLayers. Throws
/// std::invalid_argument naming the fields when the layers do not split into equal chunks or
/// `first` / `last` are set together with `chunks` > 1.
std::vector<std::pair<int, int>> pipelineChunkLayers(int numLayers, int stages, int chunks, int first, int last);

/// For the meta line's layout: "pp_layers:1,3" (decoder layers per stage), with virtual stages
/// "vpp2 pp_layers:1,1,1,1" (layers per model chunk, in model order); empty for PP 1 or a split
/// that does not add up.
std::string pipelineLayerSplit(const core::RunConfig& config);

/// Shape and dtype of one tensor of a message between stages.
struct TensorSpec {
    std::vector<int64_t> shape;
    torch::ScalarType dtype = torch::kFloat32;
};

class Pipeline {
public:
    /// Creates the stage (data-parallel) and pipeline groups from `world` (every rank must call
    /// it; a collective). Throws std::invalid_argument for a layout it cannot run, CommError
    /// when a group cannot be formed.
    Pipeline(const core::RunConfig& config, ProcessGroup& world);

    int stage() const { return m_stage; }
    int stages() const { return m_stages; }
    /// Model chunks per stage (virtual_pipeline_model_parallel_size; 1 = plain 1F1B).
    int chunks() const { return m_chunks; }
    bool isFirst() const { return m_stage == 0; }
    bool isLast() const { return m_stage == m_stages - 1; }
    /// Chunk `chunk` of this stage runs the vision side (stage 0's chunk 0) / the head (the last
    /// stage's last chunk).
    bool isFirstChunk(int chunk) const { return isFirst() && chunk == 0; }
    bool isLastChunk(int chunk) const { return isLast() && chunk == m_chunks - 1; }
    /// Decoder layers [layerBegin, layerEnd) of this stage's model chunk `chunk`.
    int layerBegin(int chunk = 0) const { return m_layers[chunkIndex(chunk)].first; }
    int layerEnd(int chunk = 0) const { return m_layers[chunkIndex(chunk)].second; }
    /// The ranks of this stage (TP, DP and EP are made inside it).
    ProcessGroup& dataGroup() { return *m_dataGroup; }
    /// One rank per stage; group rank = stage.
    ProcessGroup& pipelineGroup() { return *m_pipeGroup; }

    /// Frees every parameter this stage does not own (storage replaced by an empty tensor,
    /// requires_grad off: no optimizer state, no gradient, skipped by the broadcast and by
    /// expert slicing). Call after construction and freezing, before the model moves to a device
    /// and before ParallelTraining::attach. Throws std::logic_error for a parameter it cannot
    /// place (a model part this stage split does not know).
    void keepOwnStage(VlmModelImpl& model) const;

    /// "pp2 stage 0: decoder layers [0, 1) + vision encoder, projectors, embedding; parameters … MiB"
    std::string describe(const VlmModelImpl& model) const;

    /// sqrt(Σ over stages of norm²): the global gradient norm from each stage's (device scalar).
    torch::Tensor combineGradNorm(const torch::Tensor& stageNorm);

    /// Sends `tensors` to stage `peerStage` (tag: forward or backward) and receives tensors of
    /// `recvSpecs` from it; sends and receives are posted together, even stages sending first and
    /// odd stages receiving first, so NCCL's kernels never wait on each other. Either side may be
    /// empty. Throws CommError.
    std::vector<torch::Tensor> exchange(int peerStage, const std::vector<torch::Tensor>& tensors,
                                        const std::vector<TensorSpec>& recvSpecs, int sendTag, int recvTag,
                                        torch::Device device);

    /// Posts sends of `tensors` to stage `peerStage` without waiting (the interleaved schedule:
    /// Gloo pairs a send with the peer's receive of the same tag in order). waitSends() ends them.
    void postSends(int peerStage, const std::vector<torch::Tensor>& tensors, int tag);
    /// Waits for every posted send (their copies are freed). Throws CommError.
    void waitSends();
    /// Receives tensors of `specs` from stage `peerStage`, blocking. Throws CommError.
    std::vector<torch::Tensor> receive(int peerStage, const std::vector<TensorSpec>& specs, int tag, torch::Device device);

    /// Milliseconds this rank spent blocked in exchange / receive / waitSends since the last
    /// call: the pipeline bubble plus the transfers (resets the count).
    double takeWaitMs();

    static constexpr int kForwardTag = 1;   ///< activations, stage s → s + 1
    static constexpr int kBackwardTag = 2;  ///< their gradients, stage s + 1 → s

private:
    bool owns(const std::string& parameterName) const;
    size_t chunkIndex(int chunk) const { return static_cast<size_t>(chunk * m_stages + m_stage); }

    int m_stage = 0;
    int m_stages = 1;
    int m_chunks = 1;
    double m_waitMs = 0.0;
    std::vector<torch::Tensor> m_sent;                 // posted sends' contiguous copies
    std::vector<std::unique_ptr<CommWork>> m_sends;    // their works, ended by waitSends
    std::vector<std::pair<int, int>> m_layers;
    std::unique_ptr<ProcessGroup> m_dataGroup;
    std::unique_ptr<ProcessGroup> m_pipeGroup;
};

}  // namespace wb::rt
