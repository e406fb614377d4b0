<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>main</name>
    <message>
        <location filename="../../app/gui/main.cpp" line="+134"/>
        <source>MoE-VLM Workbench</source>
        <translation>MoE-VLM 工作台</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Plan, launch, watch and compare MoE vision-language training runs.</source>
        <translation>规划、启动、监视和比较 MoE 视觉语言模型的训练运行。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Run store (SQLite file).</source>
        <translation>运行存储（SQLite 文件）。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Folder for local run directories.</source>
        <translation>本地运行目录所在的文件夹。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Start the bundled sample run right away and watch it.</source>
        <translation>立即启动内置的示例运行并监视它。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Steps for the sample run (default: the config&apos;s).</source>
        <translation>示例运行的步数（默认：配置中的值）。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Config for &quot;Start sample run&quot; instead of the embedded sample-tiny.json.</source>
        <translation>“启动示例运行”使用的配置，代替内嵌的 sample-tiny.json。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Save a PNG of the main window (for docs).</source>
        <translation>保存主窗口的 PNG 截图（用于文档）。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Delay before the screenshot (default 5000).</source>
        <translation>截图前的延迟（默认 5000）。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Exit once the screenshot is saved.</source>
        <translation>截图保存后退出。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Open the planning view at start (the screenshot shows it).</source>
        <translation>启动时打开规划视图（截图显示该视图）。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>UI language, e.g. zh_CN (default: the system locale).</source>
        <translation>界面语言，例如 zh_CN（默认：系统区域设置）。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Open a dialog at start: hosts, launch, import or compare (the screenshot shows it).</source>
        <translation>启动时打开一个对话框：hosts、launch、import 或 compare（截图会显示它）。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Config file (or Megatron-Bridge job folder) to fill in with --show launch (the log with --show import).</source>
        <translation>与 --show launch 一起填入的配置文件（或 Megatron-Bridge 作业文件夹）（与 --show import 一起时为日志）。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>With --show launch: press Launch right away.</source>
        <translation>与 --show launch 一起使用：立即按下“启动”。</translation>
    </message>
</context>
<context>
    <name>wb::ui::CompareChartPanel</name>
    <message>
        <location filename="../../ui/compare_chart_panel.cpp" line="+268"/>
        <source>Step</source>
        <translation>步</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Wall time since the first step (s)</source>
        <translation>自第一步起的墙钟时间（s）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Effective tokens seen</source>
        <translation>已见有效 token</translation>
    </message>
    <message>
        <location line="+113"/>
        <source> (raw)</source>
        <translation>（原始）</translation>
    </message>
    <message>
        <location line="+0"/>
        <source> (smoothed)</source>
        <translation>（平滑）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1
%2: %3
%4: %5%6</source>
        <translation>%1
%2：%3
%4：%5%6</translation>
    </message>
    <message>
        <location line="+36"/>
        <source>Step time</source>
        <translation>步耗时</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Throughput (effective tokens)</source>
        <translation>吞吐量（有效 token）</translation>
    </message>
    <message>
        <location line="+1"/>
        <location line="+1"/>
        <source>Loss</source>
        <translation>损失</translation>
    </message>
    <message>
        <location line="-1"/>
        <source>Peak memory per GPU</source>
        <translation>每 GPU 峰值显存</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Step time (ms)</source>
        <translation>步耗时（ms）</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Tokens/s/GPU</source>
        <translation>token/s/GPU</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Memory (GiB)</source>
        <translation>显存（GiB）</translation>
    </message>
</context>
<context>
    <name>wb::ui::CompareView</name>
    <message>
        <location filename="../../ui/compare_view.cpp" line="+108"/>
        <source>Compare runs</source>
        <translation>比较运行</translation>
    </message>
    <message>
        <location line="+26"/>
        <source>detected (or FIRST:LAST)</source>
        <translation>自动检测（或 起始:结束）</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Step</source>
        <translation>步</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Wall time</source>
        <translation>墙钟时间</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Effective tokens seen</source>
        <translation>已处理的有效 token</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>EMA weight (debiased); the raw series stays faint behind</source>
        <translation>EMA 权重（已去偏）；原始曲线以浅色保留在后面</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Log scale</source>
        <translation>对数刻度</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Log10 y axes (values &lt;= 0 are left out)</source>
        <translation>y 轴取 log10（&lt;= 0 的值不显示）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Shade steady window</source>
        <translation>标出稳态窗口</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Each run&apos;s steady-state window (what the figures cover) in its colour</source>
        <translation>以各运行的颜色标出其稳态窗口（统计数字所覆盖的范围）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Export charts…</source>
        <translation>导出图表…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The four charts as PNG and SVG into a folder</source>
        <translation>将四张图表以 PNG 和 SVG 导出到一个文件夹</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Export report…</source>
        <translation>导出报告…</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Reload runs</source>
        <translation>重新加载运行</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Compare</source>
        <translation>比较</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Loading runs…</source>
        <translation>正在加载运行…</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Baseline</source>
        <translation>基线</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Window</source>
        <translation>窗口</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>X axis</source>
        <translation>X 轴</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Smoothing</source>
        <translation>平滑</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Runs to compare</source>
        <translation>要比较的运行</translation>
    </message>
    <message>
        <location line="+18"/>
        <source>Predicted vs measured: the planner&apos;s prediction of runs launched from a plan (error = (predicted − measured) / measured)</source>
        <translation>预测与实测对比：从规划启动的运行所保存的规划器预测（误差 = (预测 − 实测) / 实测）</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Predicted vs measured</source>
        <translation>预测与实测</translation>
    </message>
    <message>
        <location line="+58"/>
        <source>Pick two or more runs and press Compare.</source>
        <translation>选择两个或更多运行，然后按“比较”。</translation>
    </message>
    <message>
        <location line="+44"/>
        <source>%1  —  %2, %3 steps%4</source>
        <translation>%1  —  %2，%3 步%4</translation>
    </message>
    <message>
        <location line="+57"/>
        <source>Pick at least one run to compare (two or more to see deltas).</source>
        <translation>至少选择一个运行进行比较（选择两个或更多才能看到差值）。</translation>
    </message>
    <message>
        <location line="+110"/>
        <source>⚠ CRITICAL</source>
        <translation>⚠ 严重</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>⚠ Warning</source>
        <translation>⚠ 警告</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Note</source>
        <translation>提示</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>No workload differences: the runs did the same work per step.</source>
        <translation>工作负载无差异：各运行每步的工作量相同。</translation>
    </message>
    <message>
        <location line="+17"/>
        <source> ★ baseline</source>
        <translation> ★ 基线</translation>
    </message>
    <message>
        <location line="+1"/>
        <source> ⚠ %1 data</source>
        <translation> ⚠ %1 数据</translation>
    </message>
    <message>
        <location line="+22"/>
        <source>p10 %1, p90 %2, spread %3 %, %4 steps</source>
        <translation>p10 %1，p90 %2，离散度 %3 %，%4 步</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Steady window (steps)</source>
        <translation>稳态窗口（步）</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Data source</source>
        <translation>数据来源</translation>
    </message>
    <message>
        <location line="+10"/>
        <location line="+85"/>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <location line="-60"/>
        <source>(absent)</source>
        <translation>（无）</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>%1 of %2 config keys differ (the run name is not compared)</source>
        <translation>%2 个配置键中有 %1 个不同（不比较运行名称）</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>peak memory</source>
        <translation>峰值显存</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>step time (ms)</source>
        <translation>步耗时（ms）</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>peak memory (GiB)</source>
        <translation>峰值内存（GiB）</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>effective tokens/s/GPU (tok/s)</source>
        <translation>有效 token/s/GPU（tok/s）</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>MFU (%)</source>
        <translation>MFU（%）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Predicted for</source>
        <translation>预测对象</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>no prediction (not launched from a plan)</source>
        <translation>无预测（不是从规划启动的）</translation>
    </message>
    <message>
        <location line="+18"/>
        <source>predicted %1, measured %2 %3</source>
        <translation>预测 %1，实测 %2 %3</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>%1 × %2</source>
        <translation>%1 × %2</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>mean |error|</source>
        <translation>平均 |误差|</translation>
    </message>
    <message numerus="yes">
        <location line="+3"/>
        <source>%1 % (%n run(s))</source>
        <translation>
            <numerusform>%1 %（%n 个运行）</numerusform>
        </translation>
    </message>
    <message>
        <location line="+71"/>
        <source>Save the comparison report</source>
        <translation>保存比较报告</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>HTML report (*.html *.htm)</source>
        <translation>HTML 报告 (*.html *.htm)</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Folder for the comparison report</source>
        <translation>比较报告的文件夹</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Folder for the chart images</source>
        <translation>图表图片的文件夹</translation>
    </message>
    <message>
        <location line="-7"/>
        <location line="+12"/>
        <source>Export failed</source>
        <translation>导出失败</translation>
    </message>
    <message>
        <location line="-689"/>
        <source>effective tokens/s/GPU</source>
        <translation>有效 token/s/GPU</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>GPU-ms per 1k eff. tokens</source>
        <translation>每 1k 有效 token 的 GPU 毫秒</translation>
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
        <source>step time</source>
        <translation>步耗时</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>time: data wait</source>
        <translation>时间：等待数据</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>time: vision encoder fwd</source>
        <translation>时间：视觉编码器前向</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>time: projector fwd</source>
        <translation>时间：投影器前向</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>time: decoder fwd + loss</source>
        <translation>时间：解码器前向 + 损失</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>time: backward</source>
        <translation>时间：反向</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>time: optimizer</source>
        <translation>时间：优化器</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>effective tokens/step</source>
        <translation>每步有效 token</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>peak memory, whole run</source>
        <translation>峰值显存（整个运行）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>GPU utilization (mean of GPUs)</source>
        <translation>GPU 利用率（各 GPU 平均）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>GPU power (mean of GPUs)</source>
        <translation>GPU 功率（各 GPU 平均）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>GPU temperature (hottest)</source>
        <translation>GPU 温度（最高）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>SM clock (slowest GPU)</source>
        <translation>SM 时钟（最慢的 GPU）</translation>
    </message>
    <message>
        <location line="+94"/>
        <source>The comparison report: warnings, figures with deltas, predicted vs measured, config diff and the charts</source>
        <translation>比较报告：警告、带差值的统计数字、预测与实测对比、配置差异和图表</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>HTML report (one file, charts inline)…</source>
        <translation>HTML 报告（单个文件，图表内嵌）…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Markdown report (folder with the chart images)…</source>
        <translation>Markdown 报告（含图表图片的文件夹）…</translation>
    </message>
    <message>
        <location line="+578"/>
        <source>Exported</source>
        <translation>已导出</translation>
    </message>
    <message numerus="yes">
        <location line="+1"/>
        <source>Wrote %n file(s) to %1.</source>
        <translation>
            <numerusform>已将 %n 个文件写入 %1。</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>wb::ui::HostKeyDialog</name>
    <message>
        <location filename="../../ui/host_key_dialog.cpp" line="+50"/>
        <source>Unknown host key</source>
        <translation>未知的主机密钥</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>WARNING: host key changed</source>
        <translation>警告：主机密钥已改变</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>&lt;table&gt;&lt;tr&gt;&lt;td&gt;Host:&lt;/td&gt;&lt;td&gt;&lt;b&gt;%1&lt;/b&gt;&lt;/td&gt;&lt;/tr&gt;&lt;tr&gt;&lt;td&gt;Key type:&lt;/td&gt;&lt;td&gt;%2&lt;/td&gt;&lt;/tr&gt;&lt;tr&gt;&lt;td&gt;Fingerprint:&lt;/td&gt;&lt;td&gt;&lt;tt&gt;%3&lt;/tt&gt;&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;</source>
        <translation>&lt;table&gt;&lt;tr&gt;&lt;td&gt;主机：&lt;/td&gt;&lt;td&gt;&lt;b&gt;%1&lt;/b&gt;&lt;/td&gt;&lt;/tr&gt;&lt;tr&gt;&lt;td&gt;密钥类型：&lt;/td&gt;&lt;td&gt;%2&lt;/td&gt;&lt;/tr&gt;&lt;tr&gt;&lt;td&gt;指纹：&lt;/td&gt;&lt;td&gt;&lt;tt&gt;%3&lt;/tt&gt;&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>&lt;p&gt;This computer has never connected to this host before, so it cannot tell whether the key really belongs to it.&lt;/p&gt;%1&lt;p&gt;Compare the fingerprint with the one the host&apos;s administrator gives you (on the host: &lt;tt&gt;ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub&lt;/tt&gt;). Accept only if they match: the key is then recorded in &lt;tt&gt;%2&lt;/tt&gt; and checked on every connection.&lt;/p&gt;</source>
        <translation>&lt;p&gt;这台计算机从未连接过该主机，因此无法判断这个密钥是否真的属于它。&lt;/p&gt;%1&lt;p&gt;请将指纹与主机管理员提供的指纹进行比对（在主机上执行：&lt;tt&gt;ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub&lt;/tt&gt;）。只有两者一致时才接受：密钥随后会记录到 &lt;tt&gt;%2&lt;/tt&gt; 中，并在每次连接时检查。&lt;/p&gt;</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>the entry for this host in &lt;tt&gt;%1&lt;/tt&gt;</source>
        <translation>&lt;tt&gt;%1&lt;/tt&gt; 中该主机的条目</translation>
    </message>
    <message numerus="yes">
        <location line="+1"/>
        <source>line %1 of &lt;tt&gt;%2&lt;/tt&gt;</source>
        <translation>
            <numerusform>&lt;tt&gt;%2&lt;/tt&gt; 的第 %1 行</numerusform>
        </translation>
    </message>
    <message>
        <location line="+2"/>
        <source>&lt;p&gt;&lt;b&gt;The host now presents a different key from the one recorded for it. The connection was refused.&lt;/b&gt;&lt;/p&gt;%1&lt;p&gt;Either someone is intercepting the connection (a man-in-the-middle attack that could read your commands and data), or the host was reinstalled and got a new key. Ask the host&apos;s administrator which it is before doing anything.&lt;/p&gt;&lt;p&gt;Only if they confirm the new key: remove %2, for example with&lt;br&gt;&lt;tt&gt;%3&lt;/tt&gt;&lt;br&gt;then test the connection again to review and accept the new fingerprint.&lt;/p&gt;&lt;p&gt;The workbench never accepts a changed key by itself.&lt;/p&gt;</source>
        <translation>&lt;p&gt;&lt;b&gt;该主机现在提供的密钥与记录的密钥不同。连接已被拒绝。&lt;/b&gt;&lt;/p&gt;%1&lt;p&gt;可能有人正在拦截连接（中间人攻击，可以读取你的命令和数据），也可能是主机重装后生成了新密钥。在做任何操作之前，请先向主机管理员确认是哪一种情况。&lt;/p&gt;&lt;p&gt;只有在管理员确认新密钥之后：删除 %2，例如执行&lt;br&gt;&lt;tt&gt;%3&lt;/tt&gt;&lt;br&gt;然后再次测试连接，核对并接受新的指纹。&lt;/p&gt;&lt;p&gt;工作台绝不会自行接受已改变的密钥。&lt;/p&gt;</translation>
    </message>
    <message>
        <location line="+21"/>
        <source>&amp;Accept and connect</source>
        <translation>接受并连接(&amp;A)</translation>
    </message>
    <message>
        <location line="+125"/>
        <source>Sign in to %1</source>
        <translation>登录 %1</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>SSH sign-in</source>
        <translation>SSH 登录</translation>
    </message>
</context>
<context>
    <name>wb::ui::HostsDialog</name>
    <message>
        <location filename="../../ui/hosts_dialog.cpp" line="+35"/>
        <source>SSH hosts</source>
        <translation>SSH 主机</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Address</source>
        <translation>地址</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>User</source>
        <translation>用户</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Port</source>
        <translation>端口</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>moe-train</source>
        <translation>moe-train</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>&amp;New host</source>
        <translation>新建主机(&amp;N)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>&amp;Remove</source>
        <translation>删除(&amp;R)</translation>
    </message>
    <message>
        <location line="+34"/>
        <source>Name:</source>
        <translation>名称：</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>gpu1</source>
        <translation>gpu1</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>What you pick as the target (ssh:NAME): letters, digits, &apos;.&apos;, &apos;-&apos;, &apos;_&apos;</source>
        <translation>选择目标时使用的名称（ssh:名称）：字母、数字、“.”、“-”、“_”</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Address:</source>
        <translation>地址：</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>same as the name</source>
        <translation>与名称相同</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>An alias from ~/.ssh/config or a host name / IP address; empty = the name</source>
        <translation>~/.ssh/config 中的别名，或主机名 / IP 地址；留空 = 使用名称</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>User:</source>
        <translation>用户：</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>from ~/.ssh/config, else your user name</source>
        <translation>取自 ~/.ssh/config，否则为你的用户名</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Port:</source>
        <translation>端口：</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>from ~/.ssh/config, else 22</source>
        <translation>取自 ~/.ssh/config，否则为 22</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>1 to 65535</source>
        <translation>1 到 65535</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Identity file:</source>
        <translation>身份文件：</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>~/.ssh/id_ed25519 (the agent is tried first)</source>
        <translation>~/.ssh/id_ed25519（优先尝试 ssh-agent）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>A private key file; its passphrase is the agent&apos;s business, never stored here</source>
        <translation>私钥文件；其口令由 ssh-agent 负责，绝不保存在这里</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>moe-train on the host:</source>
        <translation>主机上的 moe-train：</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>auto: built on the host by the workbench</source>
        <translation>auto：由工作台在主机上构建</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Absolute, or starting with ~/ (the remote home)</source>
        <translation>绝对路径，或以 ~/ 开头（远程主目录）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Run directories:</source>
        <translation>运行目录：</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>SSH config file:</source>
        <translation>SSH 配置文件：</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>known_hosts file:</source>
        <translation>known_hosts 文件：</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>&amp;Save host</source>
        <translation>保存主机(&amp;S)</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>&amp;Test connection</source>
        <translation>测试连接(&amp;T)</translation>
    </message>
    <message>
        <location line="+23"/>
        <source>Test connection shows here who you are on the host, its GPUs and whether moe-train is there.</source>
        <translation>“测试连接”会在这里显示你在主机上的身份、主机的 GPU，以及 moe-train 是否存在。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Host</source>
        <translation>主机</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Hosts live in &lt;tt&gt;%1&lt;/tt&gt;. No passwords or keys are stored there.</source>
        <translation>主机保存在 &lt;tt&gt;%1&lt;/tt&gt; 中。其中不保存任何密码或密钥。</translation>
    </message>
    <message>
        <location line="+29"/>
        <source>Cannot read the hosts: %1</source>
        <translation>无法读取主机列表：%1</translation>
    </message>
    <message>
        <location line="+11"/>
        <location line="+1"/>
        <source>(ssh config)</source>
        <translation>（ssh 配置）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>auto</source>
        <translation>自动</translation>
    </message>
    <message>
        <location line="+73"/>
        <source>A name is needed: it is what you pick as the target (ssh:NAME).</source>
        <translation>需要填写名称：选择目标时使用它（ssh:名称）。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Use only letters, digits, &apos;.&apos;, &apos;-&apos; and &apos;_&apos;, not starting with &apos;-&apos; (no &apos;@&apos;, &apos;:&apos; or &apos;,&apos;; put the user and port in their own fields).</source>
        <translation>只能使用字母、数字、“.”、“-”和“_”，且不能以“-”开头（不能含“@”、“:”或“,”；用户和端口请填在各自的字段中）。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>An address is a host name, an IP address or an ssh config alias: letters, digits, &apos;.&apos;, &apos;-&apos;, &apos;_&apos; (user and port go in their own fields).</source>
        <translation>地址是主机名、IP 地址或 ssh 配置别名：字母、数字、“.”、“-”、“_”（用户和端口填在各自的字段中）。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>A user name has no spaces, quotes, &apos;@&apos; or &apos;:&apos;.</source>
        <translation>用户名不能包含空格、引号、“@”或“:”。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>The port must be a whole number from 1 to 65535 (or empty for the ssh config&apos;s).</source>
        <translation>端口必须是 1 到 65535 之间的整数（留空则使用 ssh 配置中的端口）。</translation>
    </message>
    <message>
        <location line="+14"/>
        <location line="+3"/>
        <source>Use an absolute path or one starting with ~/ (the home directory on the host).</source>
        <translation>请使用绝对路径，或以 ~/ 开头的路径（主机上的主目录）。</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>The host was not saved: fix the fields marked in red.</source>
        <translation>主机未保存：请修正标红的字段。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Cannot save the host: %1</source>
        <translation>无法保存主机：%1</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Saved as %1, but the old entry %2 could not be removed: %3</source>
        <translation>已保存为 %1，但无法删除旧条目 %2：%3</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Cannot remove %1: %2</source>
        <translation>无法删除 %1：%2</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Fix the fields marked in red before testing.</source>
        <translation>测试前请先修正标红的字段。</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Connecting to %1…</source>
        <translation>正在连接 %1…</translation>
    </message>
    <message>
        <location line="+38"/>
        <source>Connection failed:
%1</source>
        <translation>连接失败：
%1</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Connected as %1.</source>
        <translation>已连接，身份为 %1。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source> The host key %1 %2 was recorded in known_hosts.</source>
        <translation> 主机密钥 %1 %2 已记录到 known_hosts。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>The node check failed: %1</source>
        <translation>节点检查失败：%1</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>moe-train is not at that path on the host: build the runtime there (cmake -S runtime -B build &amp;&amp; cmake --build build) and enter the path of the built moe-train.</source>
        <translation>主机上该路径下没有 moe-train：请在主机上构建运行时（cmake -S runtime -B build &amp;&amp; cmake --build build），然后填写构建出的 moe-train 的路径。</translation>
    </message>
</context>
<context>
    <name>wb::ui::ImportRunDialog</name>
    <message>
        <location filename="../../ui/import_run_dialog.cpp" line="+22"/>
        <source>Import Megatron-Bridge run</source>
        <translation>导入 Megatron-Bridge 运行</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>A finished Megatron-Bridge (or Megatron-LM) job into the run store: its log (the Slurm output file, or where its stdout went) and, when the job saved it, the resolved config (logger.save_config_filepath). With the model and the GPU, the planner&apos;s prediction for its layout is stored beside what it measured.</source>
        <translation>把一个已完成的 Megatron-Bridge（或 Megatron-LM）作业导入运行库：它的日志（Slurm 输出文件，或其 stdout 的去处），以及作业保存时的解析后配置（logger.save_config_filepath）。给出模型和 GPU 后，规划器对其布局的预测会与实测值一起保存。</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Browse…</source>
        <translation>浏览…</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>&amp;Log:</source>
        <translation>日志(&amp;L)：</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>slurm-1234.out, train.log …</source>
        <translation>slurm-1234.out、train.log …</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>The job&apos;s log</source>
        <translation>作业的日志</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Logs (*.out *.log *.txt *.err);;All files (*)</source>
        <translation>日志 (*.out *.log *.txt *.err);;所有文件 (*)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>&amp;Config (optional):</source>
        <translation>配置（可选）(&amp;C)：</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>the resolved ConfigContainer YAML</source>
        <translation>解析后的 ConfigContainer YAML</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The job&apos;s resolved config</source>
        <translation>作业的解析后配置</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>YAML (*.yaml *.yml);;All files (*)</source>
        <translation>YAML (*.yaml *.yml);;所有文件 (*)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>&amp;TensorBoard (optional):</source>
        <translation>TensorBoard（可选）(&amp;T)：</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>logger.tensorboard_dir</source>
        <translation>logger.tensorboard_dir</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The job&apos;s TensorBoard folder</source>
        <translation>作业的 TensorBoard 文件夹</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>the log&apos;s file name</source>
        <translation>日志的文件名</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>&amp;Name:</source>
        <translation>名称(&amp;N)：</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>(not known: no prediction)</source>
        <translation>（未知：没有预测）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>(not known: no MFU, no prediction)</source>
        <translation>（未知：没有 MFU，没有预测）</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>&amp;Model:</source>
        <translation>模型(&amp;M)：</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>&amp;GPU:</source>
        <translation>GPU(&amp;G)：</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>from the log</source>
        <translation>取自日志</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The world size. Megatron-LM logs it; Bridge does not, then the highest rank prefix (srun -l, torchrun) is used and the import says so.</source>
        <translation>world size。Megatron-LM 会记录它；Bridge 不记录，此时使用最高的 rank 前缀（srun -l、torchrun），导入时会说明。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>GP&amp;Us:</source>
        <translation>GPU 数(&amp;U)：</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>&amp;Import</source>
        <translation>导入(&amp;I)</translation>
    </message>
    <message>
        <location line="+49"/>
        <source>Choose the job&apos;s log.</source>
        <translation>请选择作业的日志。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>No file %1: choose the log the job wrote.</source>
        <translation>没有文件 %1：请选择作业写出的日志。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>No file %1: choose the YAML the job saved, or leave the config empty.</source>
        <translation>没有文件 %1：请选择作业保存的 YAML，或将配置留空。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>No folder %1: choose the run&apos;s logger.tensorboard_dir, or leave it empty.</source>
        <translation>没有文件夹 %1：请选择该运行的 logger.tensorboard_dir，或将其留空。</translation>
    </message>
</context>
<context>
    <name>wb::ui::LaunchDialog</name>
    <message>
        <location filename="../../ui/launch_dialog.cpp" line="+50"/>
        <source>Launch a run</source>
        <translation>启动运行</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>local: this machine. ssh:HOST: a host from Remote → SSH hosts. ssh:HOST1,HOST2: one run over several registered hosts (a launch per node). slurm:HOST: a Slurm cluster through its login host, for hosts with settings in slurm.json; Megatron-Bridge jobs go there only.</source>
        <translation>local：本机。ssh:HOST：“远程 → SSH 主机”中的主机。ssh:HOST1,HOST2：在多台已注册主机上运行一次（每个节点启动一次）。slurm:HOST：通过登录节点访问的 Slurm 集群，适用于在 slurm.json 中有设置的主机；Megatron-Bridge 作业只能提交到这里。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>a runtime config (.json), or the planning view&apos;s</source>
        <translation>运行时配置（.json），或来自规划视图的配置</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>&amp;Browse…</source>
        <translation>浏览(&amp;B)…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Run configuration</source>
        <translation>运行配置</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Run configs (*.json);;All files (*)</source>
        <translation>运行配置 (*.json);;所有文件 (*)</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Megatron-Bridge &amp;job…</source>
        <translation>Megatron-Bridge 作业(&amp;J)…</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>A folder written by `moe-workbench-cli generate --format megatron-bridge` (bridge_job.json, bridge.sbatch, the overrides): submitted on a slurm:HOST target and followed like any run.</source>
        <translation>由 `moe-workbench-cli generate --format megatron-bridge` 写出的文件夹（bridge_job.json、bridge.sbatch 及覆盖配置）：在 slurm:HOST 目标上提交，并像其他运行一样跟踪。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Megatron-Bridge job folder</source>
        <translation>Megatron-Bridge 作业文件夹</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>The config&apos;s JSON appears here; you can edit it before launching.</source>
        <translation>配置的 JSON 显示在这里；启动前可以编辑。</translation>
    </message>
    <message>
        <location line="+13"/>
        <location line="+95"/>
        <source>the config&apos;s name</source>
        <translation>配置中的名称</translation>
    </message>
    <message>
        <location line="-92"/>
        <source>Target:</source>
        <translation>目标：</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Config file:</source>
        <translation>配置文件：</translation>
    </message>
    <message>
        <location line="+1"/>
        <location line="+88"/>
        <source>Config:</source>
        <translation>配置：</translation>
    </message>
    <message>
        <location line="-84"/>
        <source>Run name:</source>
        <translation>运行名称：</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Progress</source>
        <translation>进度</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Check the node</source>
        <translation>检查节点</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Upload the runtime</source>
        <translation>上传运行时</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Build moe-train</source>
        <translation>构建 moe-train</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Start the run</source>
        <translation>启动运行</translation>
    </message>
    <message>
        <location line="+22"/>
        <source>&amp;Launch</source>
        <translation>启动(&amp;L)</translation>
    </message>
    <message>
        <location line="+41"/>
        <source>The registered hosts cannot be read: %1</source>
        <translation>无法读取已注册的主机：%1</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>(from the planning view)</source>
        <translation>（来自规划视图）</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>The plan&apos;s prediction is unusable and will not be stored: %1</source>
        <translation>规划的预测不可用，不会保存：%1</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Predicted by the plan (stored with the run): %1 ms per step, %2 tokens/s per GPU, MFU %3%, %4 GiB on the most-loaded GPU</source>
        <translation>规划的预测（随运行一起保存）：每步 %1 ms，每 GPU %2 token/s，MFU %3%，负载最重的 GPU 上 %4 GiB</translation>
    </message>
    <message>
        <location line="+32"/>
        <source>This plan is for %1 × %2, but the target “local” is this machine (%3). The run will not be what the plan predicts, if it starts at all: launch it on an SSH host or a Slurm cluster with those GPUs.</source>
        <translation>该计划针对 %1 × %2，但目标“local”是本机（%3）。运行不会符合计划的预测，甚至可能无法启动：请在拥有这些 GPU 的 SSH 主机或 Slurm 集群上启动。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>no NVIDIA GPU</source>
        <translation>没有 NVIDIA GPU</translation>
    </message>
    <message numerus="yes">
        <location line="+0"/>
        <source>%n NVIDIA GPU(s)</source>
        <translation>
            <numerusform>%n 块 NVIDIA GPU</numerusform>
        </translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Cannot read %1: %2</source>
        <translation>无法读取 %1：%2</translation>
    </message>
    <message>
        <location line="+34"/>
        <source>Bridge job:</source>
        <translation>Bridge 作业：</translation>
    </message>
    <message>
        <location line="+51"/>
        <source>Pick a target: local, or ssh:HOST for a host registered under Remote → SSH hosts.</source>
        <translation>请选择目标：local，或“远程 → SSH 主机”中已注册主机的 ssh:主机。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Choose a config file (Browse…), a Megatron-Bridge job folder, or open this dialog from the planning view.</source>
        <translation>请选择配置文件（浏览…）、Megatron-Bridge 作业文件夹，或从规划视图打开此对话框。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>A Megatron-Bridge job is submitted with sbatch: choose a slurm:HOST target (a host registered under Remote → SSH hosts, with its Slurm settings).</source>
        <translation>Megatron-Bridge 作业通过 sbatch 提交：请选择 slurm:HOST 目标（在“远程 → SSH 主机”中注册并带有 Slurm 设置的主机）。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>This window has no run session to launch with.</source>
        <translation>此窗口没有可用于启动的运行会话。</translation>
    </message>
    <message>
        <location line="+45"/>
        <source>working…</source>
        <translation>进行中…</translation>
    </message>
    <message>
        <location line="+21"/>
        <source>To review and accept the key: Remote → SSH hosts, select the host, Test connection.</source>
        <translation>要核对并接受该密钥：打开“远程 → SSH 主机”，选择该主机，然后点击“测试连接”。</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>started: run %1</source>
        <translation>已启动：运行 %1</translation>
    </message>
</context>
<context>
    <name>wb::ui::MainWindow</name>
    <message>
        <location filename="../../ui/main_window.cpp" line="+46"/>
        <source>MoE-VLM Workbench</source>
        <translation>MoE-VLM 工作台</translation>
    </message>
    <message>
        <location line="+35"/>
        <source>Start &amp;sample run</source>
        <translation>启动示例运行(&amp;S)</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Train the small bundled sample model on this machine and watch it live</source>
        <translation>在本机训练内置的小型示例模型并实时监视</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>&amp;Cancel run</source>
        <translation>取消运行(&amp;C)</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Stop the selected run (its whole process group)</source>
        <translation>停止所选运行（其整个进程组）</translation>
    </message>
    <message>
        <location line="+277"/>
        <source>Rename run</source>
        <translation>重命名运行</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>New name for run %1:</source>
        <translation>运行 %1 的新名称：</translation>
    </message>
    <message>
        <location line="+17"/>
        <source>Delete run</source>
        <translation>删除运行</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Delete run “%1” (%2) from the run store?</source>
        <translation>从运行库中删除运行“%1”（%2）？</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Its steps, events, config and prediction are removed; this cannot be undone.</source>
        <translation>它的步、事件、配置和预测都会被删除；此操作无法撤销。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Also delete its run directory %1</source>
        <translation>同时删除其运行目录 %1</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Export the steps of run %1 as CSV</source>
        <translation>将运行 %1 的各步导出为 CSV</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>CSV files (*.csv)</source>
        <translation>CSV 文件 (*.csv)</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>Cancel run</source>
        <translation>取消运行</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Cancel run “%1” (%2) on %3?</source>
        <translation>取消 %3 上的运行“%1”（%2）？</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Every process of the run is stopped (SIGTERM, then SIGKILL after the grace period). Its stored steps stay; it can be resumed from its last checkpoint.</source>
        <translation>该运行的每个进程都会被停止（SIGTERM，宽限期后 SIGKILL）。已保存的步会保留；可以从最后一个检查点恢复。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Cancel the run</source>
        <translation>取消运行</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Keep it running</source>
        <translation>继续运行</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Cancelling run %1…</source>
        <translation>正在取消运行 %1…</translation>
    </message>
    <message>
        <location line="-350"/>
        <source>&amp;Launch run…</source>
        <translation>启动运行(&amp;L)…</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Start a run from a config, here or on an SSH host</source>
        <translation>根据配置启动运行，在本机或 SSH 主机上</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>&amp;Import Megatron-Bridge run…</source>
        <translation>导入 Megatron-Bridge 运行(&amp;I)…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Bring a finished Megatron-Bridge job (its log and config) into the run store</source>
        <translation>把一个已完成的 Megatron-Bridge 作业（其日志和配置）导入运行库</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>SSH &amp;hosts…</source>
        <translation>SSH 主机(&amp;H)…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Register, edit and test the SSH hosts runs can be launched on</source>
        <translation>注册、编辑和测试可用于启动运行的 SSH 主机</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>&amp;Refresh</source>
        <translation>刷新(&amp;R)</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>&amp;About</source>
        <translation>关于(&amp;A)</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>About MoE-VLM Workbench</source>
        <translation>关于 MoE-VLM 工作台</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>&lt;b&gt;MoE-VLM Workbench&lt;/b&gt; %1&lt;br&gt;Plan, launch, watch and compare Mixture-of-Experts vision-language training runs.</source>
        <translation>&lt;b&gt;MoE-VLM 工作台&lt;/b&gt; %1&lt;br&gt;规划、启动、监视和比较混合专家（MoE）视觉语言模型的训练运行。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Runs</source>
        <translation>运行</translation>
    </message>
    <message>
        <location line="+156"/>
        <source>Run %1 started; streaming its metrics.</source>
        <translation>运行 %1 已启动；正在接收其指标。</translation>
    </message>
    <message>
        <location line="-75"/>
        <source>Importing %1…</source>
        <translation>正在导入 %1…</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>&amp;Run</source>
        <translation>运行(&amp;R)</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Co&amp;mpare runs…</source>
        <translation>比较运行(&amp;M)…</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>&amp;Plan a training run…</source>
        <translation>规划训练运行(&amp;P)…</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Re&amp;mote</source>
        <translation>远程(&amp;M)</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>Opening the run store…</source>
        <translation>正在打开运行存储…</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Store: %1</source>
        <translation>存储：%1</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>No target</source>
        <translation>无目标</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Target: %1</source>
        <translation>目标：%1</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Ready.</source>
        <translation>就绪。</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Connection to %1 lost; reconnecting (attempt %2)…</source>
        <translation>与 %1 的连接已断开；正在重新连接（第 %2 次尝试）…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Connection to %1 is back.</source>
        <translation>与 %1 的连接已恢复。</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>Run %1 ended: %2 (exit code %3).</source>
        <translation>运行 %1 已结束：%2（退出码 %3）。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Run %1: %2: %3</source>
        <translation>运行 %1：%2：%3</translation>
    </message>
    <message>
        <location line="+3"/>
        <location line="+2"/>
        <source>Imported run %1.</source>
        <translation>已导入运行 %1。</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Run imported</source>
        <translation>运行已导入</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Its steps are in the charts; compare it with other runs under Run → Compare runs.</source>
        <translation>它的步已显示在图表中；可在 运行 → 比较运行 中与其他运行比较。</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Cannot import the run</source>
        <translation>无法导入运行</translation>
    </message>
    <message>
        <location line="-28"/>
        <source>Cannot start the run</source>
        <translation>无法启动运行</translation>
    </message>
    <message>
        <location line="+51"/>
        <source>Starting %1…</source>
        <translation>正在启动 %1…</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Cannot start the sample run</source>
        <translation>无法启动示例运行</translation>
    </message>
</context>
<context>
    <name>wb::ui::MetricChartView</name>
    <message>
        <location filename="../../ui/metric_chart_view.cpp" line="+162"/>
        <source>Step</source>
        <translation>步</translation>
    </message>
</context>
<context>
    <name>wb::ui::PlanConfigPreview</name>
    <message>
        <location filename="../../ui/plan_config_preview.cpp" line="+25"/>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Save…</source>
        <translation>保存…</translation>
    </message>
    <message>
        <location line="+48"/>
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
    <message>
        <location line="+23"/>
        <source>What generate --format runtime writes beside run.json: moe-train&apos;s predicted step time and memory for this layout (a launch stores it with the run). The table predicts Megatron-Bridge; generate --format megatron-bridge writes that prediction beside its files.</source>
        <translation>generate --format runtime 在 run.json 旁写出的内容：moe-train 对此布局预测的步时与显存（启动时随运行一起保存）。表格中的预测针对 Megatron-Bridge；generate --format megatron-bridge 会把该预测写在其文件旁。</translation>
    </message>
    <message>
        <location line="+29"/>
        <source>Copied %1 to the clipboard.</source>
        <translation>已将 %1 复制到剪贴板。</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Save %1</source>
        <translation>保存 %1</translation>
    </message>
    <message>
        <location line="+13"/>
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
        <location filename="../../ui/plan_guide_panel.cpp" line="+39"/>
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
        <source>Throughput will be measured on mock data</source>
        <translation>吞吐量将在模拟数据上测量</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The layouts are ranked for what a mock-data run trains (Megatron-Bridge: one 256×256 noise image per sample, padded, router force-balanced; moe-train: text only), and the summary says how much slower layout 0 is predicted on the real workload, term by term.</source>
        <translation>布局按模拟数据运行实际训练的内容排序（Megatron-Bridge：每个样本一张 256×256 噪声图像、补齐、路由器强制均衡；moe-train：仅文本），摘要逐项说明布局 0 在真实工作负载上预计慢多少。</translation>
    </message>
    <message>
        <location line="+3"/>
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
        <location line="+47"/>
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
        <source>3D needs: %1</source>
        <translation>3D 还需要：%1</translation>
    </message>
    <message>
        <location line="+9"/>
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
        <location line="+92"/>
        <source>Most-loaded rank %1 GiB, every term modelled (none calibrated from runs):</source>
        <translation>负载最重的 rank %1 GiB，每一项均为模型估算（均未经运行校准）：</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>FSDP-first family</source>
        <translation>FSDP 优先系列</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>3D-parallel family</source>
        <translation>3D 并行系列</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>FSDP with TP/CP (neither guide family)</source>
        <translation>带 TP/CP 的 FSDP（不属于指南的任一系列）</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Guide knobs applied: %1</source>
        <translation>已应用的指南调优项：%1</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Step %1 ms: %2</source>
        <translation>步 %1 ms：%2</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>The layout&apos;s number, as `moe-workbench-cli plan` prints it and `generate --layout N` takes it (0 = the best)</source>
        <translation>布局编号，与 `moe-workbench-cli plan` 打印的和 `generate --layout N` 接受的一致（0 = 最佳）</translation>
    </message>
    <message>
        <location line="+4"/>
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
        <location filename="../../ui/planning_view.cpp" line="+68"/>
        <source>Plan a training run</source>
        <translation>规划训练运行</translation>
    </message>
    <message>
        <location line="+40"/>
        <location line="+616"/>
        <source>Cannot load the model and hardware catalog: %1</source>
        <translation>无法加载模型和硬件目录：%1</translation>
    </message>
    <message>
        <location line="-598"/>
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
        <source>bf16 Adam moments (precision-aware optimizer)</source>
        <translation>bf16 Adam 动量（精度感知优化器）</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Store Adam&apos;s two moments in bf16 (math stays fp32): 8 instead of 12 optimizer bytes per parameter. The generated configs carry it (Megatron&apos;s use_precision_aware_optimizer, which needs the distributed optimizer; moe-train&apos;s train.exp_avg_dtype / exp_avg_sq_dtype).</source>
        <translation>以 bf16 保存 Adam 的两个动量（计算仍为 fp32）：每个参数的优化器状态从 12 字节降到 8 字节。生成的配置会带上此项（Megatron 的 use_precision_aware_optimizer，需要分布式优化器；moe-train 的 train.exp_avg_dtype / exp_avg_sq_dtype）。</translation>
    </message>
    <message>
        <location line="+4"/>
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
    <message>
        <location line="+3"/>
        <source>Cancel search</source>
        <translation>取消搜索</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Open plan…</source>
        <translation>打开计划…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Open a plan saved here or written by `moe-workbench-cli plan --json`: its inputs and answers fill this form and it is planned again.</source>
        <translation>打开在此保存的或由 `moe-workbench-cli plan --json` 写出的计划：其输入和回答填入此表单，并重新规划。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Save plan…</source>
        <translation>保存计划…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Save the inputs, the guide&apos;s answers and the ranked layouts as a plan file (the `plan --json` format: `generate --from` takes it).</source>
        <translation>将输入、指南的回答和排好序的布局保存为计划文件（`plan --json` 格式：`generate --from` 可直接使用）。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Open a plan</source>
        <translation>打开计划</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Plans (*.json);;All files (*)</source>
        <translation>计划 (*.json);;所有文件 (*)</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Save the plan</source>
        <translation>保存计划</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Plans (*.json)</source>
        <translation>计划 (*.json)</translation>
    </message>
    <message numerus="yes">
        <location line="+6"/>
        <source>= %n GPU(s)</source>
        <translation>
            <numerusform>= %n 个 GPU</numerusform>
        </translation>
    </message>
    <message>
        <location line="+24"/>
        <source>Choose a model and a cluster, answer the guide&apos;s questions, then press Plan.</source>
        <translation>选择模型和集群，回答指南中的问题，然后点击“规划”。</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>Memory bar:</source>
        <translation>内存条：</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>(width = the GPU&apos;s HBM; dashed: the headroom limit)</source>
        <translation>（宽度 = GPU 的 HBM；虚线：预留余量上限）</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Lint findings for the selected layout</source>
        <translation>所选布局的检查结果</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Launch…</source>
        <translation>启动…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Launch the selected layout as a run; its predicted step time and memory are stored with the run for comparison.</source>
        <translation>将所选布局作为一次运行启动；其预测的步耗时和内存会随运行一起保存，便于比较。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Predict a file…</source>
        <translation>预测文件…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Predict a layout you already have — a runtime config, a Megatron-Bridge YAML or dotlist, or a perf launcher command — on the hardware and GPUs chosen here where the file does not name them: memory by term, step time by term with how sure each term is, and the lint findings.</source>
        <translation>预测一个已有的布局——运行时配置、Megatron-Bridge YAML 或 dotlist、或 perf 启动命令——文件未指明的硬件和 GPU 取此处所选：按项列出显存、按项列出步耗时及每项的可信程度，以及 lint 结果。</translation>
    </message>
    <message numerus="yes">
        <location line="+119"/>
        <source>Searching layouts for %1 on %n GPU(s)…</source>
        <translation>
            <numerusform>正在为 %1 在 %n 个 GPU 上搜索布局…</numerusform>
        </translation>
    </message>
    <message>
        <location line="+38"/>
        <source>Cancelling the search…</source>
        <translation>正在取消搜索…</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>%1 on %2 × %3, seq %4, GBS %5</source>
        <translation>%1，%2 × %3，seq %4，GBS %5</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Nothing to save yet: press Plan first.</source>
        <translation>还没有可保存的内容：请先按“规划”。</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Cannot save the plan to %1: %2</source>
        <translation>无法将计划保存到 %1：%2</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Saved the plan to %1.</source>
        <translation>已将计划保存到 %1。</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>%1 is not a plan: %2</source>
        <translation>%1 不是计划：%2</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>%1 is for %2 on %3, which the catalog does not have; add it to your catalog folder.</source>
        <translation>%1 针对 %3 上的 %2，目录中没有它；请将其添加到你的目录文件夹。</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Opened %1; planning it again.</source>
        <translation>已打开 %1；正在重新规划。</translation>
    </message>
    <message>
        <location line="+73"/>
        <source>These layouts are for %1; the inputs have changed since. Press Plan for the current inputs.</source>
        <translation>这些布局是为 %1 计算的；输入已更改。请按“规划”以使用当前输入。</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>%1 layouts considered in %2 ms: %3 cannot tile the GPUs (§3), %4 need more memory than the budget, %5 fail lint, %6 fit; %7 ranked below.</source>
        <translation>共考察 %1 个布局，用时 %2 ms：%3 个无法划分 GPU（§3），%4 个超出显存预算，%5 个未通过 lint，%6 个可行；下方列出 %7 个。</translation>
    </message>
    <message>
        <location line="+25"/>
        <source>no layout</source>
        <translation>没有布局</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The file ranked %1 first; the planner now ranks %2 first (it has changed since the file was written).</source>
        <translation>文件中排第一的是 %1；规划器现在排第一的是 %2（文件写出后规划器有所变化）。</translation>
    </message>
    <message>
        <location line="+69"/>
        <source>Predict a layout file</source>
        <translation>预测布局文件</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Layout files (*.json *.yaml *.yml *.sh *.txt);;All files (*)</source>
        <translation>布局文件 (*.json *.yaml *.yml *.sh *.txt);;所有文件 (*)</translation>
    </message>
    <message>
        <location line="+47"/>
        <source>Prediction for %1</source>
        <translation>%1 的预测</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Predicted %1</source>
        <translation>已预测 %1</translation>
    </message>
    <message>
        <location line="-138"/>
        <source>No layout fits: %1</source>
        <translation>没有可用的布局：%1</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>WARNING: planned for MOCK DATA (%1); row 0: %2</source>
        <translation>警告：按模拟数据规划（%1）；第 0 行：%2</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Row 0, mock vs real: %1</source>
        <translation>第 0 行，模拟与真实数据对比：%1</translation>
    </message>
    <message>
        <location line="+38"/>
        <source>No findings: the layout passes every lint rule.</source>
        <translation>无问题：该布局通过所有检查规则。</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>run.json: %1</source>
        <translation>run.json：%1</translation>
    </message>
</context>
<context>
    <name>wb::ui::RunChartsPanel</name>
    <message>
        <location filename="../../ui/run_charts_panel.cpp" line="+122"/>
        <source>Step time</source>
        <translation>步耗时</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Step time (ms)</source>
        <translation>步耗时（ms）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Total</source>
        <translation>总计</translation>
    </message>
    <message>
        <location line="-63"/>
        <location line="+63"/>
        <source>Data wait</source>
        <translation>数据等待</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>Memory per GPU</source>
        <translation>每 GPU 内存</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Memory (GiB)</source>
        <translation>内存（GiB）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Allocated</source>
        <translation>已分配</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Peak</source>
        <translation>峰值</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Reserved</source>
        <translation>已预留</translation>
    </message>
    <message>
        <location line="-5"/>
        <source>Throughput</source>
        <translation>吞吐量</translation>
    </message>
    <message>
        <location line="-78"/>
        <source>Vision</source>
        <translation>视觉编码器</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Projector</source>
        <translation>投影层</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Decoder fwd</source>
        <translation>解码器前向</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Backward</source>
        <translation>反向传播</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Optimizer</source>
        <translation>优化器</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Other</source>
        <translation>其他</translation>
    </message>
    <message>
        <location line="+38"/>
        <source>GPU system</source>
        <translation>GPU 系统</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>% · °C</source>
        <translation>% · °C</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Utilization (mean %)</source>
        <translation>利用率（平均 %）</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Temperature (hottest °C)</source>
        <translation>温度（最高 °C）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>W · MHz</source>
        <translation>W · MHz</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Power (mean W)</source>
        <translation>功率（平均 W）</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>SM clock (slowest MHz)</source>
        <translation>SM 时钟（最低 MHz）</translation>
    </message>
    <message>
        <location line="+18"/>
        <source>Step time split</source>
        <translation>步耗时拆分</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Time (ms)</source>
        <translation>时间（ms）</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Tokens/s/GPU</source>
        <translation>token/s/GPU</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Effective tokens/s/GPU</source>
        <translation>有效 token/s/GPU</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>MFU (%)</source>
        <translation>MFU（%）</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>MFU</source>
        <translation>MFU</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Loss</source>
        <translation>损失</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Training loss</source>
        <translation>训练损失</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Aux loss</source>
        <translation>辅助损失</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Router aux loss</source>
        <translation>路由器辅助损失</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Gradient norm and learning rate</source>
        <translation>梯度范数与学习率</translation>
    </message>
    <message>
        <location line="+0"/>
        <location line="+1"/>
        <source>Gradient norm</source>
        <translation>梯度范数</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Learning rate</source>
        <translation>学习率</translation>
    </message>
    <message>
        <location line="+215"/>
        <source>No time split in this run&apos;s stream
(every part is 0: an older moe-train or another trainer)</source>
        <translation>此运行的指标流中没有时间拆分
（各部分均为 0：较旧的 moe-train 或其他训练器）</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>MFU n/a (no peak FLOP/s known for this device)</source>
        <translation>MFU 不适用（此设备的峰值 FLOP/s 未知）</translation>
    </message>
    <message>
        <location line="+88"/>
        <source>%1
Step time: %2 ms
Data wait: %3 ms</source>
        <translation>%1
步耗时：%2 ms
数据等待：%3 ms</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>n/a (no peak FLOP/s known for this device)</source>
        <translation>不适用（此设备的峰值 FLOP/s 未知）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1
Effective tokens/s/GPU: %2
TFLOP/s/GPU: %3
MFU: %4</source>
        <translation>%1
有效 token/s/GPU：%2
TFLOP/s/GPU：%3
MFU：%4</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>%1
Allocated: %2 GiB
Peak: %3 GiB
Reserved: %4 GiB</source>
        <translation>%1
已分配：%2 GiB
峰值：%3 GiB
已预留：%4 GiB</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>%1
Loss: %2
Router aux loss: %3</source>
        <translation>%1
损失：%2
路由器辅助损失：%3</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>%1
Gradient norm: %2
Learning rate: %3</source>
        <translation>%1
梯度范数：%2
学习率：%3</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Step %1
No time split in this run&apos;s stream</source>
        <translation>第 %1 步
此运行的指标流中没有时间拆分</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>%1: %2 ms</source>
        <translation>%1：%2 ms</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Step time: %1 ms</source>
        <translation>步耗时：%1 ms</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The parts add up to %1 ms, more than the step: each is the max over ranks,
not all from the same rank, so Other is clipped at 0.</source>
        <translation>各部分合计 %1 ms，超过了步耗时：每部分取各 rank 的最大值，
并非来自同一 rank，因此“其他”被截断为 0。</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>&lt;b&gt;No run selected&lt;/b&gt;</source>
        <translation>&lt;b&gt;未选择运行&lt;/b&gt;</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Select a run on the left, or start the sample run (Run ▸ Start sample run).</source>
        <translation>在左侧选择一个运行，或启动示例运行（运行 ▸ 启动示例运行）。</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>waiting for status</source>
        <translation>等待状态</translation>
    </message>
    <message>
        <location line="+36"/>
        <source>data</source>
        <translation>数据</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>vision</source>
        <translation>视觉</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>proj</source>
        <translation>投影</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>decoder</source>
        <translation>解码器</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>backward</source>
        <translation>反向</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>optim</source>
        <translation>优化器</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>time split: %1 ms</source>
        <translation>时间拆分：%1 ms</translation>
    </message>
    <message>
        <location line="-42"/>
        <source>reconnecting (attempt %1)</source>
        <translation>正在重新连接（第 %1 次尝试）</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>connection lost (%1); the run keeps going on the host</source>
        <translation>连接中断（%1）；训练仍在主机上继续运行</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Loading steps…</source>
        <translation>正在加载步数据…</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>No steps yet.</source>
        <translation>还没有步数据。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Step %1 / %2</source>
        <translation>第 %1 / %2 步</translation>
    </message>
    <message>
        <location line="-90"/>
        <location line="+31"/>
        <location line="+60"/>
        <source>Step %1</source>
        <translation>第 %1 步</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>%1 % (%2 TFLOP/s/GPU)</source>
        <translation>%1 %（%2 TFLOP/s/GPU）</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>n/a</source>
        <translation>不适用</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>%1   ·   step time %2 ms   ·   %3 effective tokens/s/GPU   ·   loss %4   ·   peak memory %5 GiB   ·   MFU %6</source>
        <translation>%1   ·   步耗时 %2 ms   ·   有效 token/s/GPU %3   ·   损失 %4   ·   峰值内存 %5 GiB   ·   MFU %6</translation>
    </message>
</context>
<context>
    <name>wb::ui::RunFollowWorker</name>
    <message>
        <location filename="../../ui/run_follow_worker.cpp" line="+36"/>
        <source>%1 failed unexpectedly: %2</source>
        <translation>%1 意外失败：%2</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>%1 failed unexpectedly.</source>
        <translation>%1 意外失败。</translation>
    </message>
    <message>
        <location line="+30"/>
        <source>Opening the run store</source>
        <translation>打开运行存储</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Cannot open the run store: %1</source>
        <translation>无法打开运行存储：%1</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>No run target is configured; runs can be viewed but not started.</source>
        <translation>未配置运行目标；可以查看运行，但不能启动。</translation>
    </message>
    <message>
        <location line="+24"/>
        <source>Closing the run store</source>
        <translation>关闭运行存储</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Listing runs</source>
        <translation>列出运行</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Cannot list runs: %1</source>
        <translation>无法列出运行：%1</translation>
    </message>
    <message>
        <location line="+23"/>
        <source>Starting the run</source>
        <translation>启动运行</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Cannot start a run: the run store is not open.</source>
        <translation>无法启动运行：运行存储未打开。</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>The run configuration is invalid:
%1</source>
        <translation>运行配置无效：
%1</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Cannot start a run: no run target is configured.</source>
        <translation>无法启动运行：未配置运行目标。</translation>
    </message>
    <message>
        <location line="-16"/>
        <location line="+17"/>
        <source>Cannot use target %1: %2</source>
        <translation>无法使用目标 %1：%2</translation>
    </message>
    <message>
        <location line="-21"/>
        <source>A Megatron-Bridge job is submitted with sbatch: choose a slurm:HOST target (a host registered under Remote → SSH hosts, with its Slurm settings).</source>
        <translation>Megatron-Bridge 作业通过 sbatch 提交：请选择 slurm:HOST 目标（在“远程 → SSH 主机”中注册并带有 Slurm 设置的主机）。</translation>
    </message>
    <message>
        <location line="+29"/>
        <source>Cannot start the run on %1:
%2</source>
        <translation>无法在 %1 上启动运行：
%2</translation>
    </message>
    <message>
        <location line="+30"/>
        <source>Cannot submit the Megatron-Bridge job on %1:
%2</source>
        <translation>无法在 %1 上提交 Megatron-Bridge 作业：
%2</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Loading the run&apos;s steps</source>
        <translation>加载运行的步数据</translation>
    </message>
    <message>
        <location line="+5"/>
        <location line="+140"/>
        <source>Cannot read the steps of run %1: %2</source>
        <translation>无法读取运行 %1 的步数据：%2</translation>
    </message>
    <message>
        <location line="-128"/>
        <source>Cancelling the run</source>
        <translation>取消运行</translation>
    </message>
    <message>
        <location line="+5"/>
        <location line="+25"/>
        <source>Cannot cancel run %1: %2</source>
        <translation>无法取消运行 %1：%2</translation>
    </message>
    <message>
        <location line="-19"/>
        <source>Run %1 is a %2 job read from its log; the workbench did not start it. Stop it where it runs (scancel JOBID on its cluster).</source>
        <translation>运行 %1 是从日志读取的 %2 作业；不是工作台启动的。请在其运行处停止它（在其集群上 scancel JOBID）。</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Run %1 cannot be cancelled from here (target %2): %3</source>
        <translation>无法在这里取消运行 %1（目标 %2）：%3</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>it has no run directory</source>
        <translation>它没有运行目录</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Following the run</source>
        <translation>跟踪运行</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Importing the Megatron-Bridge run</source>
        <translation>正在导入 Megatron-Bridge 运行</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The run store is not open.</source>
        <translation>运行库未打开。</translation>
    </message>
    <message>
        <location line="+33"/>
        <source>Renaming the run</source>
        <translation>正在重命名运行</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Cannot rename run %1: %2</source>
        <translation>无法重命名运行 %1：%2</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Renamed run %1 to “%2”.</source>
        <translation>已将运行 %1 重命名为“%2”。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Deleting the run</source>
        <translation>正在删除运行</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Cannot delete run %1: %2</source>
        <translation>无法删除运行 %1：%2</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Deleted run %1 and its run directory %2.</source>
        <translation>已删除运行 %1 及其运行目录 %2。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Deleted run %1.</source>
        <translation>已删除运行 %1。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Deleted run %1 from the store; its run directory stays at %2.</source>
        <translation>已从运行库删除运行 %1；其运行目录仍在 %2。</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Exporting the run&apos;s steps</source>
        <translation>正在导出运行的各步</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Cannot export run %1: %2</source>
        <translation>无法导出运行 %1：%2</translation>
    </message>
    <message numerus="yes">
        <location line="+3"/>
        <source>Exported %n step(s) of run %1 to %2.</source>
        <translation>
            <numerusform>已将运行 %1 的 %n 步导出到 %2。</numerusform>
        </translation>
    </message>
    <message>
        <location line="+20"/>
        <source>Cannot follow run %1: %2</source>
        <translation>无法跟踪运行 %1：%2</translation>
    </message>
    <message>
        <location line="+39"/>
        <source>this session only reaches %1</source>
        <translation>此会话只能访问 %1</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>no target</source>
        <translation>无目标</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Cannot reach target %1: %2</source>
        <translation>无法访问目标 %1：%2</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>Polling runs</source>
        <translation>轮询运行</translation>
    </message>
    <message>
        <location line="+22"/>
        <source>Run %1: %2</source>
        <translation>运行 %1：%2</translation>
    </message>
</context>
<context>
    <name>wb::ui::RunListModel</name>
    <message>
        <location filename="../../ui/run_list_model.cpp" line="+48"/>
        <source>reconnecting (attempt %1)</source>
        <translation>正在重新连接（第 %1 次尝试）</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>%1 (exit %2)</source>
        <translation>%1（退出码 %2）</translation>
    </message>
    <message>
        <location line="+18"/>
        <source>Run %1 on %2
Run directory: %3</source>
        <translation>运行 %1，位于 %2
运行目录：%3</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>
Status: %1</source>
        <translation>
状态：%1</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>
Connection lost (%1); reconnecting. The run keeps going on the host; no metrics are lost.</source>
        <translation>
连接已断开（%1）；正在重新连接。运行在主机上继续进行；不会丢失任何指标。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>
Data: %1</source>
        <translation>
数据：%1</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>
Malformed metric lines skipped: %1</source>
        <translation>
已跳过的格式错误指标行：%1</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>Run ID</source>
        <translation>运行 ID</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Target</source>
        <translation>目标</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Steps</source>
        <translation>步数</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Last loss</source>
        <translation>最新损失</translation>
    </message>
</context>
<context>
    <name>wb::ui::RunListPanel</name>
    <message>
        <location filename="../../ui/run_list_panel.cpp" line="+60"/>
        <source>&lt;b&gt;Runs&lt;/b&gt;</source>
        <translation>&lt;b&gt;运行&lt;/b&gt;</translation>
    </message>
    <message numerus="yes">
        <location line="+37"/>
        <source>&lt;b&gt;Runs&lt;/b&gt; &amp;nbsp;&lt;span style=&apos;color:gray&apos;&gt;%n in the store&lt;/span&gt;</source>
        <translation>
            <numerusform>&lt;b&gt;运行&lt;/b&gt; &amp;nbsp;&lt;span style=&apos;color:gray&apos;&gt;存储中共 %n 个&lt;/span&gt;</numerusform>
        </translation>
    </message>
    <message>
        <location line="+47"/>
        <source>&amp;Rename…</source>
        <translation>重命名(&amp;R)…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>&amp;Delete… (cancel the run first)</source>
        <translation>删除(&amp;D)…（请先取消运行）</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>&amp;Delete…</source>
        <translation>删除(&amp;D)…</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>&amp;Export steps as CSV…</source>
        <translation>将各步导出为 CSV(&amp;E)…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>&amp;Copy run id</source>
        <translation>复制运行 ID(&amp;C)</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>&amp;Open run directory</source>
        <translation>打开运行目录(&amp;O)</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>The run directory is on %1</source>
        <translation>运行目录在 %1 上</translation>
    </message>
    <message>
        <location line="+34"/>
        <source>No runs yet. Start one with &lt;b&gt;Start sample run&lt;/b&gt; in the toolbar.</source>
        <translation>还没有运行。用工具栏中的&lt;b&gt;启动示例运行&lt;/b&gt;启动一个。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Select a run to see its charts.</source>
        <translation>选择一个运行以查看其图表。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>&lt;b&gt;%1&lt;/b&gt; (%2)&lt;br&gt;Status: &lt;b&gt;%3&lt;/b&gt;%4&lt;br&gt;Steps: %5%6&lt;br&gt;Started: %8 on %9&lt;br&gt;Run directory: %7</source>
        <translation>&lt;b&gt;%1&lt;/b&gt;（%2）&lt;br&gt;状态：&lt;b&gt;%3&lt;/b&gt;%4&lt;br&gt;步数：%5%6&lt;br&gt;启动：%8，位于 %9&lt;br&gt;运行目录：%7</translation>
    </message>
    <message>
        <location line="+9"/>
        <source> of %1</source>
        <translation> / %1</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>&lt;br&gt;Data: %1</source>
        <translation>&lt;br&gt;数据：%1</translation>
    </message>
</context>
<context>
    <name>wb::ui::RunStatus</name>
    <message>
        <location filename="../../ui/run_status_style.cpp" line="+30"/>
        <source>pending</source>
        <translation>等待中</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>finished</source>
        <translation>已完成</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>oom</source>
        <translation>内存不足</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>comm_error</source>
        <translation>通信错误</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>bad_config</source>
        <translation>配置错误</translation>
    </message>
</context>
<context>
    <name>wb::ui::SampleRunLauncher</name>
    <message>
        <location filename="../../ui/sample_run_launcher.cpp" line="+49"/>
        <source>The sample image set is still being built…</source>
        <translation>示例图像集仍在构建中…</translation>
    </message>
    <message>
        <location line="+25"/>
        <source>The sample image set is missing (%1) and the tool that builds it was not found at %2. Build the runtime (cmake -DWB_BUILD_RUNTIME=ON) so moe-sample-set sits beside moe-workbench, or run it yourself: moe-sample-set --from %3 --out %4</source>
        <translation>缺少示例图像集（%1），并且在 %2 找不到构建它的工具。请构建运行时（cmake -DWB_BUILD_RUNTIME=ON），使 moe-sample-set 与 moe-workbench 位于同一目录，或自行运行：moe-sample-set --from %3 --out %4</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Cannot create the sample folder %1; check its permissions.</source>
        <translation>无法创建示例文件夹 %1；请检查其权限。</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Building the sample image set: %1</source>
        <translation>正在构建示例图像集：%1</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Building the sample image set in %1 (first run only)…</source>
        <translation>正在 %1 中构建示例图像集（仅首次运行）…</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Building the sample image set failed (%1). Output:
%2</source>
        <translation>构建示例图像集失败（%1）。输出：
%2</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>exit code %1</source>
        <translation>退出码 %1</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Sample image set ready: %1</source>
        <translation>示例图像集已就绪：%1</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>The embedded sample configuration %1 is missing from this build.</source>
        <translation>此构建中缺少内嵌的示例配置 %1。</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>The sample configuration %1 is invalid:
%2</source>
        <translation>示例配置 %1 无效：
%2</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>The sample configuration is invalid after setting its data:
%1</source>
        <translation>设置数据后，示例配置无效：
%1</translation>
    </message>
</context>
</TS>
