#!/bin/bash
# A MoE model at TP 2 with the default bias: expert tensor parallelism follows TP (arguments.py:569), and
# TransformerConfig allows bias in MoE layers only at ETP 1.
# args: --gpu b200
# expect: LM106
# quote: LM106 Bias in Moe is only supported when ETP==1
# absent: LM701 DP313
# exit: 1
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 \
    --tensor-model-parallel-size 2 --sequence-parallel --num-experts 8 --expert-model-parallel-size 4
