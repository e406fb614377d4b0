// The pipelined training step (PP > 1, docs/parallel.md): one step's micro-batches through this
// rank's stage under 1F1B, or interleaved 1F1B over its model chunks with virtual stages. Part of
// the Trainer (trainer_internal.h); training thread only.
#include "runtime/train/trainer_internal.h"

#include "runtime/data/tokenizer.h"
#include "runtime/parallel/pipeline_schedule.h"

#include <chrono>
#include <cstdio>

namespace wb::rt::train_detail {

// One step's micro-batches on this rank's pipeline stage (1F1B). Every data-parallel rank of a
// stage keeps micro-batches i with i % DP == its DP rank, as DP does, so the stages of one
// pipeline see the same ones (and so do the TP ranks of a DP rank: DP = stage ranks / TP).
// Timing: forward compute goes to vision / projector
// (first stage) and decoder, backward compute to backward; time spent waiting for a neighbour
// (the pipeline bubble and the transfers) is in step_ms only, and said per logged step in the
// rank's log ("pipeline idle …", next to Megatron's bubble estimate). Images, tokens and FLOPs are
// counted on the first stage (once per micro-batch), the LM loss on the last, aux losses on every
// stage. With virtual stages each micro-batch runs through every model chunk of the stage.
void Trainer::pipelineMicroBatches(int64_t step, core::StepRecord& r, StepTimer& timer, double& flops,
                                   torch::Tensor& lmSum, torch::Tensor& auxSum, int64_t& stepEndSeq)
{
    Pipeline& pipe = *m_pipeline;
    const int dp = m_parallel->dataParallelSize(), dpRank = m_parallel->dataParallelRank();
    const int numMicro = std::max(1, m_config.train.globalBatchSize / m_config.train.microBatchSize);
    const int numLocal = std::max(1, numMicro / dp);
    std::vector<MicroBatch> batches;
    for (int micro = 0; micro < numMicro; ++micro) {
        std::optional<MicroBatch> batch = nextMicroBatch(r, stepEndSeq);
        if (micro % dp != dpRank)
            continue;  // another data-parallel rank's micro-batch
        if (pipe.isFirst())
            for (const std::string& w : batch->warnings)
                if (m_warningsEmitted++ < 5)
                    event("warning", w, step);
        batches.push_back(std::move(*batch));
    }
    const auto act = m_bf16Autocast ? torch::kBFloat16 : torch::kFloat32;  // the residual stream's dtype
    const int64_t D = m_config.model.decoder.hiddenSize;
    // Under sequence parallelism a stage sends its TP rank's token share [B·T/TP, D] (the layers'
    // residual stream, MoeDecoderImpl::runLayers), else the whole [B, T, D]; each TP rank talks
    // to the same TP rank of the neighbouring stage (the pipeline group, pipeline.h).
    const auto& par = m_config.parallel;
    const int64_t shareOf = par.tensorModelParallelSize > 1 && par.sequenceParallel ? par.tensorModelParallelSize : 0;
    const int numLayers = m_model->numDecoderLayers();
    const int deepstack = std::min(m_model->numDeepstackFeatures(), numLayers);
    std::vector<int64_t> imageTokens;  // per micro-batch: rows of its deepstack features
    for (auto& b : batches) {
        imageTokens.push_back(b.totalPatches() > 0 ? std::count(b.tokenIds.begin(), b.tokenIds.end(), kImageId) : 0);
        if (!pipe.isFirst()) {  // only the first stage runs the vision encoder: no pixels to copy
            b.patchPixels.clear();
            b.patchImage.clear();
            b.patchRow.clear();
            b.patchCol.clear();
        }
    }
    // Deepstack features of layers [from, deepstack) still to be added: sent along with h.
    auto pending = [&](int i, int from) { return imageTokens[static_cast<size_t>(i)] > 0 ? std::max(0, deepstack - from) : 0; };

    PipelineCallbacks cb;
    cb.inputSpecs = [&](int chunk, int i) {
        const MicroBatch& b = batches[static_cast<size_t>(i)];
        std::vector<TensorSpec> specs{{shareOf > 0 ? std::vector<int64_t>{int64_t{b.rows} * b.seqLength / shareOf, D}
                                                   : std::vector<int64_t>{b.rows, b.seqLength, D},
                                       act}};
        for (int k = 0; k < pending(i, pipe.layerBegin(chunk)); ++k)
            specs.push_back({{imageTokens[static_cast<size_t>(i)], D}, act});
        return specs;
    };
    cb.forward = [&](int chunk, int i, const std::vector<torch::Tensor>& inputs) {
        timer.begin();
        VlmBatch t = upload(batches[static_cast<size_t>(i)]);
        StageForward out;
        AutocastScope autocast(m_bf16Autocast);
        torch::Tensor h;
        if (pipe.isFirstChunk(chunk)) {
            VisionOutput vision = m_model->encodeImages(t);
            timer.end(StepTimer::Vision);
            m_model->project(vision, t);
            timer.end(StepTimer::Projector);
            h = m_model->embed(t);
        } else {
            h = inputs.at(0);
            t.decoder.deepstack_ID.assign(static_cast<size_t>(deepstack), torch::Tensor());
            for (size_t k = 1; k < inputs.size(); ++k)
                t.decoder.deepstack_ID[static_cast<size_t>(pipe.layerBegin(chunk)) + k - 1] = inputs[k];
        }
        torch::Tensor aux;
        h = m_model->decoderLayers(t, h, pipe.layerBegin(chunk), pipe.layerEnd(chunk), aux);
        if (pipe.isLastChunk(chunk)) {
            DecoderOutput head = m_model->decoderHead(t, h);
            out.loss = (head.lmLoss + aux) / static_cast<double>(numLocal);
            lmSum = lmSum.defined() ? lmSum + head.lmLoss.detach() : head.lmLoss.detach();
        } else {
            out.outputs.push_back(h.to(act));
            const int end = pipe.layerEnd(chunk);
            for (int k = end; k < end + pending(i, end); ++k)
                out.outputs.push_back(t.decoder.deepstack_ID.at(static_cast<size_t>(k)).to(act));
            out.loss = aux / static_cast<double>(numLocal);
        }
        auxSum = auxSum.defined() ? auxSum + aux.detach() : aux.detach();
        timer.end(StepTimer::Decoder);
        return out;
    };
    // 1F1B runs each micro-batch's backward once per model chunk; the last one reduces as it goes.
    // With virtual stages that is chunk 0's: the later chunks' gradients are complete earlier but
    // their buckets (reverse model order, launched in order) go out at finishGradients, after it.
    size_t backwards = 0;
    const size_t lastBackward = batches.size() * static_cast<size_t>(pipe.chunks());
    cb.backward = [&](const std::vector<torch::Tensor>& roots, const std::vector<torch::Tensor>& grads) {
        timer.begin();
        if (++backwards == lastBackward)
            m_parallel->beforeLastBackward();
        torch::autograd::backward(roots, grads);
        m_parallel->afterBackward();
        timer.end(StepTimer::Backward);
    };
    const int micros = static_cast<int>(batches.size());
    pipe.takeWaitMs();  // what the previous step's gradient-norm and loss reductions waited is not the bubble
    const auto start = std::chrono::steady_clock::now();
    if (pipe.chunks() > 1)
        runInterleavedOneForwardOneBackward(pipe, micros, cb, m_device);
    else
        runOneForwardOneBackward(pipe, micros, cb, m_device);
    logPipelineIdle(step, micros, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());

    const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(m_device);
    if (!lmSum.defined())  // not the last stage: its share of the summed loss is 0
        lmSum = torch::zeros({}, f32);
    if (!auxSum.defined())
        auxSum = torch::zeros({}, f32);
    if (!pipe.isFirst())
        return;
    for (const MicroBatch& b : batches)
        flops += countMicroBatch(b, r);
}

// The bubble as measured: time this rank waited for its neighbours during the schedule (idle;
// transfers on loopback are negligible) against the schedule's wall time. Megatron's estimate of
// the bubble is (P − 1) / (v·M) of the compute time, i.e. idle / (schedule − idle) on a rank
// whose stages are balanced. Logged steps only (train.log_interval), in the rank's log; on the
// CPU only: with CUDA the host returns from a send/recv before the device has waited, so host
// time would not measure the device's idle time.
void Trainer::logPipelineIdle(int64_t step, int micros, double scheduleMs)
{
    const Pipeline& pipe = *m_pipeline;
    const double idleMs = m_pipeline->takeWaitMs();
    if (m_device.is_cuda() || step % std::max<int64_t>(1, m_config.train.logInterval) != 0)
        return;
    const double busyMs = std::max(1e-9, scheduleMs - idleMs);
    const double estimate = static_cast<double>(pipe.stages() - 1) / (static_cast<double>(pipe.chunks()) * micros);
    std::printf("moe-train: rank %d: step %lld pipeline idle %.2f ms of %.2f ms (fraction %.4f; idle/compute %.4f, "
                "Megatron's (P-1)/(v*M) = %.4f with P %d, v %d, M %d)\n",
                m_env.rank, static_cast<long long>(step), idleMs, scheduleMs, idleMs / std::max(1e-9, scheduleMs),
                idleMs / busyMs, estimate, pipe.stages(), pipe.chunks(), micros);
    std::fflush(stdout);
}

}  // namespace wb::rt::train_detail
