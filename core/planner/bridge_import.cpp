// Megatron-Bridge overrides → RunConfig. The field table below is the inverse of
// generators.cpp's bridgeOverrides, plus the fields the reference lists that the workbench does
// not model (accepted, and said so).
#include "core/planner/bridge_import.h"
#include "core/edit_distance.h"
#include "core/yaml_tree.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>

namespace wb::core::planner {
namespace {

struct Value {
    std::string text;                 // unquoted scalar
    bool isNull = false;
    bool isList = false;
    std::vector<std::string> items;   // list items, unquoted
    bool structured = false;          // a YAML sequence of mappings, or a mapping: no field reads it
};

std::string trim(std::string s)
{
    const auto notSpace = [](unsigned char c) { return !std::isspace(c); };
    s.erase(s.begin(), std::find_if(s.begin(), s.end(), notSpace));
    s.erase(std::find_if(s.rbegin(), s.rend(), notSpace).base(), s.end());
    return s;
}

std::string unquote(std::string s)
{
    s = trim(std::move(s));
    if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
        return s.substr(1, s.size() - 2);
    return s;
}

Value parseValue(const std::string& raw)
{
    Value v;
    const std::string s = trim(raw);
    if (s == "null" || s == "None" || s == "~" || s.empty()) {
        v.isNull = true;
        return v;
    }
    if (s.front() == '[' && s.back() == ']') {
        v.isList = true;
        std::stringstream in(s.substr(1, s.size() - 2));
        for (std::string item; std::getline(in, item, ',');)
            if (!trim(item).empty())
                v.items.push_back(unquote(item));
        return v;
    }
    v.text = unquote(s);
    return v;
}

struct Entry {
    std::string key;
    Value value;
    int line = 0;
};

// What one field does to the config; returns an error message, or empty.
using Apply = std::function<std::string(const Value&, RunConfig&, Layout&)>;

std::optional<int> toInt(const Value& v)
{
    char* end = nullptr;
    const long n = std::strtol(v.text.c_str(), &end, 10);
    if (v.isNull || v.isList || v.text.empty() || *end != '\0' || n < 0 || n > 1'000'000)
        return std::nullopt;
    return static_cast<int>(n);
}

std::optional<bool> toBool(const Value& v)
{
    if (v.text == "true" || v.text == "True")
        return true;
    if (v.text == "false" || v.text == "False")
        return false;
    return std::nullopt;
}

// `minimum`: the smallest value the field takes (parallel sizes, batch sizes and lengths: 1). A
// value below it is a problem on its line and is not applied, so nothing later divides by it.
Apply setInt(std::function<int&(RunConfig&)> slot, bool nullIsOne = false, int minimum = 0)
{
    return [slot, nullIsOne, minimum](const Value& v, RunConfig& c, Layout&) -> std::string {
        if (v.isNull && nullIsOne) {
            slot(c) = 1;
            return {};
        }
        const auto n = toInt(v);  // negative or beyond 1e6: none
        if (!n || *n < minimum)
            return "expected a whole number" + (minimum > 0 ? " >= " + std::to_string(minimum) : std::string());
        slot(c) = *n;
        return {};
    };
}

// Parallel sizes, batch sizes and sequence lengths: at least 1 (0 would divide the GPUs by zero).
Apply setSize(std::function<int&(RunConfig&)> slot, bool nullIsOne = false)
{
    return setInt(std::move(slot), nullIsOne, 1);
}

Apply setBool(std::function<bool&(RunConfig&)> slot)
{
    return [slot](const Value& v, RunConfig& c, Layout&) -> std::string {
        const auto b = toBool(v);
        if (!b)
            return "expected true or false";
        slot(c) = *b;
        return {};
    };
}

// A planner-only Layout flag (no RunConfig field), e.g. comm_overlap.overlap_moe_expert_parallel_comm.
Apply setLayoutBool(bool Layout::*field)
{
    return [field](const Value& v, RunConfig&, Layout& l) -> std::string {
        const auto b = toBool(v);
        if (!b)
            return "expected true or false";
        l.*field = *b;
        return {};
    };
}

Apply setText(std::function<std::string&(RunConfig&)> slot, std::vector<std::string> allowed, std::string nullValue = {})
{
    return [slot, allowed, nullValue](const Value& v, RunConfig& c, Layout&) -> std::string {
        const std::string text = v.isNull ? nullValue : v.text;
        // null takes nullValue; with nullValue "" only where "" is allowed (the flex backend:
        // a resolved config writes the perf CLI's None as null).
        if (v.isList || v.structured || (v.isNull && nullValue.empty() && std::find(allowed.begin(), allowed.end(), "") == allowed.end()) ||
            std::find(allowed.begin(), allowed.end(), text) == allowed.end()) {
            std::string list;
            for (const std::string& a : allowed)
                list += (list.empty() ? "" : ", ") + a;
            return "expected one of " + list;
        }
        slot(c) = text;
        return {};
    };
}

Apply setList(std::function<std::vector<std::string>&(RunConfig&)> slot)
{
    return [slot](const Value& v, RunConfig& c, Layout&) -> std::string {
        if (v.isNull) {
            slot(c).clear();
            return {};
        }
        slot(c) = v.isList ? v.items : std::vector<std::string>{v.text};
        return {};
    };
}

// optimizer.exp_avg_dtype / exp_avg_sq_dtype: torch.float32 | torch.bfloat16 (Megatron also takes
// fp16 and uint8, which neither the planner nor moe-train model).
Apply setMomentDtype(std::string& (*slot)(RunConfig&))
{
    return [slot](const Value& v, RunConfig& c, Layout&) -> std::string {
        if (v.text == "torch.bfloat16" || v.text == "bf16")
            slot(c) = "bf16";
        else if (v.text == "torch.float32" || v.text == "fp32")
            slot(c) = "fp32";
        else
            return "expected torch.float32 or torch.bfloat16 (the workbench models no other moment dtype)";
        return {};
    };
}

struct Field {
    const char* key;
    const char* configPath;  // RunConfig path it sets (for problem → line); "" for planner-only
    Apply apply;
};

const std::vector<Field>& fields()
{
    static const std::vector<Field> table = {
        {"model.tensor_model_parallel_size", "parallel.tensor_model_parallel_size", setSize([](RunConfig& c) -> int& { return c.parallel.tensorModelParallelSize; })},
        {"model.pipeline_model_parallel_size", "parallel.pipeline_model_parallel_size", setSize([](RunConfig& c) -> int& { return c.parallel.pipelineModelParallelSize; })},
        {"model.virtual_pipeline_model_parallel_size", "parallel.virtual_pipeline_model_parallel_size", setSize([](RunConfig& c) -> int& { return c.parallel.virtualPipelineModelParallelSize; }, true)},
        {"model.context_parallel_size", "parallel.context_parallel_size", setSize([](RunConfig& c) -> int& { return c.parallel.contextParallelSize; })},
        {"model.expert_model_parallel_size", "parallel.expert_model_parallel_size", setSize([](RunConfig& c) -> int& { return c.parallel.expertModelParallelSize; })},
        {"model.expert_tensor_parallel_size", "parallel.expert_tensor_parallel_size", setSize([](RunConfig& c) -> int& { return c.parallel.expertTensorParallelSize; }, true)},
        {"model.sequence_parallel", "parallel.sequence_parallel", setBool([](RunConfig& c) -> bool& { return c.parallel.sequenceParallel; })},
        {"model.num_layers_in_first_pipeline_stage", "parallel.num_layers_in_first_pipeline_stage", setInt([](RunConfig& c) -> int& { return c.parallel.numLayersInFirstPipelineStage; })},
        {"model.num_layers_in_last_pipeline_stage", "parallel.num_layers_in_last_pipeline_stage", setInt([](RunConfig& c) -> int& { return c.parallel.numLayersInLastPipelineStage; })},
        {"model.seq_length", "train.seq_length", setSize([](RunConfig& c) -> int& { return c.train.seqLength; })},
        {"model.moe_token_dispatcher_type", "parallel.moe_token_dispatcher_type", setText([](RunConfig& c) -> std::string& { return c.parallel.moeTokenDispatcherType; }, {"allgather", "alltoall", "flex"})},
        {"model.moe_flex_dispatcher_backend", "parallel.moe_flex_dispatcher_backend", setText([](RunConfig& c) -> std::string& { return c.parallel.moeFlexDispatcherBackend; }, {"", "deepep", "hybridep", "ncclep"}, "")},
        {"model.moe_router_dtype", "model.decoder.moe_router_dtype", setText([](RunConfig& c) -> std::string& { return c.model.decoder.moeRouterDtype; }, {"fp32", "fp64"})},
        {"model.recompute_granularity", "recompute.granularity", setText([](RunConfig& c) -> std::string& { return c.recompute.granularity; }, {"none", "selective", "full"}, "none")},
        {"model.recompute_method", "recompute.method", setText([](RunConfig& c) -> std::string& { return c.recompute.method; }, {"uniform", "block"}, "uniform")},
        {"model.recompute_num_layers", "recompute.recompute_num_layers", [](const Value& v, RunConfig& c, Layout&) -> std::string {
             if (v.isNull) { c.recompute.recomputeNumLayers = 0; return {}; }
             const auto n = toInt(v);
             if (!n) return "expected a whole number or null";
             c.recompute.recomputeNumLayers = *n;
             return {};
         }},
        {"model.recompute_modules", "recompute.modules", setList([](RunConfig& c) -> std::vector<std::string>& { return c.recompute.modules; })},
        {"model.cuda_graph_impl", "cuda_graph.impl", setText([](RunConfig& c) -> std::string& { return c.cudaGraph.impl; }, {"none", "local", "transformer_engine", "full_iteration"}, "none")},
        {"model.cuda_graph_scope", "cuda_graph.scope", setList([](RunConfig& c) -> std::vector<std::string>& { return c.cudaGraph.scope; })},
        {"model.cuda_graph_modules", "cuda_graph.scope", setList([](RunConfig& c) -> std::vector<std::string>& { return c.cudaGraph.scope; })},
        {"model.cuda_graph_warmup_steps", "cuda_graph.warmup_steps", setInt([](RunConfig& c) -> int& { return c.cudaGraph.warmupSteps; })},
        {"model.freeze_language_model", "model.freeze_language_model", setBool([](RunConfig& c) -> bool& { return c.model.freezeLanguageModel; })},
        {"model.freeze_vision_model", "model.freeze_vision_model", setBool([](RunConfig& c) -> bool& { return c.model.freezeVisionModel; })},
        {"model.freeze_vision_projection", "model.freeze_vision_projection", setBool([](RunConfig& c) -> bool& { return c.model.freezeVisionProjection; })},
        {"train.micro_batch_size", "train.micro_batch_size", setSize([](RunConfig& c) -> int& { return c.train.microBatchSize; })},
        {"train.global_batch_size", "train.global_batch_size", setSize([](RunConfig& c) -> int& { return c.train.globalBatchSize; })},
        {"train.train_iters", "train.train_iters", [](const Value& v, RunConfig& c, Layout&) -> std::string {
             const auto n = toInt(v);
             if (!n || *n < 1) return "expected a whole number >= 1";
             c.train.trainIters = *n;
             return {};
         }},
        {"ddp.use_megatron_fsdp", "parallel.use_megatron_fsdp", setBool([](RunConfig& c) -> bool& { return c.parallel.useMegatronFsdp; })},
        {"dist.use_megatron_fsdp", "parallel.use_megatron_fsdp", setBool([](RunConfig& c) -> bool& { return c.parallel.useMegatronFsdp; })},
        {"ddp.data_parallel_sharding_strategy", "parallel.data_parallel_sharding_strategy", setText([](RunConfig& c) -> std::string& { return c.parallel.dataParallelShardingStrategy; }, {"no_shard", "optim", "optim_grads", "optim_grads_params"})},
        {"ddp.overlap_grad_reduce", "parallel.overlap_grad_reduce", setBool([](RunConfig& c) -> bool& { return c.parallel.overlapGradReduce; })},
        {"ddp.grad_reduce_in_fp32", "parallel.grad_reduce_in_fp32", setBool([](RunConfig& c) -> bool& { return c.parallel.gradReduceInFp32; })},
        {"comm_overlap.overlap_moe_expert_parallel_comm", "", setLayoutBool(&Layout::overlapMoeExpertParallelComm)},
        {"model.moe_shared_expert_overlap", "", setLayoutBool(&Layout::moeSharedExpertOverlap)},
        {"model.use_transformer_engine_op_fuser", "", setLayoutBool(&Layout::teOpFuser)},
        {"mixed_precision.fp8_dot_product_attention", "", setLayoutBool(&Layout::fp8DotProductAttention)},
        {"optimizer.exp_avg_dtype", "train.exp_avg_dtype", setMomentDtype([](RunConfig& c) -> std::string& { return c.train.expAvgDtype; })},
        {"optimizer.exp_avg_sq_dtype", "train.exp_avg_sq_dtype", setMomentDtype([](RunConfig& c) -> std::string& { return c.train.expAvgSqDtype; })},
        // A resolved ConfigContainer writes the MixedPrecisionConfig out instead of its recipe name.
        {"mixed_precision.bf16", "train.precision", [](const Value& v, RunConfig& c, Layout&) -> std::string {
             const auto b = toBool(v);
             if (!b) return "expected true or false";
             if (*b) c.train.precision = "bf16";
             return {};
         }},
        {"mixed_precision", "train.precision", [](const Value& v, RunConfig& c, Layout&) -> std::string {
             if (v.text == "bf16_mixed") c.train.precision = "bf16";
             return {};  // other recipes (fp8, mxfp8) are beyond RunConfig; accepted as they are
         }},
    };
    return table;
}

// A tree value as the field table reads it: a scalar's text (plain null/None/~/nothing: null), a
// sequence of scalars as the list a flow list gives, `{_target_: torch.float32, _call_: false}`
// (how Bridge's YAML writes a dtype or a function) as its target's name. Anything else is
// `structured`: no field takes it.
Value valueOf(const YamlNode& n)
{
    Value v;
    if (n.isScalar()) {
        if (!n.quoted && (n.isNull() || n.text == "None"))
            v.isNull = true;
        else
            v.text = n.text;
        return v;
    }
    if (n.isSequence()) {
        v.isList = true;
        for (const YamlNode& item : n.items) {
            v.structured |= !item.isScalar();
            v.items.push_back(item.text);
        }
        return v;
    }
    const YamlNode* target = n.find("_target_");
    const YamlNode* call = n.find("_call_");
    if (target && target->isScalar() && call && yamlBool(*call) == false && n.keys.size() == 2) {
        v.text = target->text;
        return v;
    }
    v.structured = true;
    return v;
}

bool isReference(const YamlNode& n)
{
    return n.isMapping() && !valueOf(n).structured;
}

// Mappings flattened to dotted keys ("model.vision_config.num_layers"), each leaf on its key's line.
void flatten(const YamlNode& map, const std::string& prefix, std::vector<Entry>& out)
{
    for (size_t i = 0; i < map.keys.size(); ++i) {
        const YamlNode& value = map.items[i];
        const std::string key = prefix + map.keys[i].text;
        if (value.isMapping() && !isReference(value)) {
            flatten(value, key + ".", out);  // {} has no fields: nothing
            continue;
        }
        // `model:` with nothing under it: a section header, not a field (as it always was).
        if (prefix.empty() && value.isScalar() && !value.quoted && value.text.empty() && value.tag.empty())
            continue;
        out.push_back({key, valueOf(value), map.keys[i].line});
    }
}

// A resolved ConfigContainer (`cfg.to_yaml()`): the top level's _target_ names ConfigContainer, or
// at least 4 of its sections are there, each with the _target_ of its config class. The
// _target_s are what tell it from an override file with as many sections (the generators write
// six), whose unknown keys are typos worth a warning each.
bool isResolvedContainer(const YamlNode& root)
{
    if (const YamlNode* t = root.find("_target_"); t && t->isScalar() && t->text.find("ConfigContainer") != std::string::npos)
        return true;
    int sections = 0;
    for (const char* name : {"model", "train", "optimizer", "ddp", "scheduler", "dataset", "logger", "checkpoint", "tokenizer", "rng", "dist"})
        if (const YamlNode* s = root.find(name); s && s->isMapping() && s->find("_target_"))
            ++sections;
    return sections >= 4;
}

std::vector<Entry> parseYaml(std::string_view text, std::vector<BridgeImportProblem>& problems, bool& resolved)
{
    std::vector<Entry> out;
    const Result<YamlNode> tree = parseYamlTree(text);
    if (!tree) {
        const YamlErrorParts e = yamlErrorParts(tree.error());
        problems.push_back({e.line, "", true, "not valid YAML (column " + std::to_string(e.column) + "): " + e.what, e.fix});
        return out;
    }
    if (tree->isNull())
        return out;
    if (!tree->isMapping()) {
        problems.push_back({tree->line, "", true, "the file is not a YAML mapping of sections",
                            "write `section:` lines (model:, train:, ...) with `key: value` lines indented under them"});
        return out;
    }
    resolved = isResolvedContainer(*tree);
    flatten(*tree, "", out);
    return out;
}

// One perf launcher flag (megatron-bridge.md §5) and the Bridge fields its value sets.
struct PerfFlag {
    std::vector<const char*> names;
    std::vector<const char*> keys;  // each gets the flag's value; see perfEntries for the special ones
};

const std::vector<PerfFlag>& perfFlags()
{
    static const std::vector<PerfFlag> table = {
        {{"-tp", "--tensor_model_parallel_size"}, {"model.tensor_model_parallel_size"}},
        {{"-pp", "--pipeline_model_parallel_size"}, {"model.pipeline_model_parallel_size"}},
        {{"-cp", "--context_parallel_size"}, {"model.context_parallel_size"}},
        {{"-vp", "--virtual_pipeline_model_parallel_size"}, {"model.virtual_pipeline_model_parallel_size"}},
        {{"-ep", "--expert_model_parallel_size"}, {"model.expert_model_parallel_size"}},
        {{"-et", "-etp", "--expert_tensor_parallel_size"}, {"model.expert_tensor_parallel_size"}},
        {{"-mb", "--micro_batch_size"}, {"train.micro_batch_size"}},
        {{"-gb", "--global_batch_size"}, {"train.global_batch_size"}},
        {{"-sl", "--seq_length"}, {"model.seq_length"}},
        {{"--cuda_graph_impl"}, {"model.cuda_graph_impl"}},
        {{"--cuda_graph_scope"}, {"model.cuda_graph_scope"}},                  // a,b → [a,b]
        {{"--moe_flex_dispatcher_backend"}, {"model.moe_flex_dispatcher_backend"}},  // + dispatcher flex
        {{"--use_megatron_fsdp"}, {"ddp.use_megatron_fsdp"}},
        {{"-rl", "--recompute_num_layers"}, {"model.recompute_num_layers"}},  // + granularity full
        {{"--recompute_modules"}, {"model.recompute_modules"}},               // + granularity selective
        {{"-c", "--compute_dtype"}, {}},                                       // bf16 → mixed_precision
        {{"-ng", "--num_gpus"}, {}},                                           // the world size
        {{"-g", "--gpu"}, {}},                                                 // the hardware
        {{"-mr", "--model_recipe_name"}, {}},                                  // the model
        // Launcher settings that say nothing about the layout.
        {{"--account", "-a"}, {}}, {{"--partition", "-p"}, {}}, {{"-m", "--model_family_name"}, {}},
        {{"--domain"}, {}}, {{"-t", "--time_limit"}, {}}, {{"-gn", "--gpus_per_node"}, {}},
        {{"-i", "--container_image"}, {}}, {{"-l", "--log_dir"}, {}}, {{"-hf", "--hf_token"}, {}},
    };
    return table;
}

const PerfFlag* findPerfFlag(const std::string& word)
{
    for (const PerfFlag& f : perfFlags())
        for (const char* n : f.names)
            if (word == n)
                return &f;
    return nullptr;
}

struct Word {
    std::string text;
    int line = 0;
};

// Every shell word of the text with its line: comments dropped, a trailing backslash joins lines.
std::vector<Word> shellWords(std::string_view text)
{
    std::vector<Word> out;
    std::istringstream in{std::string(text)};
    int lineNo = 0;
    for (std::string line; std::getline(in, line);) {
        ++lineNo;
        std::istringstream words(line);
        for (std::string word; words >> word;) {
            if (word.front() == '#')
                break;
            if (word == "\\")
                continue;
            out.push_back({unquote(word), lineNo});
        }
    }
    return out;
}

std::vector<Entry> parseDotlist(std::string_view text, std::vector<BridgeImportProblem>& problems, PerfLaunch* perf)
{
    std::vector<Entry> out;
    const std::vector<Word> words = shellWords(text);
    bool launcher = false;  // flags count from the setup_experiment.py word on (not `set -euo ...`)
    for (size_t i = 0; i < words.size(); ++i) {
        const std::string& word = words[i].text;
        const int line = words[i].line;
        if (perf && word.find("setup_experiment.py") != std::string::npos)
            launcher = true;
        if (perf && launcher && word.size() > 1 && word.front() == '-' && word.find('=') == std::string::npos) {
            const PerfFlag* flag = findPerfFlag(word);
            if (!flag) {
                if (word == "-d" || word == "--dryrun" || word == "--dry_run")
                    continue;  // dry run: no value
                problems.push_back({line, word, false, "not a perf launcher flag the workbench knows (it cannot check it)",
                                    "see megatron-bridge.md §5 for the flags (-tp -pp -cp -vp -ep -et -mb -gb -sl ...)"});
                continue;
            }
            if (i + 1 >= words.size()) {
                problems.push_back({line, word, true, "the flag " + word + " has no value", "give its value after it"});
                continue;
            }
            const std::string value = words[++i].text;
            const std::string name = flag->names.front();
            for (const char* key : flag->keys) {
                const bool list = name == "--cuda_graph_scope" || name == "--recompute_modules";
                out.push_back({key, parseValue(list ? "[" + value + "]" : value), line});
            }
            if (name == "--moe_flex_dispatcher_backend")
                out.push_back({"model.moe_token_dispatcher_type", parseValue("flex"), line});
            else if (name == "-rl")
                out.push_back({"model.recompute_granularity", parseValue("full"), line});
            else if (name == "--recompute_modules")
                out.push_back({"model.recompute_granularity", parseValue("selective"), line});
            else if (name == "-c" && value == "bf16")
                out.push_back({"mixed_precision", parseValue("bf16_mixed"), line});
            else if (name == "-ng") {
                const int n = std::atoi(value.c_str());
                if (n < 1)
                    problems.push_back({line, word, true, "-ng needs the number of GPUs, got '" + value + "'", "give -ng N"});
                perf->gpus = std::max(0, n);
                perf->gpusLine = line;
            } else if (name == "-g") {
                perf->hardware = value;
            } else if (name == "-mr") {
                // Bridge recipe names are the catalog names with '_' (qwen3_vl_30b_a3b).
                perf->model = value;
                std::replace(perf->model.begin(), perf->model.end(), '_', '-');
            }
            continue;
        }
        const size_t eq = word.find('=');
        if (eq == std::string::npos || eq == 0)
            continue;  // the python command, its script, flags outside a perf command
        std::string key = word.substr(0, eq);
        key.erase(0, key.find_first_not_of('+'));  // Hydra's +key / ++key
        out.push_back({key, parseValue(word.substr(eq + 1)), line});
    }
    return out;
}

}  // namespace

const std::vector<std::string>& bridgeKnownFields()
{
    static const std::vector<std::string> keys = {
        "model.tensor_model_parallel_size", "model.pipeline_model_parallel_size",
        "model.virtual_pipeline_model_parallel_size", "model.context_parallel_size", "model.expert_model_parallel_size",
        "model.expert_tensor_parallel_size", "model.sequence_parallel", "model.num_layers_in_first_pipeline_stage",
        "model.num_layers_in_last_pipeline_stage", "model.pipeline_model_parallel_layout", "train.micro_batch_size",
        "train.global_batch_size", "train.train_iters", "model.seq_length", "dataset.seq_length", "dataset._target_", "dataset.num_images", "dataset.image_size",
        "dist.use_megatron_fsdp", "ddp.use_megatron_fsdp", "ddp.data_parallel_sharding_strategy",
        "checkpoint.ckpt_format", "ddp.average_in_collective", "ddp.fsdp_double_buffer", "ddp.nccl_ub",
        "dist.use_torch_fsdp2", "model.moe_token_dispatcher_type", "model.moe_flex_dispatcher_backend",
        "model.moe_hybridep_num_sms", "model.moe_deepep_num_sms", "model.moe_grouped_gemm", "model.moe_permute_fusion",
        "model.moe_router_fusion", "model.moe_router_dtype", "model.moe_router_topk", "model.num_moe_experts",
        "model.moe_ffn_hidden_size", "model.moe_aux_loss_coeff", "model.moe_router_load_balancing_type",
        "model.moe_router_force_load_balancing", "model.moe_shared_expert_overlap", "model.recompute_granularity",
        "model.recompute_method", "model.recompute_num_layers", "model.recompute_modules", "model.cuda_graph_impl",
        "model.cuda_graph_scope", "model.cuda_graph_modules", "model.cuda_graph_warmup_steps",
        "model.freeze_language_model", "model.freeze_vision_model", "model.freeze_vision_projection",
        "comm_overlap.overlap_moe_expert_parallel_comm", "comm_overlap.delay_wgrad_compute", "ddp.overlap_grad_reduce",
        "ddp.grad_reduce_in_fp32",
        "ddp.overlap_param_gather", "comm_overlap.tp_comm_overlap", "mixed_precision", "mixed_precision.bf16",
        "model.use_transformer_engine_op_fuser", "mixed_precision.fp8_dot_product_attention",
        // Megatron-Core OptimizerConfig, as NVIDIA's MoE scripts pass them to Bridge (precision-
        // aware optimizer), and the distributed optimizer it requires (Bridge config.py syncs the
        // ddp.* and optimizer.* flags).
        "optimizer.use_precision_aware_optimizer", "optimizer.main_grads_dtype", "optimizer.main_params_dtype",
        "optimizer.exp_avg_dtype", "optimizer.exp_avg_sq_dtype", "optimizer.use_distributed_optimizer",
        "ddp.use_distributed_optimizer"};
    return keys;
}

int BridgeImport::lineOfConfigPath(const std::string& path) const
{
    int best = 0;
    for (const Field& f : fields()) {
        if (path != f.configPath)
            continue;
        if (auto it = keyLines.find(f.key); it != keyLines.end())
            best = best == 0 ? it->second : std::min(best, it->second);
    }
    return best;
}

bool looksLikePerfLaunch(std::string_view text)
{
    return text.find("setup_experiment.py") != std::string_view::npos;
}

bool looksLikeDotlist(std::string_view text)
{
    std::istringstream in{std::string(text)};
    bool any = false;
    for (std::string line; std::getline(in, line);) {
        line = trim(line);
        if (line.empty() || line.front() == '#')
            continue;
        const size_t eq = line.find('=');
        const size_t colon = line.find(": ");
        if (eq == std::string::npos || (colon != std::string::npos && colon < eq))
            return false;
        any = true;
    }
    return any;
}

namespace {

// The data the file names (BridgeData): the dataset class, the mock VLM dataset's images, and the
// router's benchmark-only forced balance. True when `e` was one of those keys.
bool readDataField(const Entry& e, BridgeData& data, std::vector<BridgeImportProblem>& problems)
{
    if (e.key == "dataset._target_") {
        data.target = e.value.text;
        data.mock = data.target.find("Mock") != std::string::npos;
        return true;
    }
    if (e.key == "dataset.num_images") {
        const auto n = toInt(e.value);
        if (!n || *n < 0)
            problems.push_back({e.line, e.key, true, "expected a whole number >= 0, got '" + e.value.text + "'", "write e.g. 1"});
        data.images = n.value_or(1);
        return true;
    }
    if (e.key == "dataset.image_size") {
        const auto item = [&](size_t i) { return e.value.items.size() == 2 ? toInt(parseValue(e.value.items[i])) : std::nullopt; };
        const std::optional<int> w = item(0), h = item(1);
        if (e.value.isList && w && h && *w > 0 && *h > 0) {
            data.imageWidth = *w, data.imageHeight = *h;
        } else {
            problems.push_back({e.line, e.key, false, "expected [width, height] in pixels, got '" + (e.value.isList ? "a list of " + std::to_string(e.value.items.size()) : e.value.text) +
                                                    "'; 256x256 assumed",
                                "write e.g. [256, 256]"});
        }
        return true;
    }
    if (e.key == "model.moe_router_force_load_balancing") {
        const auto b = toBool(e.value);
        if (!b)
            problems.push_back({e.line, e.key, true, "expected true or false, got '" + e.value.text + "'", "write true or false"});
        data.forceLoadBalancing = b;
        return true;
    }
    return false;
}

}  // namespace

BridgeImport importBridgeOverrides(std::string_view text, bool yaml, const RunConfig& base, int worldSize)
{
    BridgeImport out;
    out.config = base;
    Layout extras;
    const bool perf = !yaml && looksLikePerfLaunch(text);
    bool resolved = false;  // a resolved ConfigContainer: its unread fields are counted, not warned
    const std::vector<Entry> entries = yaml ? parseYaml(text, out.problems, resolved)
                                            : parseDotlist(text, out.problems, perf ? &out.perf : nullptr);
    out.perf.present = perf;
    const auto& known = bridgeKnownFields();
    bool etpSet = false;
    std::optional<std::string> ckptFormat;
    std::optional<bool> distributedOptimizer;  // unset: the recipe's (the planner assumes on)
    bool precisionAware = false;
    int datasetSeq = 0, datasetSeqLine = 0;
    int unread = 0;
    for (const Entry& e : entries) {
        out.keyLines.emplace(e.key, e.line);
        const auto field = std::find_if(fields().begin(), fields().end(), [&](const Field& f) { return e.key == f.key; });
        if (field != fields().end() && e.value.structured) {
            out.problems.push_back({e.line, e.key, true, "expected a value or a list of names, got nested YAML (mappings)",
                                    "see megatron-bridge.md §2 for the field's values"});
            continue;
        }
        if (field != fields().end()) {
            if (std::string err = field->apply(e.value, out.config, extras); !err.empty())
                out.problems.push_back({e.line, e.key, true, err + ", got '" + (e.value.isNull ? "null" : e.value.text) + "'",
                                        "see megatron-bridge.md §2 for the field's values"});
            etpSet |= e.key == "model.expert_tensor_parallel_size" && !e.value.isNull;
            continue;
        }
        if (e.key == "checkpoint.ckpt_format") {
            ckptFormat = e.value.text;
            continue;
        }
        // Bridge turns the distributed optimizer on in both ddp.* and optimizer.* when either says so.
        if (e.key == "ddp.use_distributed_optimizer" || e.key == "optimizer.use_distributed_optimizer") {
            if (const auto b = toBool(e.value)) {
                distributedOptimizer = distributedOptimizer.value_or(false) || *b;
            } else {
                out.problems.push_back({e.line, e.key, true, "expected true or false, got '" + e.value.text + "'",
                                        "write true or false"});
            }
            continue;
        }
        if (e.key == "optimizer.use_precision_aware_optimizer") {
            const auto b = toBool(e.value);
            if (!b)
                out.problems.push_back({e.line, e.key, true, "expected true or false, got '" + e.value.text + "'",
                                        "write true or false"});
            precisionAware = b.value_or(false);
            continue;
        }
        if (e.key == "optimizer.main_grads_dtype" || e.key == "optimizer.main_params_dtype") {
            if (e.value.text != "torch.float32")
                out.problems.push_back({e.line, e.key, false,
                                        "the planner and moe-train keep fp32 master weights and main grads; " + e.value.text +
                                            " is not modelled (memory predictions assume torch.float32)",
                                        "use torch.float32, or read the memory prediction as an upper bound"});
            continue;
        }
        if (e.key == "dataset.seq_length") {
            datasetSeq = toInt(e.value).value_or(0);
            datasetSeqLine = e.line;
            continue;
        }
        if (readDataField(e, out.data, out.problems))
            continue;
        // _target_ names a config class (model._target_, model.vision_config._target_, ...).
        if (e.key == "_target_" || (e.key.size() > 9 && e.key.compare(e.key.size() - 9, 9, "._target_") == 0))
            continue;
        if (resolved) {
            ++unread;  // the hundreds of fields of a full config that change nothing the planner models
            continue;
        }
        if (std::find(known.begin(), known.end(), e.key) != known.end())
            continue;  // a real field the workbench does not model (kernels, SM counts, ...): fine
        std::string best;
        size_t bestDistance = 4;
        for (const std::string& k : known)
            if (const size_t d = boundedEditDistance(e.key, k, bestDistance); d < bestDistance) {
                bestDistance = d;
                best = k;
            }
        out.problems.push_back({e.line, e.key, false, "not a field megatron-bridge.md lists (the workbench cannot check it)",
                                best.empty() ? "check the spelling against Megatron-Bridge's ConfigContainer" : "did you mean " + best + "?"});
    }
    if (unread > 0)
        out.problems.push_back({0, "", false,
                                std::to_string(unread) + " fields not read: a resolved ConfigContainer holds every field of "
                                "every section; the workbench reads the ones megatron-bridge.md lists that change the "
                                "layout, the memory or the step time",
                                "nothing to do; each field read is checked on its own line"});
    // Megatron: expert_tensor_parallel_size None = TP.
    if (!etpSet)
        out.config.parallel.expertTensorParallelSize = out.config.parallel.tensorModelParallelSize;
    if (datasetSeq > 0 && datasetSeq != out.config.train.seqLength)
        out.problems.push_back({datasetSeqLine, "dataset.seq_length", true,
                                "dataset.seq_length " + std::to_string(datasetSeq) + " differs from model.seq_length " +
                                    std::to_string(out.config.train.seqLength),
                                "set both to the same sequence length"});
    if (out.config.parallel.useMegatronFsdp && ckptFormat.value_or("fsdp_dtensor") != "fsdp_dtensor")
        out.problems.push_back({out.keyLines["checkpoint.ckpt_format"], "checkpoint.ckpt_format", true,
                                "Megatron FSDP needs checkpoint.ckpt_format=fsdp_dtensor (megatron-bridge.md §6), got " + *ckptFormat,
                                "set checkpoint.ckpt_format=fsdp_dtensor"});
    // Megatron's OptimizerConfig: moments other than fp32 only with the precision-aware optimizer.
    for (const char* key : {"optimizer.exp_avg_dtype", "optimizer.exp_avg_sq_dtype"}) {
        const std::string& d = std::string(key) == "optimizer.exp_avg_dtype" ? out.config.train.expAvgDtype
                                                                              : out.config.train.expAvgSqDtype;
        if (d == "bf16" && !precisionAware)
            out.problems.push_back({out.keyLines[key], key, true,
                                    std::string(key) + "=torch.bfloat16 without optimizer.use_precision_aware_optimizer=true: "
                                                       "Megatron asserts (the dtype can only be fp32 when not using the "
                                                       "precision-aware optimizer)",
                                    "add optimizer.use_precision_aware_optimizer=true (with the distributed optimizer), "
                                    "or set it to torch.float32"});
    }
    out.layout = layoutFromRunConfig(out.config, worldSize);
    out.layout.useDistributedOptimizer = distributedOptimizer.value_or(true);
    out.layout.overlapMoeExpertParallelComm = extras.overlapMoeExpertParallelComm;
    out.layout.moeSharedExpertOverlap = extras.moeSharedExpertOverlap;
    out.layout.teOpFuser = extras.teOpFuser;
    out.layout.fp8DotProductAttention = extras.fp8DotProductAttention;
    return out;
}

}  // namespace wb::core::planner
