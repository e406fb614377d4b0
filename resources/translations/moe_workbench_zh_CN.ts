<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>wb::ui::PlanConfigPreview</name>
    <message>
        <location filename="../../ui/plan_config_preview.cpp" line="+23"/>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Save…</source>
        <translation>保存…</translation>
    </message>
    <message>
        <location line="+62"/>
        <source>Copied %1 to the clipboard.</source>
        <translation>已将 %1 复制到剪贴板。</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Save %1</source>
        <translation>保存 %1</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Cannot save %1: %2</source>
        <translation>无法保存 %1：%2</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Saved %1.</source>
        <translation>已保存 %1。</translation>
    </message>
</context>
<context>
    <name>wb::ui::PlanGuidePanel</name>
    <message>
        <location filename="../../ui/plan_guide_panel.cpp" line="+38"/>
        <source>Is this the first launch of this VLM?</source>
        <translation>这是该视觉语言模型的首次启动吗？</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The guide&apos;s workflow starts with a first reliable run under FSDP, the simplest way to get multimodal training running.</source>
        <translation>指南的工作流程是先用 FSDP 获得首次可靠运行——这是跑通多模态训练最简单的方式。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Does the model already run stably under FSDP?</source>
        <translation>模型已经在 FSDP 下稳定运行了吗？</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>3D parallel has the higher ceiling once tuned; move to it after FSDP is stable.</source>
        <translation>3D 并行调优后可达到更高上限；在 FSDP 稳定之后再转向它。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Are the pipeline stage boundaries clean and reproducible?</source>
        <translation>流水线（PP）阶段边界清晰且可重复吗？</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Awkward boundaries between embedding, vision module and decoder favour FSDP; a clean PP layout favours 3D parallel.</source>
        <translation>嵌入层、视觉模块和解码器之间的阶段边界不理想时选择 FSDP；PP 布局清晰时选择 3D 并行。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Does fitting in memory matter more than throughput?</source>
        <translation>内存适配比吞吐量更重要吗？</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>FSDP fits best when memory is the constraint; 3D parallel when the goal is steady-state throughput.</source>
        <translation>内存是瓶颈时 FSDP 最合适；目标是最佳稳态吞吐量时选择 3D 并行。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Decoder-focused tuning with the vision module frozen?</source>
        <translation>以解码器为重点调优，并冻结视觉模块？</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Frozen vision is a natural fit for FSDP (about +5% throughput and less memory pressure).</source>
        <translation>冻结视觉模块与 FSDP 自然适配（吞吐量约提升 5%，并降低内存压力）。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Is there time to test MBS, recompute and CUDA-graph scope together?</source>
        <translation>是否有时间同时测试 MBS、重计算和 CUDA 图范围？</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>3D parallel is more sensitive to these knobs; it pays off only with time for deeper testing.</source>
        <translation>3D 并行对这些调优项更敏感；只有在有时间进行更深入的测试时才值得。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Decision guide: FSDP first or 3D parallel?</source>
        <translation>决策指南：先用 FSDP 还是 3D 并行？</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>not answered</source>
        <translation>未回答</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>yes</source>
        <translation>是</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>no</source>
        <translation>否</translation>
    </message>
    <message>
        <location line="+24"/>
        <source>Throughput will be measured on mock data (no images)</source>
        <translation>将使用模拟数据（不含图像）测量吞吐量</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>I will compare FSDP runs against 3D runs</source>
        <translation>我将比较 FSDP 运行与 3D 并行运行</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Recommendation</source>
        <translation>建议</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>Rules that fired:</source>
        <translation>触发的规则：</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Next knobs, in the guide&apos;s order:</source>
        <translation>关键调优项（按指南顺序）：</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Cautions:</source>
        <translation>注意事项：</translation>
    </message>
    <message>
        <location line="+37"/>
        <source>FSDP first</source>
        <translation>先用 FSDP</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>3D parallel (TP/PP/EP/ETP)</source>
        <translation>3D 并行（TP/PP/EP/ETP）</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Freeze the vision module when the work is decoder-focused: a small but real throughput gain (about +5%) and less memory pressure.</source>
        <translation>酌情冻结视觉模块：如果工作重点是解码器，冻结视觉模块通常能带来小幅但实际的吞吐量提升（约 5%），并降低内存压力。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Test MBS aggressively: VLMs are more MBS-sensitive than text-only MoE (MBS 4 nearly doubled 3D-parallel throughput vs MBS 1), as long as the vision encoder does not become the new bottleneck.</source>
        <translation>积极测试 MBS：与纯文本 MoE 运行相比，视觉语言模型对 MBS 更敏感（MBS 4 使 3D 并行吞吐量接近 MBS 1 的两倍），前提是视觉编码器不会成为新的瓶颈。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Once the model fits, prefer selective recompute; full recompute is a bring-up tool.</source>
        <translation>模型适配后优先采用选择性重计算：完全重计算是有用的启动工具。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Match the CUDA-graph scope to the workload: attn moe_router moe_preprocess is the safer MoE default; for Qwen3-VL in Megatron-Bridge use moe_router moe_preprocess.</source>
        <translation>让 CUDA 图范围与工作负载匹配：attn moe_router moe_preprocess 是更稳妥的 MoE 默认选项；Megatron-Bridge 中的 Qwen3-VL 使用 moe_router moe_preprocess。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Use ETP only when EP is not enough: it unlocks some layouts but adds communication and tuning dimensions.</source>
        <translation>仅在 EP 不足时使用 ETP：它可以解锁某些布局，但也会带来更多通信开销和更多调优维度。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Mock multimodal data misleads: runs without images looked about 2x faster than real multimodal input.</source>
        <translation>模拟的多模态数据容易产生误导：与真实多模态输入相比，不含图像的模拟运行看起来速度大约快一倍。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The vision encoder can dominate unexpectedly: profile encoder, projector and decoder separately before blaming the dispatcher.</source>
        <translation>视觉编码器的耗时可能出乎意料地占主导：在将所有问题归因于调度器之前，请分别分析编码器、投影器和解码器的性能。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Never compare FSDP and 3D runs whose effective work differs: normalize by effective tokens and workload shape, not step time alone.</source>
        <translation>不要比较有效工作量不同的 FSDP 和 3D 并行运行：应按有效 token 数和工作负载形状进行归一化，而不只是比较步耗时。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>ETP is not free: a fitting/topology tool, not a default.</source>
        <translation>ETP 并非没有代价：将其用作模型适配或拓扑工具，而非默认选项。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Recompute and CUDA-graph choices are coupled: the setting that makes a model fit is often not the fastest steady-state setting.</source>
        <translation>重计算和 CUDA 图的选择相互关联：让模型能够适配的设置，往往并非稳态速度最佳的设置。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>HybridEP is the reliable default dispatcher on GB200-class systems.</source>
        <translation>HybridEP 是 GB200 级系统上的可靠默认调度器。</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Listed for completeness; not relevant to these answers.</source>
        <translation>仅为完整列出；与当前回答无关。</translation>
    </message>
</context>
<context>
    <name>wb::ui::PlanLayoutModel</name>
    <message>
        <location filename="../../ui/plan_layout_model.cpp" line="+44"/>
        <source>weights</source>
        <translation>权重</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>grads</source>
        <translation>梯度</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>optimizer</source>
        <translation>优化器</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>activations</source>
        <translation>激活</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>other</source>
        <translation>其他</translation>
    </message>
    <message>
        <location line="+115"/>
        <source>#</source>
        <translation>#</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Recompute</source>
        <translation>重计算</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Dispatcher</source>
        <translation>调度器</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>CUDA graphs</source>
        <translation>CUDA 图</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Memory (of HBM)</source>
        <translation>内存（占 HBM）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Step ms</source>
        <translation>步耗时 ms</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Tokens/s/GPU</source>
        <translation>token/s/GPU</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>TFLOP/s/GPU</source>
        <translation>TFLOP/s/GPU</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>MFU</source>
        <translation>MFU</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Lint</source>
        <translation>检查</translation>
    </message>
</context>
<context>
    <name>wb::ui::PlanMemoryBarDelegate</name>
    <message>
        <location filename="../../ui/plan_memory_bar_delegate.cpp" line="+60"/>
        <source>%1 / %2 GiB</source>
        <translation>%1 / %2 GiB</translation>
    </message>
</context>
<context>
    <name>wb::ui::PlanningView</name>
    <message>
        <location filename="../../ui/planning_view.cpp" line="+65"/>
        <source>Plan a training run</source>
        <translation>规划训练运行</translation>
    </message>
    <message>
        <location line="+31"/>
        <source>Cannot load the model and hardware catalog: %1</source>
        <translation>无法加载模型和硬件目录：%1</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Model, cluster and workload</source>
        <translation>模型、集群与工作负载</translation>
    </message>
    <message>
        <location line="+26"/>
        <source>of</source>
        <translation>张，尺寸</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>px</source>
        <translation>像素</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Throughput (tokens/s/GPU)</source>
        <translation>吞吐量（token/s/GPU）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Least memory</source>
        <translation>最少内存</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>First run (FSDP, simple)</source>
        <translation>首次运行（FSDP，简单）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Freeze the vision encoder and projector</source>
        <translation>冻结视觉编码器和投影器</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Plan</source>
        <translation>规划</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Hardware</source>
        <translation>硬件</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Nodes × GPUs per node</source>
        <translation>节点数 × 每节点 GPU 数</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Sequence length</source>
        <translation>序列长度</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Images per sample</source>
        <translation>每个样本的图像</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Global batch size</source>
        <translation>全局批大小（GBS）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Goal</source>
        <translation>目标</translation>
    </message>
    <message numerus="yes">
        <location line="+5"/>
        <source>= %n GPU(s)</source>
        <translation>
            <numerusform>= %n 个 GPU</numerusform>
        </translation>
    </message>
    <message>
        <location line="+17"/>
        <source>Choose a model and a cluster, answer the guide&apos;s questions, then press Plan.</source>
        <translation>选择模型和集群，回答指南中的问题，然后点击“规划”。</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Memory bar:</source>
        <translation>内存条：</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>(width = the GPU&apos;s HBM; dashed: the headroom limit)</source>
        <translation>（宽度 = GPU 的 HBM；虚线：预留余量上限）</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Lint findings for the selected layout</source>
        <translation>所选布局的检查结果</translation>
    </message>
    <message numerus="yes">
        <location line="+107"/>
        <source>Searching layouts for %1 on %n GPU(s)…</source>
        <translation>
            <numerusform>正在为 %1 在 %n 个 GPU 上搜索布局…</numerusform>
        </translation>
    </message>
    <message>
        <location line="+31"/>
        <source>%1 candidates evaluated in %2 ms: %3 over memory, %4 rejected by lint, %5 ranked.</source>
        <translation>在 %2 ms 内评估了 %1 个候选：%3 个超出内存，%4 个未通过检查，%5 个参与排名。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>No layout fits: %1</source>
        <translation>没有可用的布局：%1</translation>
    </message>
    <message>
        <location line="+28"/>
        <source>No findings: the layout passes every lint rule.</source>
        <translation>无问题：该布局通过所有检查规则。</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Runtime JSON</source>
        <translation>运行时 JSON</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Megatron-Bridge YAML</source>
        <translation>Megatron-Bridge YAML</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Megatron-Bridge dotlist</source>
        <translation>Megatron-Bridge dotlist</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>sbatch</source>
        <translation>sbatch</translation>
    </message>
</context>
</TS>
