// Layout sizes and the RunConfig mapping. Kept separate from lint so that the mapping is the single
// place where planner names meet RunConfig names.
#include "core/planner/layout.h"

#include <algorithm>

namespace wb::core::planner {

int Layout::dp() const
{
    const int mp = tp * pp * cp;
    return mp > 0 && worldSize % mp == 0 ? worldSize / mp : 0;
}

int Layout::edp() const
{
    const int eg = pp * ep * etp;
    return eg > 0 && worldSize % eg == 0 ? worldSize / eg : 0;
}

int Layout::numMicroBatches() const
{
    const long perStep = long(mbs) * dp();
    return perStep > 0 && gbs % perStep == 0 ? int(gbs / perStep) : 0;
}

std::string Layout::dispatcherName() const
{
    return dispatcherType == "flex" && !dispatcherBackend.empty() ? "flex+" + dispatcherBackend : dispatcherType;
}

std::string Layout::describe() const
{
    auto join = [](const std::vector<std::string>& v) {
        std::string s;
        for (const std::string& x : v)
            s += (s.empty() ? "" : ",") + x;
        return s;
    };
    std::string s = "TP" + std::to_string(tp) + " CP" + std::to_string(cp) + " PP" + std::to_string(pp);
    if (firstStageLayers > 0 || lastStageLayers > 0)
        s += "(first " + std::to_string(firstStageLayers) + "/last " + std::to_string(lastStageLayers) + ")";
    if (vpp > 1)
        s += " VPP" + std::to_string(vpp);
    s += " EP" + std::to_string(ep) + " ETP" + std::to_string(etp) + " DP" + std::to_string(dp()) + " EDP" +
         std::to_string(edp()) + " MBS" + std::to_string(mbs) + " GBS" + std::to_string(gbs);
    if (recomputeGranularity == "full")
        s += " recompute=full(" + std::to_string(recomputeNumLayers) + ")";
    else if (recomputeGranularity == "selective")
        s += " recompute=selective(" + join(recomputeModules) + ")";
    else
        s += " recompute=none";
    s += " " + dispatcherName();
    if (cudaGraphImpl != "none")
        s += " graphs=" + cudaGraphImpl + "(" + join(cudaGraphScope) + ")";
    s += useMegatronFsdp ? " fsdp=" + fsdpStrategy : (useDistributedOptimizer ? " distopt" : " ddp");
    if (freezeVision)
        s += " vision-frozen";
    return s;
}

int minimumGpus(const Layout& l)
{
    return l.pp * std::max(l.tp * l.cp, l.ep * l.etp);
}

std::vector<int> layersPerStage(const Layout& l, int numLayers)
{
    const int first = l.firstStageLayers, last = l.lastStageLayers;
    if (l.pp < 1)
        return {};
    if (l.pp == 1)
        return first == 0 && last == 0 ? std::vector<int>{numLayers} : std::vector<int>{};
    const int middleStages = l.pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
    const int middleLayers = numLayers - first - last;
    if (middleLayers < 0 || (middleStages == 0 && middleLayers != 0) ||
        (middleStages > 0 && (middleLayers % middleStages != 0 || middleLayers / middleStages == 0)))
        return {};
    std::vector<int> stages;
    const int each = middleStages > 0 ? middleLayers / middleStages : 0;
    for (int i = 0; i < l.pp; ++i) {
        if (i == 0 && first > 0)
            stages.push_back(first);
        else if (i == l.pp - 1 && last > 0)
            stages.push_back(last);
        else
            stages.push_back(each);
    }
    return stages;
}

void applyLayout(const Layout& l, RunConfig& c)
{
    ParallelConfig& p = c.parallel;
    p.tensorModelParallelSize = l.tp;
    p.contextParallelSize = l.cp;
    p.pipelineModelParallelSize = l.pp;
    p.virtualPipelineModelParallelSize = l.vpp;
    p.expertModelParallelSize = l.ep;
    p.expertTensorParallelSize = l.etp;
    p.sequenceParallel = l.sequenceParallel;
    p.numLayersInFirstPipelineStage = l.firstStageLayers;
    p.numLayersInLastPipelineStage = l.lastStageLayers;
    p.moeTokenDispatcherType = l.dispatcherType;
    p.moeFlexDispatcherBackend = l.dispatcherBackend;
    p.useMegatronFsdp = l.useMegatronFsdp;
    p.dataParallelShardingStrategy = l.fsdpStrategy;
    p.overlapGradReduce = l.overlapGradReduce;
    c.train.overlapOptimizer = l.overlapOptimizer;
    c.train.bf16WeightCopies = l.bf16WeightCopies;
    c.train.bf16Gradients = l.bf16Gradients;
    p.gradReduceInFp32 = l.gradReduceInFp32;
    p.fsdpReshardAfterForward = l.fsdpReshardAfterForward;
    c.recompute.granularity = l.recomputeGranularity;
    c.recompute.method = l.recomputeMethod;
    c.recompute.recomputeNumLayers = l.recomputeNumLayers;
    c.recompute.modules = l.recomputeModules;
    c.cudaGraph.impl = l.cudaGraphImpl;
    c.cudaGraph.scope = l.cudaGraphScope;
    c.train.microBatchSize = l.mbs;
    c.train.globalBatchSize = l.gbs;
    c.model.freezeVisionModel = l.freezeVision;
    c.model.freezeVisionProjection = l.freezeVision;
}

Layout layoutFromRunConfig(const RunConfig& c, int worldSize)
{
    const ParallelConfig& p = c.parallel;
    Layout l;
    l.worldSize = worldSize;
    l.tp = p.tensorModelParallelSize;
    l.cp = p.contextParallelSize;
    l.pp = p.pipelineModelParallelSize;
    l.vpp = p.virtualPipelineModelParallelSize;
    l.ep = p.expertModelParallelSize;
    l.etp = p.expertTensorParallelSize;
    l.sequenceParallel = p.sequenceParallel;
    l.firstStageLayers = p.numLayersInFirstPipelineStage;
    l.lastStageLayers = p.numLayersInLastPipelineStage;
    l.dispatcherType = p.moeTokenDispatcherType;
    l.dispatcherBackend = p.moeFlexDispatcherBackend;
    l.useMegatronFsdp = p.useMegatronFsdp;
    l.fsdpStrategy = p.dataParallelShardingStrategy;
    l.overlapGradReduce = p.overlapGradReduce;
    l.overlapOptimizer = c.train.overlapOptimizer;
    l.bf16WeightCopies = c.train.bf16WeightCopies;
    l.bf16Gradients = c.train.bf16Gradients;
    l.gradReduceInFp32 = p.gradReduceInFp32;
    l.fsdpReshardAfterForward = p.fsdpReshardAfterForward;
    l.recomputeGranularity = c.recompute.granularity;
    l.recomputeMethod = c.recompute.method;
    l.recomputeNumLayers = c.recompute.recomputeNumLayers;
    l.recomputeModules = c.recompute.modules;
    l.cudaGraphImpl = c.cudaGraph.impl;
    l.cudaGraphScope = c.cudaGraph.scope;
    l.mbs = c.train.microBatchSize;
    l.gbs = c.train.globalBatchSize;
    l.freezeVision = c.model.freezeVisionModel;
    return l;
}

}  // namespace wb::core::planner
