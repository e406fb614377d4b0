// RunConfig <-> JSON. One field list (visitConfig) drives both the reader and the writer, so a
// field cannot be readable but not writable, and the canonical form always has every field.
#include "core/run_config.h"

#include "core/edit_distance.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace wb::core {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr int kMaxInt = std::numeric_limits<int>::max();
constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

std::string describeJsonType(const Json& value)
{
    if (value.is_string())
        return "the string " + value.dump();
    if (value.is_boolean())
        return std::string("the boolean ") + (value.get<bool>() ? "true" : "false");
    if (value.is_number_integer() || value.is_number_unsigned())
        return "the integer " + value.dump();
    if (value.is_number_float())
        return "the number " + value.dump();
    if (value.is_null())
        return "null";
    if (value.is_array())
        return "an array";
    return "an object";
}

std::string joinQuoted(const std::vector<std::string>& items)
{
    std::string out;
    for (size_t i = 0; i < items.size(); ++i)
        out += (i ? ", \"" : "\"") + items[i] + "\"";
    return out;
}

std::string formatNumber(double v)
{
    std::ostringstream s;
    s << v;
    return s.str();
}

// Reads JSON into the config, collecting problems. Sections that are absent leave defaults.
class Reader {
public:
    explicit Reader(std::vector<ConfigProblem>& problems) : m_problems(problems) {}

    void begin(const Json& root) { m_stack.push_back({&root, "", {}}); }
    void end() { checkUnknown(); m_stack.pop_back(); }

    template <typename Fn>
    void section(const char* key, Fn&& body)
    {
        const Json* obj = lookup(key);
        static const Json kEmpty = Json::object();
        if (obj && !obj->is_object()) {
            problem(key, "expected an object (a section), got " + describeJsonType(*obj),
                    "write it as { ... } with the section's keys inside");
            obj = nullptr;
        }
        m_stack.push_back({obj ? obj : &kEmpty, pathOf(key), {}});
        body();
        checkUnknown();
        m_stack.pop_back();
    }

    template <typename Int>
    void integer(const char* key, Int& out, int64_t min, int64_t max)
    {
        const Json* v = lookup(key);
        if (!v)
            return;
        if (!(v->is_number_integer() || v->is_number_unsigned())) {
            std::string fix = "write a whole number between " + std::to_string(min) + " and " + std::to_string(max);
            if (v->is_string())
                fix = "write it without quotes, as a number";
            problem(key, "expected an integer, got " + describeJsonType(*v), fix);
            return;
        }
        // Compare in long double so unsigned values above int64 do not wrap.
        const long double value = v->is_number_unsigned() ? static_cast<long double>(v->get<uint64_t>())
                                                          : static_cast<long double>(v->get<int64_t>());
        if (value < min || value > max) {
            problem(key, v->dump() + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]",
                    "use a value between " + std::to_string(min) + " and " + std::to_string(max));
            return;
        }
        out = static_cast<Int>(value);
    }

    void number(const char* key, double& out, double min, double max)
    {
        const Json* v = lookup(key);
        if (!v)
            return;
        if (!v->is_number()) {
            problem(key, "expected a number, got " + describeJsonType(*v),
                    v->is_string() ? "write it without quotes, as a number" : "write a number");
            return;
        }
        const double value = v->get<double>();
        if (!(value >= min && value <= max)) {
            problem(key, v->dump() + " is out of range [" + formatNumber(min) + ", " + formatNumber(max) + "]",
                    "use a value between " + formatNumber(min) + " and " + formatNumber(max));
            return;
        }
        out = value;
    }

    template <typename Int>
    void optionalInteger(const char* key, Int& out, int64_t min, int64_t max, Int) { integer(key, out, min, max); }
    void optionalNumber(const char* key, double& out, double min, double max, double) { number(key, out, min, max); }
    void optionalBoolean(const char* key, bool& out, bool) { boolean(key, out); }

    void boolean(const char* key, bool& out)
    {
        const Json* v = lookup(key);
        if (!v)
            return;
        if (!v->is_boolean()) {
            problem(key, "expected true or false, got " + describeJsonType(*v), "write true or false without quotes");
            return;
        }
        out = v->get<bool>();
    }

    void toggle(const char* key, Toggle& out)
    {
        const Json* v = lookup(key);
        if (!v)
            return;
        if (v->is_boolean()) {
            out = v->get<bool>() ? Toggle::On : Toggle::Off;
            return;
        }
        if (v->is_string() && v->get_ref<const std::string&>() == "auto") {
            out = Toggle::Auto;
            return;
        }
        problem(key,
                "expected true, false or \"auto\", got " +
                    (v->is_string() ? "\"" + v->get<std::string>() + "\"" : describeJsonType(*v)),
                "write true or false without quotes, or \"auto\"");
    }

    void text(const char* key, std::string& out)
    {
        const Json* v = lookup(key);
        if (!v)
            return;
        if (!v->is_string()) {
            problem(key, "expected a string, got " + describeJsonType(*v), "put the value in double quotes");
            return;
        }
        // A name or path travels in the run's meta line and the store: bounded, so that one
        // metrics line never grows to megabytes (issue 20 item 4: a 5 MB name stalled `watch`).
        constexpr size_t kMaxText = 4096;
        if (v->get_ref<const std::string&>().size() > kMaxText) {
            problem(key, "is " + std::to_string(v->get_ref<const std::string&>().size()) + " bytes long, more than the " +
                             std::to_string(kMaxText) + " a name or path may have",
                    "use a shorter value");
            return;
        }
        out = v->get<std::string>();
    }

    void choice(const char* key, std::string& out, const std::vector<std::string>& allowed)
    {
        std::string value = out;
        const size_t before = m_problems.size();
        text(key, value);
        if (m_problems.size() != before)
            return;
        if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
            problem(key, "\"" + value + "\" is not one of " + joinQuoted(allowed), "use one of " + joinQuoted(allowed));
            return;
        }
        out = value;
    }

    void intList(const char* key, std::vector<int>& out, int min, int max)
    {
        const Json* v = lookup(key);
        if (!v)
            return;
        if (!v->is_array()) {
            problem(key, "expected an array of integers, got " + describeJsonType(*v), "write it as [a, b, ...]");
            return;
        }
        std::vector<int> values;
        for (size_t i = 0; i < v->size(); ++i) {
            const Json& item = (*v)[i];
            if (!item.is_number_integer() || item.get<int64_t>() < min || item.get<int64_t>() > max) {
                problem(key, "element " + std::to_string(i) + " (" + item.dump() + ") is not an integer in [" +
                                 std::to_string(min) + ", " + std::to_string(max) + "]",
                        "use whole numbers between " + std::to_string(min) + " and " + std::to_string(max));
                return;
            }
            values.push_back(item.get<int>());
        }
        out = std::move(values);
    }

    void choiceList(const char* key, std::vector<std::string>& out, const std::vector<std::string>& allowed)
    {
        const Json* v = lookup(key);
        if (!v)
            return;
        if (!v->is_array()) {
            problem(key, "expected an array of strings, got " + describeJsonType(*v),
                    "write it as [\"a\", \"b\"] with values from " + joinQuoted(allowed));
            return;
        }
        std::vector<std::string> values;
        for (const Json& item : *v) {
            if (!item.is_string() || std::find(allowed.begin(), allowed.end(), item.get<std::string>()) == allowed.end()) {
                problem(key, item.dump() + " is not one of " + joinQuoted(allowed), "use values from " + joinQuoted(allowed));
                return;
            }
            values.push_back(item.get<std::string>());
        }
        out = std::move(values);
    }

private:
    struct Frame {
        const Json* object;
        std::string path;
        std::set<std::string> known;
    };

    std::string pathOf(const char* key) const
    {
        const std::string& base = m_stack.back().path;
        return base.empty() ? std::string(key) : base + "." + key;
    }

    const Json* lookup(const char* key)
    {
        Frame& frame = m_stack.back();
        frame.known.insert(key);
        auto it = frame.object->find(key);
        return it == frame.object->end() ? nullptr : &*it;
    }

    void problem(const char* key, std::string message, std::string fix)
    {
        m_problems.push_back({pathOf(key), std::move(message), std::move(fix)});
    }

    void checkUnknown()
    {
        const Frame& frame = m_stack.back();
        for (auto it = frame.object->begin(); it != frame.object->end(); ++it) {
            if (frame.known.count(it.key()))
                continue;
            std::string best;
            size_t bestDistance = 4;  // suggest only near misses
            for (const std::string& known : frame.known) {
                const size_t d = boundedEditDistance(it.key(), known, bestDistance);
                const bool prefix = known.rfind(it.key(), 0) == 0 || it.key().rfind(known, 0) == 0;
                if (d < bestDistance || (prefix && best.empty())) {
                    bestDistance = std::min(d, bestDistance);
                    best = known;
                }
            }
            const std::string path = frame.path.empty() ? it.key() : frame.path + "." + it.key();
            m_problems.push_back({path, "unknown key",
                                  best.empty() ? "remove it; valid keys here are: " + joinQuoted({frame.known.begin(), frame.known.end()})
                                               : "did you mean \"" + best + "\"? Correct the spelling or remove it"});
        }
    }

    std::vector<ConfigProblem>& m_problems;
    std::vector<Frame> m_stack;
};

// Writes the config as ordered JSON in field-list order.
class Writer {
public:
    OrderedJson root = OrderedJson::object();

    Writer() { m_stack.push_back(&root); }
    void begin(const Json&) {}
    void end() {}

    template <typename Fn>
    void section(const char* key, Fn&& body)
    {
        OrderedJson& child = (*m_stack.back())[key] = OrderedJson::object();
        m_stack.push_back(&child);
        body();
        m_stack.pop_back();
    }
    template <typename Int>
    void integer(const char* key, Int& v, int64_t, int64_t) { (*m_stack.back())[key] = v; }
    void number(const char* key, double& v, double, double) { (*m_stack.back())[key] = v; }
    void boolean(const char* key, bool& v) { (*m_stack.back())[key] = v; }
    void toggle(const char* key, Toggle& v)
    {
        if (v == Toggle::Auto)
            (*m_stack.back())[key] = "auto";
        else
            (*m_stack.back())[key] = v == Toggle::On;
    }
    template <typename Int>
    void optionalInteger(const char* key, Int& v, int64_t, int64_t, Int plain)
    {
        if (v != plain)
            (*m_stack.back())[key] = v;
    }
    void optionalNumber(const char* key, double& v, double, double, double plain)
    {
        if (v != plain)
            (*m_stack.back())[key] = v;
    }
    void optionalBoolean(const char* key, bool& v, bool plain)
    {
        if (v != plain)
            (*m_stack.back())[key] = v;
    }
    void text(const char* key, std::string& v) { (*m_stack.back())[key] = v; }
    void choice(const char* key, std::string& v, const std::vector<std::string>&) { (*m_stack.back())[key] = v; }
    void intList(const char* key, std::vector<int>& v, int, int) { (*m_stack.back())[key] = v; }
    void choiceList(const char* key, std::vector<std::string>& v, const std::vector<std::string>&) { (*m_stack.back())[key] = v; }

private:
    std::vector<OrderedJson*> m_stack;
};

const std::vector<std::string> kRecomputeModules = {"core_attn", "moe_act", "layernorm", "mla_up_proj",
                                                    "mlp", "moe", "shared_experts"};
const std::vector<std::string> kCudaGraphScopes = {"attn", "mlp", "moe", "moe_router", "moe_preprocess"};

// The one list of fields: JSON key, member, and the range a value must lie in.
template <typename V>
void visitConfig(V& v, RunConfig& c)
{
    v.text("name", c.name);
    v.section("model", [&] {
        v.section("vision", [&] {
            VisionConfig& m = c.model.vision;
            v.integer("num_layers", m.numLayers, 0, 1024);
            v.integer("hidden_size", m.hiddenSize, 1, 65536);
            v.integer("ffn_hidden_size", m.ffnHiddenSize, 1, 262144);
            v.integer("num_attention_heads", m.numAttentionHeads, 1, 1024);
            v.integer("patch_size", m.patchSize, 1, 1024);
            v.integer("temporal_patch_size", m.temporalPatchSize, 1, 16);
            v.integer("spatial_merge_size", m.spatialMergeSize, 1, 16);
            v.integer("in_channels", m.inChannels, 1, 16);
            v.intList("deepstack_layers", m.deepstackLayers, 0, 1023);
        });
        v.section("decoder", [&] {
            DecoderConfig& m = c.model.decoder;
            v.integer("num_layers", m.numLayers, 1, 1024);
            v.integer("hidden_size", m.hiddenSize, 1, 65536);
            v.integer("num_attention_heads", m.numAttentionHeads, 1, 1024);
            v.integer("num_query_groups", m.numQueryGroups, 1, 1024);
            v.integer("kv_channels", m.kvChannels, 2, 1024);
            v.integer("num_moe_experts", m.numMoeExperts, 1, 4096);
            v.integer("moe_router_topk", m.moeRouterTopk, 1, 4096);
            v.integer("moe_ffn_hidden_size", m.moeFfnHiddenSize, 1, 262144);
            v.number("moe_aux_loss_coeff", m.moeAuxLossCoeff, 0.0, 10.0);
            v.choice("moe_router_dtype", m.moeRouterDtype, {"fp32", "fp64"});
            v.integer("vocab_size", m.vocabSize, 2, 4'000'000);
            v.number("rotary_base", m.rotaryBase, 1.0, 1e12);
            v.intList("mrope_section", m.mropeSection, 1, 512);
            v.number("norm_epsilon", m.normEpsilon, 1e-12, 1e-1);
            // Written only when they differ from the plain decoder (config hashes stay as they were).
            const DecoderConfig plain;
            v.optionalNumber("rotary_percent", m.rotaryPercent, 0.01, 1.0, plain.rotaryPercent);
            v.optionalBoolean("attention_output_gate", m.attentionOutputGate, plain.attentionOutputGate);
            v.optionalInteger("linear_attention_freq", m.linearAttentionFreq, 0, 1024, plain.linearAttentionFreq);
            v.optionalInteger("linear_num_key_heads", m.linearNumKeyHeads, 1, 1024, plain.linearNumKeyHeads);
            v.optionalInteger("linear_num_value_heads", m.linearNumValueHeads, 1, 1024, plain.linearNumValueHeads);
            v.optionalInteger("linear_key_head_dim", m.linearKeyHeadDim, 1, 1024, plain.linearKeyHeadDim);
            v.optionalInteger("linear_value_head_dim", m.linearValueHeadDim, 1, 1024, plain.linearValueHeadDim);
            v.optionalInteger("linear_conv_kernel_dim", m.linearConvKernelDim, 1, 64, plain.linearConvKernelDim);
            v.optionalInteger("moe_shared_expert_intermediate_size", m.moeSharedExpertFfnHiddenSize, 0, 262144,
                              plain.moeSharedExpertFfnHiddenSize);
            v.optionalBoolean("moe_shared_expert_gate", m.moeSharedExpertGate, plain.moeSharedExpertGate);
            v.optionalInteger("mtp_num_layers", m.mtpNumLayers, 0, 64, plain.mtpNumLayers);
        });
        v.boolean("freeze_vision_model", c.model.freezeVisionModel);
        v.boolean("freeze_vision_projection", c.model.freezeVisionProjection);
        v.boolean("freeze_language_model", c.model.freezeLanguageModel);
    });
    v.section("train", [&] {
        TrainConfig& t = c.train;
        v.integer("train_iters", t.trainIters, 1, kMaxInt64);
        v.integer("micro_batch_size", t.microBatchSize, 1, 65536);
        v.integer("global_batch_size", t.globalBatchSize, 1, 1 << 24);
        v.integer("seq_length", t.seqLength, 8, 1 << 22);
        v.number("lr", t.lr, 0.0, 10.0);
        v.number("min_lr", t.minLr, 0.0, 10.0);
        v.integer("lr_warmup_iters", t.lrWarmupIters, 0, kMaxInt64);
        v.choice("lr_decay_style", t.lrDecayStyle, {"cosine", "linear", "constant"});
        v.number("weight_decay", t.weightDecay, 0.0, 10.0);
        v.number("clip_grad", t.clipGrad, 0.0, 1e6);
        v.number("adam_beta1", t.adamBeta1, 0.0, 0.999999);
        v.number("adam_beta2", t.adamBeta2, 0.0, 0.999999999);
        v.number("adam_eps", t.adamEps, 1e-30, 1.0);
        v.integer("seed", t.seed, 0, kMaxInt64);
        v.choice("precision", t.precision, {"fp32", "bf16"});
        v.choice("exp_avg_dtype", t.expAvgDtype, {"fp32", "bf16"});
        v.choice("exp_avg_sq_dtype", t.expAvgSqDtype, {"fp32", "bf16"});
        v.toggle("overlap_optimizer", t.overlapOptimizer);
        v.boolean("bf16_weight_copies", t.bf16WeightCopies);
        v.boolean("bf16_gradients", t.bf16Gradients);
        v.integer("checkpoint_interval", t.checkpointInterval, 0, kMaxInt64);
        v.integer("log_interval", t.logInterval, 1, kMaxInt64);
    });
    v.section("data", [&] {
        DataConfig& d = c.data;
        v.choice("source", d.source, {"real", "mock"});
        v.text("manifest", d.manifest);
        v.integer("min_pixels", d.minPixels, 1, int64_t(1) << 40);
        v.integer("max_pixels", d.maxPixels, 1, int64_t(1) << 40);
        v.integer("mock_image_size", d.mockImageSize, 0, 16384);
        v.integer("images_per_sample", d.imagesPerSample, 0, 64);
        v.integer("caption_max_tokens", d.captionMaxTokens, 1, 1 << 20);
        v.integer("num_workers", d.numWorkers, 0, 256);
        v.integer("prefetch_batches", d.prefetchBatches, 1, 1024);
    });
    v.section("parallel", [&] {
        ParallelConfig& p = c.parallel;
        v.integer("tensor_model_parallel_size", p.tensorModelParallelSize, 1, 1024);
        v.integer("pipeline_model_parallel_size", p.pipelineModelParallelSize, 1, 1024);
        v.integer("virtual_pipeline_model_parallel_size", p.virtualPipelineModelParallelSize, 1, 1024);
        v.integer("context_parallel_size", p.contextParallelSize, 1, 1024);
        v.integer("expert_model_parallel_size", p.expertModelParallelSize, 1, 4096);
        v.integer("expert_tensor_parallel_size", p.expertTensorParallelSize, 1, 1024);
        v.boolean("sequence_parallel", p.sequenceParallel);
        v.boolean("use_megatron_fsdp", p.useMegatronFsdp);
        v.choice("data_parallel_sharding_strategy", p.dataParallelShardingStrategy,
                 {"no_shard", "optim", "optim_grads", "optim_grads_params"});
        v.boolean("overlap_grad_reduce", p.overlapGradReduce);
        v.boolean("grad_reduce_in_fp32", p.gradReduceInFp32);
        v.boolean("fsdp_reshard_after_forward", p.fsdpReshardAfterForward);
        v.integer("num_layers_in_first_pipeline_stage", p.numLayersInFirstPipelineStage, 0, 1024);
        v.integer("num_layers_in_last_pipeline_stage", p.numLayersInLastPipelineStage, 0, 1024);
        v.choice("moe_token_dispatcher_type", p.moeTokenDispatcherType, {"allgather", "alltoall", "flex"});
        v.choice("moe_flex_dispatcher_backend", p.moeFlexDispatcherBackend, {"", "deepep", "hybridep", "ncclep"});
    });
    v.section("recompute", [&] {
        RecomputeConfig& r = c.recompute;
        v.choice("granularity", r.granularity, {"none", "selective", "full"});
        v.choice("method", r.method, {"uniform", "block"});
        v.integer("recompute_num_layers", r.recomputeNumLayers, 0, 1024);
        v.choiceList("modules", r.modules, kRecomputeModules);
    });
    v.section("cuda_graph", [&] {
        CudaGraphConfig& g = c.cudaGraph;
        v.choice("impl", g.impl, {"none", "local", "transformer_engine", "full_iteration"});
        v.choiceList("scope", g.scope, kCudaGraphScopes);
        v.integer("warmup_steps", g.warmupSteps, 0, 1000);
    });
    v.section("runtime", [&] {
        v.choice("device", c.runtime.device, {"cpu", "cuda"});
        v.integer("num_threads", c.runtime.numThreads, 0, 4096);
    });
}

}  // namespace

bool overlapOptimizerFits(double reservedBytes, double gradientBytes, double deviceBytes)
{
    return deviceBytes > 0 && reservedBytes + gradientBytes <= 0.9 * deviceBytes;
}

std::string ConfigProblem::toString() const
{
    std::string out = path.empty() ? message : path + ": " + message;
    if (!fix.empty())
        out += " — fix: " + fix;
    return out;
}

std::string formatProblems(const std::vector<ConfigProblem>& problems)
{
    std::string out;
    for (const ConfigProblem& p : problems) {
        if (!out.empty())
            out += '\n';
        out += p.toString();
    }
    return out;
}

RunConfigParse parseRunConfig(std::string_view jsonText)
{
    RunConfigParse result;
    Json root = Json::parse(jsonText.begin(), jsonText.end(), nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded()) {
        // Re-parse with exceptions only to get the position; the message names line and column.
        // A number beyond double range (1e999) is not a syntax error: the library reports it as
        // out_of_range 406, which must become the same clear problem, never an uncaught exception.
        std::string where;
        bool overflow = false;
        try {
            Json ignored = Json::parse(jsonText.begin(), jsonText.end());
            (void)ignored;
        } catch (const Json::out_of_range& e) {
            where = e.what();
            overflow = e.id == 406;
        } catch (const Json::exception& e) {
            where = e.what();
        }
        if (overflow)
            result.problems.push_back({"", "a number in the file is beyond the range of a double (" + where + ")",
                                       "write a finite value (at most about 1.8e308), e.g. 3e-4 for a learning rate"});
        else
            result.problems.push_back({"", "the file is not valid JSON (" + where + ")",
                                       "fix the syntax at the position given (a missing comma or quote is typical)"});
        return result;
    }
    if (!root.is_object()) {
        result.problems.push_back({"", "the top level must be a JSON object, got " + describeJsonType(root),
                                   "write the config as { \"model\": {...}, \"train\": {...}, ... }"});
        return result;
    }
    result.readable = true;
    Reader reader(result.problems);
    reader.begin(root);
    visitConfig(reader, result.config);
    reader.end();
    // Consistency checks run on the values that parsed; their messages stand on their own.
    for (ConfigProblem& p : validateRunConfig(result.config))
        result.problems.push_back(std::move(p));
    return result;
}

std::string runConfigToJson(const RunConfig& config)
{
    Writer writer;
    visitConfig(writer, const_cast<RunConfig&>(config));  // Writer only reads
    return writer.root.dump(2);
}

std::string runConfigHash(const RunConfig& config)
{
    const std::string text = runConfigToJson(config);
    uint64_t h = 1469598103934665603ull;
    for (unsigned char ch : text) {
        h ^= ch;
        h *= 1099511628211ull;
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

}  // namespace wb::core
