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
};

QTEST_GUILESS_MAIN(TestModelFlops)
#include "test_model_flops.moc"
