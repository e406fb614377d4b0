// Model FLOPs against hand-computed values and the published anchors in libtorch-and-gpu.md.
#include "core/model_flops.h"

#include <QtTest/QtTest>

using namespace wb::core;

class TestModelFlops : public QObject {
    Q_OBJECT
private slots:
    void tinyDecoderByHand()
    {
        DecoderConfig d;
        d.numLayers = 1;
        d.hiddenSize = 4;
        d.numAttentionHeads = 2;
        d.numQueryGroups = 1;
        d.kvChannels = 2;
        d.numMoeExperts = 4;
        d.moeRouterTopk = 2;
        d.moeFfnHiddenSize = 8;
        d.vocabSize = 10;
        // per token: experts 3*2*4*(3*8*2*1) = 1152; projections 1*3*2*(4*(4+4) + 4*4) = 288;
        // logits 3*2*4*10 = 240 → 1680 per token; 3 tokens = 5040; attention 9*1*3*2*4 = 216.
        QCOMPARE(decoderFlops(d, {3}), 5040.0 + 216.0);
        // two sequences of 3: tokens double, attention is per sequence (block-diagonal)
        QCOMPARE(decoderFlops(d, {3, 3}), 2 * (5040.0 + 216.0));
    }

    void qwen3VlAnchors()
    {
        // Qwen3-VL-30B-A3B decoder ≈ 6.1 GFLOP per token forward (reference), so ×3 for fwd+bwd,
        // excluding the s² attention term (take a 1-token sequence).
        DecoderConfig d;
        d.numLayers = 48;
        d.hiddenSize = 2048;
        d.numAttentionHeads = 32;
        d.numQueryGroups = 4;
        d.kvChannels = 128;
        d.numMoeExperts = 128;
        d.moeRouterTopk = 8;
        d.moeFfnHiddenSize = 768;
        d.vocabSize = 151936;
        const double perTokenForward = decoderFlops(d, {1}) / 3.0;
        QVERIFY2(perTokenForward > 5.5e9 && perTokenForward < 6.5e9, qPrintable(QString::number(perTokenForward)));

        // Vision encoder at 448×448 ≈ 0.74 TFLOP forward per image (784 patches of 16 px).
        VisionConfig v;
        v.numLayers = 27;
        v.hiddenSize = 1152;
        v.ffnHiddenSize = 4304;
        v.numAttentionHeads = 16;
        v.patchSize = 16;
        v.spatialMergeSize = 2;
        const double forward = visionFlops(v, 2048, 28 * 28) / 3.0;
        QVERIFY2(forward > 0.65e12 && forward < 0.85e12, qPrintable(QString::number(forward)));
        QCOMPARE(visionFlops(v, 2048, 0), 0.0);
    }

    void hybridDecoderAsMegatronCounts()
    {
        // Qwen3.5-35B-A3B (gated DeltaNet 3:1, gated attention, shared expert, one MTP layer).
        // Megatron-LM's training.py transformer_flops counts the MTP layer as a 41st MoE layer and
        // runs the linear-attention pattern over all 41: layers 3, 7, ..., 39 softmax (10), the
        // other 31 gated DeltaNet. Per token, ×3·2:
        //   experts  2048·(512·8·3 + 512·3)·41          routed + shared
        //   softmax  10·(2048·(4096 + 512 + 512 + 4096) + 4096·2048)   q, k, v, gate; out
        //   GDN      31·(2048·12352 + 4·8192 + 32·128²·4 + 2048·4096)  in_proj, conv, delta rule, out_proj
        //   MTP      3·2048 + 2·2048²;  logits 2048·248320·2
        // = 21,415,170,048 per token, plus the core attention's 10·6·4096 = 245,760 per s² (causal:
        // q/2 · 2). Summed with the formula verbatim: 21,415,415,808 for one token, 9.1839705120768e13
        // for one 4096-token sequence.
        DecoderConfig d;
        d.numLayers = 40;
        d.hiddenSize = 2048;
        d.numAttentionHeads = 16;
        d.numQueryGroups = 2;
        d.kvChannels = 256;
        d.numMoeExperts = 256;
        d.moeRouterTopk = 8;
        d.moeFfnHiddenSize = 512;
        d.vocabSize = 248320;
        d.attentionOutputGate = true;
        d.linearAttentionFreq = 4;
        d.linearNumKeyHeads = 16;
        d.linearNumValueHeads = 32;
        d.linearKeyHeadDim = 128;
        d.linearValueHeadDim = 128;
        d.linearConvKernelDim = 4;
        d.moeSharedExpertFfnHiddenSize = 512;
        d.mtpNumLayers = 1;
        QCOMPARE(d.linearAttentionLayers(41), 31);
        QCOMPARE(decoderFlops(d, {1}), 21415415808.0);
        QCOMPARE(decoderFlops(d, {4096}), 91839705120768.0);
        // The delta rule and the conv are the part that is not GEMMs: 31 layers × 6 × (32768 + 2097152).
        QCOMPARE(linearAttentionCoreFlops(d), 31.0 * 6.0 * (4.0 * 8192.0 + 32.0 * 128.0 * 128.0 * 4.0));
        // Without the hybrid fields it is the plain decoder again.
        DecoderConfig plain = d;
        plain.attentionOutputGate = false;
        plain.linearAttentionFreq = 0;
        plain.moeSharedExpertFfnHiddenSize = 0;
        plain.mtpNumLayers = 0;
        QCOMPARE(linearAttentionCoreFlops(plain), 0.0);
        QCOMPARE(decoderFlops(plain, {1}), 6.0 * (2048.0 * 512 * 8 * 3 * 40 + 40 * (2048.0 * (4096 + 1024) + 4096.0 * 2048) +
                                                  2048.0 * 248320) + 6.0 * 4096 * 40);
    }
};

QTEST_GUILESS_MAIN(TestModelFlops)
#include "test_model_flops.moc"
